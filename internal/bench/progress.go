package bench

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// progress prints a status line every second while the bench runs.
type progress struct {
	mu     sync.Mutex
	label  string
	cancel context.CancelFunc
	done   chan struct{}
}

func (o *Options) startProgress(ctx context.Context, t *tally, sc scraper) *progress {
	p := &progress{label: "ramping", done: make(chan struct{})}
	if o.Progress == nil {
		close(p.done)
		p.cancel = func() {}
		return p
	}
	ctx, p.cancel = context.WithCancel(ctx)
	began := time.Now()
	go func() {
		defer close(p.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		var last sample
		for {
			select {
			case <-ctx.Done():
				fmt.Fprintln(o.Progress)
				return
			case <-tick.C:
			}
			s, err := sc.sample(ctx)
			cpu := "?"
			if err == nil && !last.at.IsZero() {
				cpu = fmt.Sprintf("%.0f%%", 100*(s.cpu-last.cpu)/s.at.Sub(last.at).Seconds())
			}
			last = s
			p.mu.Lock()
			label := p.label
			p.mu.Unlock()
			fmt.Fprintf(o.Progress, "\r%5.0fs %-10s calls %d/%d live %d · turns %d · errors %d · handset %s CPU, %.0f MB resident   ",
				time.Since(began).Seconds(), label, t.started.Load(), o.Calls, t.live.Load(), t.turns.Load(),
				t.dialFailed.Load()+t.droppedCalls.Load()+t.turnsLost.Load(), cpu, s.rss/1e6)
		}
	}()
	return p
}

func (p *progress) phase(label string) {
	p.mu.Lock()
	p.label = label
	p.mu.Unlock()
}

func (p *progress) stop() {
	p.cancel()
	<-p.done
}
