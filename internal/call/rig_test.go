package call

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// An engine rig: a call on a fake clock with a carrier (one that plays at once unless the
// test brings its own), a caller the test speaks for, and recognizers, voices and an agent
// the test scripts (doubles_test.go).

// rig runs one call.
type rig struct {
	t     *testing.T
	clk   *clock.Fake
	leg   *testLeg
	c     *Call
	ended chan voice.EndReason
	stt   *fakeSTT // the recognizer, where a test speaks through one
	watch *journalWatch

	mu    sync.Mutex
	lines []store.TranscriptLine
}

// testConfig is a quick call: no greeting, short grace periods.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Turn.TailGrace = 100 * time.Millisecond
	cfg.Turn.BargeInGate = 100 * time.Millisecond
	cfg.Turn.ErrorMessage = "Sorry, something went wrong."
	cfg.Turn.STTErrorMessage = "Sorry, I'm having trouble hearing you. One moment."
	cfg.Turn.SilenceHangup = 30 * time.Second
	cfg.EchoOff = true
	return cfg
}

// startRig starts a call on clk with deps (Clock, NewVAD, Journal and Transcript are the
// rig's; so is Leg, unless it is a *testLeg or a *clockedLeg).
func startRig(t *testing.T, clk *clock.Fake, cfg Config, deps Deps) *rig {
	t.Helper()
	r, deps := newRig(t, clk, deps)
	r.c = New(context.Background(), cfg, deps)
	go func() { r.ended <- r.c.Run() }()
	r.started()
	return r
}

// startManagedRig is startRig with the call admitted and run by m.
func startManagedRig(t *testing.T, m *Manager, clk *clock.Fake, cfg Config, deps Deps) *rig {
	t.Helper()
	r, deps := newRig(t, clk, deps)
	c, err := m.Start(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	go func() { <-c.Done(); r.ended <- c.Reason() }()
	r.started()
	return r
}

// newRig makes the rig's part of deps.
func newRig(t *testing.T, clk *clock.Fake, deps Deps) (*rig, Deps) {
	r := &rig{t: t, clk: clk, ended: make(chan voice.EndReason, 1)}
	var leg voice.Leg
	switch l := deps.Leg.(type) {
	case *testLeg:
		r.leg, leg = l, l
	case *clockedLeg:
		r.leg, leg = l.testLeg, l
	default:
		r.leg = newTestLeg(clk, playAtOnce)
		leg = r.leg
	}
	var j *obs.Journal
	r.watch, j = newJournalWatch(t0)
	deps.Leg, deps.Clock, deps.Journal = leg, r.clk, j
	deps.NewVAD = func(int) (vad.Detector, error) { return &levelVAD{}, nil }
	deps.Transcript = func(l store.TranscriptLine) {
		r.mu.Lock()
		r.lines = append(r.lines, l)
		r.mu.Unlock()
	}
	return r, deps
}

// started waits until the call runs its leg, and hangs it up when the test is over.
func (r *rig) started() {
	r.t.Helper()
	select {
	case <-r.leg.ready:
	case <-time.After(30 * time.Second): // a safety net: the wait ends on the leg
		r.t.Fatal("the call never ran its leg")
	}
	r.t.Cleanup(func() {
		r.c.Hangup()
		<-r.c.Done()
	})
}

// speak is the caller saying something: loud frames, then enough quiet for the VAD.
func (r *rig) speak(frames int) {
	for range frames {
		r.frame(loudFrame)
	}
	for range 5 {
		r.frame(quietFrame)
	}
}

// frame sends one caller frame and waits until the engine has taken it.
func (r *rig) frame(f []byte) {
	r.leg.sink.Audio(f)
	r.until("the engine takes the frame", false, func() bool { return r.c.inbound.Len() == 0 })
}

// until waits for cond, advancing the fake clock 10 ms at a time when advance is set.
func (r *rig) until(what string, advance bool, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a safety net: the wait ends on cond
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting until %s; journal:\n%s", what, r.journal())
		}
		if advance {
			r.clk.Advance(10 * time.Millisecond)
		}
		time.Sleep(time.Millisecond)
	}
}

