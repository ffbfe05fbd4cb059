package call

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

func contents(msgs []voice.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ": " + m.Content
	}
	return out
}

func wantUnseen(t *testing.T, h *history, step string, want ...string) {
	t.Helper()
	got := contents(h.unseen())
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: unseen = %q, want %q", step, got, want)
	}
}

// TestUnseenFollowsWhatTheRuntimeStored walks a call through each way a runtime that keeps
// the conversation itself misses what happened on the line.
func TestUnseenFollowsWhatTheRuntimeStored(t *testing.T) {
	var h history
	now := time.Unix(1000, 0)

	// The greeting was spoken for the agent: the first turn tells it.
	h.assistant(0, "Hello, this is Sam.")
	h.user("hi, I am calling about my order")
	wantUnseen(t, &h, "first turn", "assistant: Hello, this is Sam.")

	// The caller adds a sentence before the run finished: the first turn is cancelled, and
	// the new one carries the greeting and the first sentence both.
	h.user("the order number is 553")
	wantUnseen(t, &h, "second sentence", "assistant: Hello, this is Sam.", "user: hi, I am calling about my order")

	// The run finished: the runtime holds everything.
	h.finished(2, "Order 553 ships today. Anything else?")
	h.user("thanks")
	wantUnseen(t, &h, "after a finished run")
	h.finished(3, "You're welcome.")

	// The caller cuts the next reply off while it plays (its run had finished): the runtime
	// holds the whole reply; it is told the heard part.
	h.user("and the invoice?")
	h.finished(4, "The invoice went out. It was sent on Monday.")
	h.segment(4, "t4-s0", "The invoice went out.", time.Second, false)
	h.segment(4, "t4-s1", "It was sent on Monday.", 2*time.Second, false)
	h.audioStarted(4, now)
	h.heard(4, "t4-s0", now.Add(time.Second))
	h.interrupt(4, now.Add(time.Second+time.Second))
	h.user("wait")
	wantUnseen(t, &h, "barge-in after the run", "assistant: The invoice went out. It was sent "+voice.InterruptedMarker)

	// A reply cut off before its run finished, before anything played.
	h.interrupt(5, now.Add(3*time.Second))
	h.user("no, stop")
	wantUnseen(t, &h, "barge-in before any audio",
		"assistant: The invoice went out. It was sent "+voice.InterruptedMarker,
		"user: wait",
		"assistant: "+voice.InterruptedMarker)

	// A sentence no voice could speak, after the run finished: told again as heard.
	h.finished(6, "Stopped. Goodbye for now.")
	h.lose(6, "Goodbye for now.")
	h.user("ok")
	wantUnseen(t, &h, "lost sentence", "assistant: Stopped.")
}

// TestUnseenInAWindow: the cursor survives the history's window sliding past it.
func TestUnseenInAWindow(t *testing.T) {
	h := history{limit: 4}
	h.assistant(0, "Hello.")
	for i := range 6 {
		h.user("sentence " + string(rune('a'+i)))
	}
	wantUnseen(t, &h, "window", "user: sentence c", "user: sentence d", "user: sentence e")
}

func TestCallerCommandsAreEscaped(t *testing.T) {
	var h history
	h.user("/reset")
	h.user(" /new please")
	h.user("what is 1/2")
	got := contents(h.snapshot())
	want := []string{"user: (spoken) /reset", "user: (spoken) /new please", "user: what is 1/2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("history = %q, want %q", got, want)
	}
}

// heldAgent records each turn; a turn whose words hold "HOLD" runs until cancelled (a run
// that has not answered yet), any other answers at once.
type heldAgent struct {
	mu   sync.Mutex
	reqs []voice.TurnRequest
}

func (a *heldAgent) Name() string { return "held" }

func (a *heldAgent) Reply(ctx context.Context, req voice.TurnRequest) (voice.ReplyStream, error) {
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	if strings.Contains(req.History[len(req.History)-1].Content, "HOLD") {
		return &busyStream{ctx: ctx}, nil
	}
	return &textStream{text: "Order 553 ships today."}, nil
}

func (a *heldAgent) requests() []voice.TurnRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.reqs)
}

// TestTurnsCarryWhatTheRuntimeMissed: through the engine, the first turn carries the
// greeting, a turn that replaces a cancelled one carries its sentence, and a turn after a
// finished run carries nothing.
func TestTurnsCarryWhatTheRuntimeMissed(t *testing.T) {
	clk := clock.NewFake(t0)
	cfg := testConfig()
	cfg.Turn.FirstMessage = "Hello, this is Sam."
	results := make(chan voice.Transcript, 4)
	agent := &heldAgent{}
	r := startRig(t, clk, cfg, Deps{STT: &scriptedSTT{results: results}, TTS: quickTTS{}, Agent: agent})
	r.until("the greeting played", true, func() bool { return r.has(obs.PlayoutDone, nil) })

	results <- voice.Transcript{Text: "hi HOLD I am calling about my order", Final: true}
	r.until("the first turn reached the agent", false, func() bool { return len(agent.requests()) == 1 })
	results <- voice.Transcript{Text: "the order number is 553", Final: true}
	r.until("the second turn finished", true, func() bool {
		return r.has(obs.PlayoutDone, func(e obs.Event) bool { return e.Turn == 2 })
	})
	results <- voice.Transcript{Text: "thanks", Final: true}
	r.until("the third turn reached the agent", false, func() bool { return len(agent.requests()) == 3 })

	reqs := agent.requests()
	want := [][]string{
		{"assistant: Hello, this is Sam."},
		{"assistant: Hello, this is Sam.", "user: hi HOLD I am calling about my order"},
		nil,
	}
	for i, req := range reqs {
		if got := contents(req.Unseen); !(len(got) == 0 && len(want[i]) == 0) && !reflect.DeepEqual(got, want[i]) {
			t.Errorf("turn %d carries unseen %q, want %q", req.Turn, got, want[i])
		}
	}
}
