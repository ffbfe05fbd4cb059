package call

import (
	"context"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/clock"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// aheadBy reports whether got frames is want or one more: two frames go out in one
// message, so the second of a pair is one frame ahead of its schedule.
func aheadBy(got, want int) bool { return got == want || got == want+1 }

func frames(n int) []*frameBuf {
	out := make([]*frameBuf, n)
	for i := range out {
		out[i] = &frameBuf{b: make([]byte, 160)}
	}
	return out
}

// settle waits until the playout goroutine is parked on its timer again with nothing left
// to do: no wake-up waiting, and the timer not fired under it.
func settle(t *testing.T, clk *clock.Fake, p *playout) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a safety net: the loop ends on the state
	for clk.Pending() == 0 || !p.parked.Load() || len(p.wake) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("playout never went back to waiting")
		}
		runtime.Gosched()
	}
}

// waitUntil waits for the playout goroutine to make cond true.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a safety net: the loop ends on the state
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		runtime.Gosched()
	}
}

func startPlayout(t *testing.T) (*playout, *testLeg, *clock.Fake, []int) {
	t.Helper()
	return startPlayoutLeading(t, 80*time.Millisecond)
}

func startPlayoutLeading(t *testing.T, lead time.Duration) (*playout, *testLeg, *clock.Fake, []int) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	leg := newTestLeg(clk, playNever)
	var firstAudio []int
	var mu sync.Mutex
	p := newPlayout(leg, clk, lead, 150*time.Millisecond, func(turn int, _ audioStart) {
		mu.Lock()
		firstAudio = append(firstAudio, turn)
		mu.Unlock()
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, leg, clk, firstAudio
}

func TestPlayoutPacesAgainstTheSchedule(t *testing.T) {
	p, leg, clk, _ := startPlayout(t)
	p.enqueue(1, frames(100), "t1-s1")
	settle(t, clk, p)
	// The first frame plus 80 ms of lead go at once; then one frame every 20 ms, sent
	// two to a message.
	if got := leg.count("audio"); !aheadBy(got, 5) {
		t.Fatalf("at start: %d frames sent, want 5 (or 6)", got)
	}
	for step := 1; step <= 50; step++ {
		clk.Advance(20 * time.Millisecond)
		want := 5 + step
		waitUntil(t, func() bool { return leg.count("audio") >= want }) // the playout catches up with the clock
		settle(t, clk, p)
		if got := leg.count("audio"); !aheadBy(got, want) {
			t.Fatalf("after %d ms: %d frames sent, want %d (or one more)", 20*step, got, want)
		}
	}
	if msgs, frames := leg.messages(), leg.count("audio"); msgs*2 < frames {
		t.Errorf("%d frames in %d messages: more than two a message", frames, msgs)
	}
	// A late wake-up catches up in one burst instead of drifting.
	clk.Advance(100 * time.Millisecond)
	waitUntil(t, func() bool { return leg.count("audio") >= 60 })
	settle(t, clk, p)
	if got := leg.count("audio"); !aheadBy(got, 60) {
		t.Errorf("after a 100 ms late wake-up: %d frames sent, want 60 (or 61)", got)
	}
}

func TestPlayoutClearDropsTheTurnAndDrainsBeforeTheNext(t *testing.T) {
	p, leg, clk, _ := startPlayout(t)
	p.enqueue(1, frames(50), "t1-s1")
	settle(t, clk, p)
	p.clearCarrier(1)
	if p.enqueue(1, frames(10), "t1-s2") {
		t.Error("the cancelled turn could still queue audio")
	}
	if !p.enqueue(2, frames(10), "t2-s1") {
		t.Fatal("the next turn was refused")
	}
	waitUntil(t, func() bool { return leg.count("clear") > 0 })
	settle(t, clk, p)
	if leg.count("clear") != 1 {
		t.Fatalf("clear sent %d times", leg.count("clear"))
	}
	// Time moves on in small steps: the next turn's first audio must come, and not before
	// the 150 ms drain after the clear.
	before := leg.count("audio")
	for range 40 {
		clk.Advance(10 * time.Millisecond)
		settle(t, clk, p)
		if leg.count("audio") > before {
			break
		}
	}
	var clearAt, nextAt time.Time
	leg.mu.Lock()
	for _, s := range leg.sent {
		switch {
		case s.kind == "clear":
			clearAt = s.at
		case s.kind == "audio" && !clearAt.IsZero() && nextAt.IsZero():
			nextAt = s.at
		}
	}
	leg.mu.Unlock()
	switch {
	case nextAt.IsZero():
		t.Error("the next turn never started after the drain")
	case nextAt.Sub(clearAt) < 150*time.Millisecond:
		t.Errorf("new audio went out %v after a clear, inside the 150 ms drain", nextAt.Sub(clearAt))
	}
	leg.mu.Lock()
	defer leg.mu.Unlock()
	for _, s := range leg.sent {
		if s.kind == "mark" && s.name == "t1-s1" {
			t.Error("a mark of the cleared turn was sent")
		}
	}
}

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func TestHistoryKeepsWhatTheCallerHeard(t *testing.T) {
	var h history
	h.user("tell me a story")
	h.audioStarted(1, ms(0))
	h.segment(1, "t1-s1", "Once upon a time.", 1000*time.Millisecond, false)
	h.segment(1, "t1-s2", "There was a dragon.", 1000*time.Millisecond, false)
	h.segment(1, "t1-s3", "It liked tea.", 1000*time.Millisecond, false)
	h.heard(1, "t1-s1", ms(1000))
	// Interrupted 630 ms into the second sentence: its words that fit are heard.
	if got := h.interrupt(1, ms(1630)); got != "Once upon a time. There was a" {
		t.Errorf("heard = %q", got)
	}
	h.assistant(1, "Once upon a time. There was a dragon. It liked tea.") // arrives late: ignored
	if h.heard(1, "t1-s3", ms(1700)) {
		t.Error("a mark returned by the clear counted as heard")
	}
	msgs := h.snapshot()
	if len(msgs) != 2 || msgs[1].Content != "Once upon a time. There was a [interrupted by caller]" {
		t.Errorf("history = %+v", msgs)
	}
	// A finished reply interrupted while its tail still plays is rewritten in place.
	h.user("and then?")
	h.audioStarted(2, ms(5000))
	h.segment(2, "t2-s1", "The end.", 500*time.Millisecond, false)
	h.assistant(2, "The end.")
	h.interrupt(2, ms(5000))
	if got := h.snapshot()[3].Content; got != "[interrupted by caller]" || len(h.snapshot()) != 4 {
		t.Errorf("rewritten reply = %q (history %+v)", got, h.snapshot())
	}
}

func TestHeardPrefixTiming(t *testing.T) {
	reply := func() *turnRecord {
		var h history
		h.audioStarted(1, ms(0))
		h.segment(1, "t1-s1", "One moment please.", 800*time.Millisecond, true) // filler: plays, not the agent's words
		h.segment(1, "t1-s2", "Your order shipped today.", 1000*time.Millisecond, false)
		h.segment(1, "t1-s3", "It arrives Friday.", 1000*time.Millisecond, false)
		return h.record(1)
	}
	tests := []struct {
		name  string
		marks map[string]int // mark -> echo time
		now   int
		want  string
	}{
		{"inside the filler: nothing of the reply", nil, 500, ""},
		{"a sentence starting exactly at the play head is not heard", map[string]int{"t1-s1": 800}, 800, ""},
		{"the mark echo moves the play head, not the byte estimate", map[string]int{"t1-s1": 1300}, 1900, "Your order"},
		{"fully drained reply: every sentence", map[string]int{"t1-s1": 800, "t1-s2": 1800, "t1-s3": 2800}, 3000, "Your order shipped today. It arrives Friday."},
		{"mid second sentence", map[string]int{"t1-s1": 800, "t1-s2": 1800}, 2400, "Your order shipped today. It arrives"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reply()
			h := history{turns: map[int]*turnRecord{1: r}}
			for _, name := range []string{"t1-s1", "t1-s2", "t1-s3"} {
				if at, ok := tt.marks[name]; ok {
					h.heard(1, name, ms(at))
				}
			}
			if got := r.heardText(ms(tt.now)); got != tt.want {
				t.Errorf("heard %q, want %q", got, tt.want)
			}
		})
	}
}

