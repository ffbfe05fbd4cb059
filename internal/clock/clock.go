// Package clock owns time as the call engine sees it: a Clock interface with the real
// wall clock and a Fake that tests advance by hand, so no test waits on a sleep.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and schedules callbacks. Implementations are safe for concurrent use.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless stopped first.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTimer returns a timer whose channel receives once d has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer from a Clock.
type Timer interface {
	// C is nil for timers made by AfterFunc.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was still pending.
	Stop() bool
	// Reset re-arms the timer to fire after d.
	Reset(d time.Duration) bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now.
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{t: time.AfterFunc(d, f)} }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{t: time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time        { return r.t.C }
func (r realTimer) Stop() bool                 { return r.t.Stop() }
func (r realTimer) Reset(d time.Duration) bool { return r.t.Reset(d) }

// Fake is a manual clock for tests: time moves only when Advance or Set is called, and
// timers due by then fire in deadline order.
type Fake struct {
	mu     sync.Mutex // guards following
	now    time.Time
	timers []*fakeTimer
}

// NewFake returns a fake clock reading start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// AfterFunc schedules fn for when the fake time reaches now+d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	return f.add(d, fn, nil)
}

// NewTimer returns a timer that delivers on its channel at now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	return f.add(d, nil, make(chan time.Time, 1))
}

func (f *Fake) add(d time.Duration, fn func(), ch chan time.Time) *fakeTimer {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := &fakeTimer{clock: f, fn: fn, ch: ch, at: f.now.Add(d), pending: true}
	f.timers = append(f.timers, t)
	return t
}

// Advance moves time forward by d, firing every timer that falls due, in order.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	target := f.now.Add(d)
	f.mu.Unlock()
	f.Set(target)
}

// Set moves time forward to t, firing every timer that falls due, in order.
func (f *Fake) Set(t time.Time) {
	for {
		f.mu.Lock()
		var next *fakeTimer
		for _, ft := range f.timers {
			if ft.pending && !ft.at.After(t) && (next == nil || ft.at.Before(next.at)) {
				next = ft
			}
		}
		if next == nil {
			if t.After(f.now) {
				f.now = t
			}
			f.mu.Unlock()
			return
		}
		next.pending = false
		if next.at.After(f.now) {
			f.now = next.at
		}
		now := f.now
		f.mu.Unlock()
		if next.fn != nil {
			next.fn() // synchronous, so a test sees its effect as soon as Advance returns
		} else {
			select {
			case next.ch <- now:
			default:
			}
		}
	}
}

// Pending reports how many timers have not yet fired or been stopped.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, t := range f.timers {
		if t.pending {
			n++
		}
	}
	return n
}

type fakeTimer struct {
	clock   *Fake
	fn      func()
	ch      chan time.Time
	at      time.Time
	pending bool // guarded by clock.mu
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.pending
	t.pending = false
	return was
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.pending
	t.at = t.clock.now.Add(d)
	t.pending = true
	return was
}