// has reports whether the journal holds an event of typ matching ok (nil: any).
func (r *rig) has(typ string, ok func(obs.Event) bool) bool { return len(r.all(typ, ok)) > 0 }

func (r *rig) all(typ string, ok func(obs.Event) bool) []obs.Event {
	var out []obs.Event
	for _, e := range r.watch.all() {
		if e.Type == typ && (ok == nil || ok(e)) {
			out = append(out, e)
		}
	}
	return out
}

func (r *rig) journal() string {
	var b strings.Builder
	for _, e := range r.watch.all() {
		fmt.Fprintf(&b, "%6d %-18s turn=%d name=%s text=%q kind=%s reason=%s %s\n", e.MS, e.Type, e.Turn, e.Name, e.Text, e.Kind, e.Reason, e.Message)
	}
	return b.String()
}

func (r *rig) transcript() []store.TranscriptLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]store.TranscriptLine(nil), r.lines...)
}

// end waits for the call to end on its own (advancing the clock) and returns why.
func (r *rig) end() voice.EndReason {
	r.t.Helper()
	var reason voice.EndReason
	r.until("the call ends", true, func() bool {
		select {
		case reason = <-r.ended:
			return true
		default:
			return false
		}
	})
	return reason
}

func withText(text string) func(obs.Event) bool {
	return func(e obs.Event) bool { return e.Text == text }
}

func named(name string) func(obs.Event) bool {
	return func(e obs.Event) bool { return e.Name == name }
}

// sync returns once the owner loop has handled every event posted before it (at once if
// the call is over).
func (r *rig) sync() {
	r.t.Helper()
	done := make(chan struct{})
	if !r.c.deliver(inLoop(func() { close(done) })) {
		return
	}
	select {
	case <-done:
	case <-r.c.Done():
	case <-time.After(30 * time.Second): // a safety net: the wait ends on the probe
		r.t.Fatal("the owner loop never ran the probe")
	}
}

// settle waits until the engine can do nothing more before the clock moves: the playout
// parked and the owner loop through what was posted, the carrier's marks among it.
func (r *rig) settle() {
	r.t.Helper()
	if r.c.ctx.Err() != nil {
		return // the call is over: nothing is left to settle
	}
	waitIdle(r.t, r.clk, r.c.playout)
	r.sync()
	waitIdle(r.t, r.clk, r.c.playout)
}

// tick moves the clock d on, 10 ms at a time, the engine settling at each step, so each
// timer and mark is handled at the time it falls due.
func (r *rig) tick(d time.Duration) {
	r.t.Helper()
	r.settle() // what the test just did is done before the clock moves
	for ; d > 0; d -= 10 * time.Millisecond {
		r.clk.Advance(min(d, 10*time.Millisecond))
		r.settle()
	}
}

// await waits for the first journal event of typ that ok accepts (nil: any).
func (r *rig) await(typ string, ok func(obs.Event) bool) obs.Event {
	r.t.Helper()
	return r.watch.wait(r.t, typ, func(e obs.Event) bool { return e.Type == typ && (ok == nil || ok(e)) })
}

// queued reports whether mark is queued for the carrier or already sent to it.
func (r *rig) queued(mark string) bool {
	p := r.c.playout
	p.mu.Lock()
	defer p.mu.Unlock()
	return r.leg.sentMark(mark) || slices.ContainsFunc(p.queue.items(), func(it playItem) bool { return it.mark == mark })
}

func ofTurn(n int) func(obs.Event) bool { return func(e obs.Event) bool { return e.Turn == n } }

// playOut moves the clock on until the carrier has played turn to its end.
func (r *rig) playOut(turn int) {
	r.t.Helper()
	r.tickUntil(fmt.Sprintf("turn %d plays out", turn), func() bool { return r.has(obs.PlayoutDone, ofTurn(turn)) })
}

// tickUntil moves the clock on, 10 ms at a time, until cond holds.
func (r *rig) tickUntil(what string, cond func() bool) {
	r.t.Helper()
	for waited := time.Duration(0); !cond(); waited += 10 * time.Millisecond {
		if waited > time.Minute { // of the fake clock: nothing here waits that long
			r.t.Fatalf("%s never happened:\n%s", what, r.journal())
		}
		r.tick(10 * time.Millisecond)
	}
}
