package media

import (
	"sync"
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

	mu       sync.Mutex // guards the following; held over a pass, so a session never leaves mid-tick
	sessions []*Session
	running  bool
	pacer    *pace.Pacer
	hooks    []func() // the members' armed hooks, called once the timer is set (tests)
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

// loop ticks the beat's sessions every 20 ms until none is left.
func (b *beat) loop() {
	timer := b.t.clk.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next, more := b.pass()
		if !more {
			return
		}
		timer.Reset(max(0, next.Sub(b.t.clk.Now())))
		for _, armed := range b.hooks {
			armed()
		}
		select {
		case <-timer.C():
		case <-b.poke:
		}
	}
}

// pass ticks every open member with the frames now due, drops the closed ones (Run may
// then return), and says when the next frame is due; more is false when the beat has
// no member left and its goroutine must return.
func (b *beat) pass() (next time.Time, more bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.t.clk.Now()
	n := b.pacer.Due(now)
	due := b.pacer.Next()
	kept := b.sessions[:0]
	b.hooks = b.hooks[:0]
	for _, s := range b.sessions {
		if !s.tick(now, n, due) {
			close(s.loopDone)
			continue
		}
		kept = append(kept, s)
		if s.armed != nil {
			b.hooks = append(b.hooks, s.armed)
		}
	}
	clear(b.sessions[len(kept):]) // no closed session stays reachable
	b.sessions = kept
	b.pacer.Sent(n)
	if len(kept) == 0 {
		b.running = false
		return time.Time{}, false
	}
	return b.pacer.Next(), true
}