// A reply's frames queue in storage an earlier reply gave back, and a call that has
// played out holds no queue storage: hundreds of listening calls would otherwise each keep
// storage for the longest reply they ever queued.
func TestPlayoutQueueAllocatesNothingOnceWarmAndHoldsNoneDrained(t *testing.T) {
	clk := clock.NewFake(t0)
	p := newPlayout(newTestLeg(clk, playAtOnce), clk, 80*time.Millisecond, 150*time.Millisecond, func(int, audioStart) {})
	frames := make([]*frameBuf, 150) // a 3 s reply; its frames, not the pool's, so only the queue is counted
	for i := range frames {
		frames[i] = &frameBuf{b: make([]byte, 160)}
	}
	reply := func(turn int) {
		p.enqueue(turn, frames, "end")
		p.mu.Lock()
		for p.queue.len() > 0 {
			p.queue.popFront()
		}
		p.mu.Unlock()
	}
	reply(1)
	if p.queue.store != nil {
		t.Fatalf("a drained queue holds storage for %d items", cap(p.queue.store.items))
	}
	if raceDetector {
		return
	}
	// A collection may empty the pools at any time; none runs while allocations are counted.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	turn := 1
	if allocs := testing.AllocsPerRun(20, func() { turn++; reply(turn) }); allocs > 0 {
		t.Fatalf("a reply allocated %.0f times queueing its frames", allocs)
	}
}

