package media

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/pace"
	"github.com/handset-voice/handset/internal/clock"
)

// Ticker drives the send clocks of many sessions from a few goroutines. A goroutine of
// its own per call, woken every 20 ms, costs a timer, a select and a switch of the
// scheduler per packet: at hundreds of calls, more than a tenth of the CPU. A Ticker
// has a few beats instead, each a goroutine that wakes every 20 ms and ticks every
// session it carries in turn. Beat i ticks i·20ms/n after the others' phase, so the
// beats' bursts of sends never coincide, and a new session joins the beat carrying the
// fewest.
//
// A session keeps its own numbering, queue and jitter buffer; only the moment of its
// tick is shared. Its first tick comes at its beat's next one, within 20 ms of Start.
//
// A beat's goroutine waits in the scheduler's queue like any other: on a busy core,
// behind hundreds of calls' goroutines, tens of milliseconds late. So goroutines that
// run anyway call Poll, which runs a beat that is due on the caller's goroutine: the
// sessions' readers after every packet, and each call's loop after each frame it takes
// (Session.KeepTime). The beat's own goroutine stays the schedule's guarantee when
// nothing else runs, and it runs any other beat that is due after its own.
type Ticker struct {
	clk   clock.Clock
	beats []*beat

	mu    sync.Mutex
	epoch time.Time // the first join: beat i ticks at epoch + i·20ms/n + k·20ms
}

// NewTicker returns a Ticker with beats goroutines' worth of phases (at least one) on
// clk (nil is the wall clock). Beats start on their first session and stop when their
// last one leaves, so an idle Ticker holds no goroutine.
func NewTicker(clk clock.Clock, beats int) *Ticker {
	if clk == nil {
		clk = clock.Real{}
	}
	t := &Ticker{clk: clk}
	for i := range max(beats, 1) {
		t.beats = append(t.beats, &beat{
			t:      t,
			offset: time.Duration(i) * audio.FrameDuration / time.Duration(max(beats, 1)),
			poke:   make(chan struct{}, 1),
		})
	}
	return t
}

// join adds s to the least loaded beat, or closes s.loopDone at once when s is closed.
func (t *Ticker) join(s *Session) {
	now := t.clk.Now()
	t.mu.Lock()
	if t.epoch.IsZero() {
		t.epoch = now
	}
	epoch := t.epoch
	least := t.beats[0]
	for _, b := range t.beats[1:] {
		if b.load() < least.load() {
			least = b
		}
	}
	t.mu.Unlock()
	least.join(s, now, epoch)
}

// beat is one goroutine's share of a Ticker's sessions, ticked together.
type beat struct {
	t      *Ticker
	offset time.Duration
	poke   chan struct{} // a member closed: drop it now, not on the next tick
	due    atomic.Int64  // when the next frame is due (Unix ns); 0 while idle

	mu       sync.Mutex // guards the following; held over a pass, so a session never leaves mid-tick
	sessions []*Session
	running  bool
	pacer    *pace.Pacer
}

func (b *beat) load() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.sessions)
}

// join adds s, starting the beat's goroutine when it was idle: its schedule then starts
// at the first of its phases at or after now.
func (b *beat) join(s *Session, now, epoch time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.beat = b
	}
	s.mu.Unlock()
	if closed {
		close(s.loopDone)
		return
	}
	b.sessions = append(b.sessions, s)
	if b.running {
		return
	}
	b.running = true
	b.pacer = pace.New(nextPhase(now, epoch.Add(b.offset)), audio.FrameDuration, 0)
	b.due.Store(b.pacer.Next().UnixNano())
	go b.loop()
}

// nextPhase is the first time at or after now that is a whole number of frames after
// phase (phase itself when now is before it).
func nextPhase(now, phase time.Time) time.Time {
	since := now.Sub(phase)
	if since <= 0 {
		return phase
	}
	frames := (since + audio.FrameDuration - 1) / audio.FrameDuration
	return phase.Add(frames * audio.FrameDuration)
}

// wake asks the loop for a pass now (a member closed); it never blocks.
func (b *beat) wake() {
	select {
	case b.poke <- struct{}{}:
	default:
	}
}

// Poll runs every beat now due that no one else is running, on the caller's goroutine,
// which must hold no session's lock. It costs a clock read and an atomic load per beat
// when nothing is due.
func (t *Ticker) Poll() {
	now := t.clk.Now()
	for _, b := range t.beats {
		if due := b.due.Load(); due != 0 && now.UnixNano() >= due && b.mu.TryLock() {
			b.pass(now, false)
			b.mu.Unlock()
		}
	}
}

// loop ticks the beat's sessions every 20 ms until none is left.
func (b *beat) loop() {
	timer := b.t.clk.NewTimer(time.Hour)
	defer timer.Stop()
	poked := true
	var hooks []func() // the members' armed hooks, called once the timer is set (tests)
	for {
		b.mu.Lock()
		next, more := b.pass(b.t.clk.Now(), poked)
		if !more {
			b.running = false
			b.due.Store(0)
		}
		hooks = hooks[:0]
		for _, s := range b.sessions {
			if s.armed != nil {
				hooks = append(hooks, s.armed)
			}
		}
		b.mu.Unlock()
		if !more {
			return
		}
		b.t.Poll() // any other beat a busy scheduler has kept waiting
		timer.Reset(max(0, next.Sub(b.t.clk.Now())))
		for _, armed := range hooks {
			armed()
		}
		select {
		case <-timer.C():
			poked = false
		case <-b.poke:
			poked = true
		}
	}
}

// pass ticks every open member with the frames due by now and drops the closed ones
// (Run may then return); it says when the next frame is due, and more is false when the
// beat has no member left. With no frame due it does nothing unless sweep asks it to
// drop closed members anyway (a poke, the first pass). Caller holds mu.
func (b *beat) pass(now time.Time, sweep bool) (next time.Time, more bool) {
	n := b.pacer.Due(now)
	if n == 0 && !sweep {
		return b.pacer.Next(), len(b.sessions) > 0
	}
	due := b.pacer.Next()
	kept := b.sessions[:0]
	for _, s := range b.sessions {
		if !s.tick(now, n, due) {
			close(s.loopDone)
			continue
		}
		kept = append(kept, s)
	}
	clear(b.sessions[len(kept):]) // no closed session stays reachable
	b.sessions = kept
	b.pacer.Sent(n)
	b.due.Store(b.pacer.Next().UnixNano())
	return b.pacer.Next(), len(kept) > 0
}
