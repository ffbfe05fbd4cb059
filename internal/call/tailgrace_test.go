package call

import (
	"reflect"
	"testing"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/voice"
)

// TestTailGraceTakesTheNextTurn: just after the reply has played, inside the tail grace,
// a final that repeats the reply's own words is its echo and is dropped; the caller's own
// words are the next turn, with nothing cleared or interrupted.
func TestTailGraceTakesTheNextTurn(t *testing.T) {
	r, agent, _, results := replyRig(t, testConfig())
	askHours(r, agent, results)
	agent.say(reply3)
	close(agent.chunks)
	r.playOut(1)
	hear := func(text string) {
		t.Helper()
		results <- voice.Transcript{Text: text, Final: true}
		r.await(obs.STTFinal, withText(text))
		r.sync() // the owner has stepped the turn machine with it; the clock has not moved
	}

	hear("we close at five see you soon")
	if !r.has(turn.NoteDropped, withText("echo: we close at five see you soon")) || r.has(obs.TurnCommit, ofTurn(2)) {
		t.Errorf("the reply's echo was not dropped:\n%s", r.journal())
	}
	hear("and on sunday")
	if !r.has(turn.NoteRescue, nil) || !r.has(obs.TurnCommit, withText("and on sunday")) {
		t.Fatalf("the caller's words in the tail grace are not the next turn:\n%s", r.journal())
	}
	if r.has(obs.TimerFired, named("tail_grace")) {
		t.Fatalf("the grace was over before the caller spoke:\n%s", r.journal())
	}
	if r.leg.count("clear") != 0 || r.has(obs.TurnInterrupted, nil) {
		t.Errorf("speech after the reply interrupted it:\n%s", r.journal())
	}
	r.until("turn 2 reaches the agent", false, func() bool { return len(agent.requests()) == 2 })
	want := []string{"user: what are your hours", "assistant: " + reply3, "user: and on sunday"}
	if got := contents(agent.requests()[1].History); !reflect.DeepEqual(got, want) {
		t.Errorf("turn 2's history %q, want %q", got, want)
	}
}
