package doctor

import (
	"context"
	"sync"
)

// Shared is a value several checks need from one probe (an account lookup, say): the
// first to ask computes it, the others wait for that answer. The zero value is ready.
type Shared[T any] struct {
	init sync.Once
	sem  chan struct{} // size 1: one computation at a time
	done bool
	v    T
	err  error
}

// Get returns the value, computing it with f the first time. A caller waiting for another
// one's computation gives up when its own ctx ends.
func (s *Shared[T]) Get(ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	s.init.Do(func() { s.sem = make(chan struct{}, 1) })
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	defer func() { <-s.sem }()
	if !s.done {
		s.v, s.err = f(ctx)
		s.done = true
	}
	return s.v, s.err
}
