package doctor

import (
	"context"
	"sync"
)

// Once computes a value once, for the checks that share one probe (a key check and a model
// check reading the same answer). The zero value is ready to use.
type Once[T any] struct {
	init sync.Once
	sem  chan struct{} // size 1: one computation at a time
	done bool
	v    T
	err  error
}

// Get returns the value, computing it with f the first time. A caller waiting for another
// one's computation gives up when its own ctx ends.
func (o *Once[T]) Get(ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	o.init.Do(func() { o.sem = make(chan struct{}, 1) })
	select {
	case o.sem <- struct{}{}:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	defer func() { <-o.sem }()
	if !o.done {
		o.v, o.err = f(ctx)
		o.done = true
	}
	return o.v, o.err
}
