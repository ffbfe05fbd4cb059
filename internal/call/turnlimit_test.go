package call

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

// startLimitedCall runs a call on a fake clock whose agent turns are bounded by limit.
func startLimitedCall(t *testing.T, agent voice.Agent, limit time.Duration) (*Call, *clock.Fake, *journalWatch, chan voice.Transcript) {
	t.Helper()
	clk := clock.NewFake(t0)
	results := make(chan voice.Transcript, 4)
	cfg := DefaultConfig()
	cfg.Turn.ErrorMessage = "Sorry, that took too long."
	cfg.Turn.LongTurnMessage = "One moment."
	cfg.Turn.LongTurnAfter = 4 * time.Second
	cfg.AgentTurnTimeout = limit
	r := startRig(t, clk, cfg, Deps{Leg: newTestLeg(clk, playNever), STT: &scriptedSTT{results: results}, TTS: quickTTS{}, Agent: agent})
	return r.c, clk, r.watch, results
}

// TestAgentTurnTimeoutAbortsABusyTurn: a runtime that keeps reporting tool progress is
// never silent, so no silence timeout can end its turn; the turn limit does, on the call's
// clock: the agent's context is cancelled (which aborts the remote run), the turn fails as
// a timeout, and the caller hears the error message after the filler.
func TestAgentTurnTimeoutAbortsABusyTurn(t *testing.T) {
	agent := &busyAgent{}
	_, clk, watch, results := startLimitedCall(t, agent, 90*time.Second)
	results <- voice.Transcript{Text: "check my orders", Final: true}
	watch.wait(t, "agent.progress", func(e obs.Event) bool { return e.Type == obs.AgentProgress })
	watch.wait(t, "filler", func(e obs.Event) bool { return e.Type == obs.TTSRequest && e.Kind == "filler" })
	turns := agent.turns()
	if len(turns) != 1 {
		t.Fatalf("%d agent turns, want 1", len(turns))
	}
	clk.Advance(90*time.Second - time.Millisecond) // timers fire inside Advance
	if err := turns[0].Err(); err != nil {
		t.Fatalf("the turn was cancelled before its limit: %v", context.Cause(turns[0]))
	}
	clk.Advance(time.Millisecond)
	if cause := context.Cause(turns[0]); !errors.Is(cause, errTurnTimeout) {
		t.Fatalf("at the limit the agent's context is not cancelled by it: cause %v", cause)
	}
	failed := watch.wait(t, "agent.error", func(e obs.Event) bool { return e.Type == obs.AgentError })
	if failed.Kind != "timeout" || failed.Turn != 1 {
		t.Errorf("agent.error %+v, want kind timeout for turn 1", failed)
	}
	watch.wait(t, "the error message", func(e obs.Event) bool {
		return e.Type == obs.TTSRequest && e.Text == "Sorry, that took too long."
	})
}

// TestAgentTurnTimeoutLeavesAFinishedTurnAlone: a turn that ends in time disarms its
// limit; the clock running past it later fails nothing.
func TestAgentTurnTimeoutLeavesAFinishedTurnAlone(t *testing.T) {
	agent := &busyAgent{reply: "Here you are."}
	_, clk, watch, results := startLimitedCall(t, agent, 90*time.Second)
	results <- voice.Transcript{Text: "hello", Final: true}
	watch.wait(t, "agent.done", func(e obs.Event) bool { return e.Type == obs.AgentDone })
	turns := agent.turns()
	select { // the reader ends its turn's context as it returns
	case <-turns[0].Done():
	case <-time.After(30 * time.Second): // a safety net: the wait ends on the context
		t.Fatal("the finished turn's context never ended")
	}
	clk.Advance(5 * time.Minute)
	if cause := context.Cause(turns[0]); errors.Is(cause, errTurnTimeout) {
		t.Error("the limit of a finished turn fired")
	}
	for _, e := range watch.all() {
		if e.Type == obs.AgentError {
			t.Errorf("a finished turn failed: %+v", e)
		}
	}
}