// A reply that starts after the last one has played starts with the lead again, however
// long the pause: the carrier's buffer is empty, and a reply sent at exactly real time
// after it has no margin for a late wake-up (each one a gap the caller hears).
func TestPlayoutLeadsEveryReplyNotOnlyTheFirst(t *testing.T) {
	p, leg, clk, _ := startPlayout(t)
	p.enqueue(1, frames(10), "t1-end")
	idle := func() bool { return p.parked.Load() && len(p.wake) == 0 && p.parkedUntil.Load() == 0 }
	for step := 0; !(leg.count("mark") == 1 && idle()); step++ {
		if step > 20 {
			t.Fatal("the first reply never played out")
		}
		settle(t, clk, p)
		clk.Advance(20 * time.Millisecond)
		waitUntil(t, func() bool { return idle() || (p.parked.Load() && len(p.wake) == 0 && clk.Pending() > 0) })
	}
	clk.Advance(3 * time.Second) // the caller's turn
	p.enqueue(2, frames(50), "t2-end")
	settle(t, clk, p)
	if got := leg.count("audio") - 10; !aheadBy(got, 5) {
		t.Fatalf("the second reply's start: %d frames sent, want 5 (or 6): the first frame and 80 ms of lead", got)
	}
}

// A lead deeper than the pacer's maximum lag (a clocked leg's) is kept, also when the
// reply's audio comes in pieces: audio that arrives while the carrier still holds some
// goes out up to the lead ahead again, never on a schedule re-anchored at now.
func TestPlayoutKeepsADeepLead(t *testing.T) {
	p, leg, clk, _ := startPlayoutLeading(t, 240*time.Millisecond)
	p.enqueue(1, frames(5), "")
	waitUntil(t, func() bool {
		return leg.count("audio") == 5 && p.parked.Load() && len(p.wake) == 0 && p.parkedUntil.Load() == 0
	})
	if got := leg.count("audio"); got != 5 {
		t.Fatalf("at start: %d frames sent, want all 5 (inside the lead)", got)
	}
	clk.Advance(70 * time.Millisecond) // the next piece, while 30 ms are still to play
	p.enqueue(1, frames(50), "t1-end")
	settle(t, clk, p)
	// Frames 0-15 play by 70 + 240 ms.
	if got := leg.count("audio"); !aheadBy(got, 16) {
		t.Fatalf("after the second piece: %d frames sent, want 16 (or 17): 240 ms ahead again", got)
	}
}
