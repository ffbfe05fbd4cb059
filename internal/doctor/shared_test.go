package doctor

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSharedComputesOnceForEveryCaller(t *testing.T) {
	var o Shared[int]
	var calls atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			v, err := o.Get(context.Background(), func(context.Context) (int, error) { return int(calls.Add(1)), nil })
			if v != 1 || err != nil {
				t.Errorf("Get = %d, %v; want the first computation's 1", v, err)
			}
		})
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("computed %d times", n)
	}
}

func TestSharedWaiterGivesUpWithItsContext(t *testing.T) {
	var o Shared[int]
	started, finish := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = o.Get(context.Background(), func(context.Context) (int, error) {
			close(started)
			<-finish
			return 1, nil
		})
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := o.Get(ctx, func(context.Context) (int, error) { return 2, nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a waiter whose context ended got %v", err)
	}
	close(finish)
	if v, err := o.Get(context.Background(), func(context.Context) (int, error) { return 3, nil }); v != 1 || err != nil {
		t.Errorf("after the computation: %d, %v; want its 1", v, err)
	}
}
