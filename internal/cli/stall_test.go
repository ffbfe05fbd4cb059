package cli

import (
	"sync"
	"time"
)

// A timing test through `handset serve` shares the machine with everything else on it.
// stallWatch measures how late this process's goroutines are woken while it runs, so such
// a test can tell "Handset was slow" from "the machine stopped running us": a run during
// which the process went unscheduled for tens of milliseconds measured the machine.

// stallTick is how often the watch wakes; the lateness of each wake-up is the stall.
const stallTick = 5 * time.Millisecond

// stallWatch records the worst wake-up lateness since it started.
type stallWatch struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	// worst is the longest a wake-up came after it was due.
	worst time.Duration
}

func watchStalls() *stallWatch {
	w := &stallWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		timer := time.NewTimer(stallTick)
		defer timer.Stop()
		due := time.Now().Add(stallTick)
		for {
			select {
			case <-w.stop:
				return
			case <-timer.C:
				if late := time.Since(due); late > 0 {
					w.mu.Lock()
					w.worst = max(w.worst, late)
					w.mu.Unlock()
				}
				due = time.Now().Add(stallTick)
				timer.Reset(stallTick)
			}
		}
	}()
	return w
}

// Stop ends the watch and returns the worst stall it saw.
func (w *stallWatch) Stop() time.Duration {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.worst
}
