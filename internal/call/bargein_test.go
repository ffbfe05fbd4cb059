package call

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

// replyRig is a call on a carrier that plays on the clock, whose agent streams what the
// test pushes and whose voice speaks each sentence as 200 ms of audio.
func replyRig(t *testing.T, cfg Config) (*rig, *pushAgent, *fakeTTS, chan voice.Transcript) {
	t.Helper()
	clk := clock.NewFake(t0)
	results := make(chan voice.Transcript, 4)
	agent := newPushAgent()
	tts := &fakeTTS{name: "voice", clk: clk}
	r := startRig(t, clk, cfg, Deps{Leg: newTestLeg(clk, playPaced), STT: &scriptedSTT{results: results}, TTS: tts, Agent: agent})
	return r, agent, tts, results
}

// askHours is the caller's first turn: it waits until the agent has it.
func askHours(r *rig, agent *pushAgent, results chan voice.Transcript) {
	r.t.Helper()
	results <- voice.Transcript{Text: "what are your hours", Final: true}
	r.until("turn 1 reaches the agent", false, func() bool { return len(agent.requests()) == 1 })
}

// interrupt is the caller speaking over the agent: it returns the barge-in journaled.
func (r *rig) interrupt() obs.Event {
	r.t.Helper()
	r.frame(loudFrame)
	barge := r.await(obs.BargeIn, nil)
	r.sync() // the rest of the step, turn.interrupted among it
	return barge
}

// TestBargeInStopsTheReply: the caller speaking once the gate is open clears the carrier
// once, no more of the reply goes out (the audio already queued, the sentences the agent
// sends after), the agent's run is cancelled, and the turn is journaled interrupted.
func TestBargeInStopsTheReply(t *testing.T) {
	r, agent, tts, results := replyRig(t, testConfig())
	askHours(r, agent, results)
	agent.say("We open at nine. We close at five. ")
	r.await(obs.PlayoutFirstAudio, ofTurn(1))
	r.until("the second sentence is queued", false, func() bool { return r.queued("t1-s2") })
	r.settle()
	r.tick(testConfig().Turn.BargeInGate)
	r.await(obs.TimerFired, named("gate"))

	barge := r.interrupt()
	if !r.has(obs.TurnInterrupted, ofTurn(1)) || barge.Turn != 1 {
		t.Fatalf("no turn.interrupted for turn 1:\n%s", r.journal())
	}
	ctx := agent.contexts()[0]
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second): // a safety net: the wait ends on the cancel
		t.Fatal("the agent's run was not cancelled")
	}
	agent.say("See you soon.") // too late: nobody reads it
	r.until("the carrier is cleared", false, func() bool { return r.leg.count("clear") > 0 })
	r.tick(time.Second)

	log := r.leg.record()
	cleared := slices.IndexFunc(log, func(s sent) bool { return s.kind == "clear" })
	if after := log[cleared+1:]; len(after) > 0 {
		t.Errorf("sent to the carrier after the clear: %+v", after)
	}
	if n := r.leg.count("clear"); n != 1 {
		t.Errorf("clear sent %d times, want once", n)
	}
	if r.leg.sentMark("t1-end") {
		t.Error("the interrupted reply's end mark went out")
	}
	if got := r.leg.count("audio"); got >= 20 {
		t.Errorf("%d frames went out: all of both sentences, though the caller cut in during the first", got)
	}
	if n := tts.count("See you soon."); n != 0 {
		t.Errorf("a sentence sent after the barge-in was synthesised %d times", n)
	}
}

// TestHeardPrefixIsWhatTheClockPlayed: sentences whose marks came back were heard whole;
// of the one playing when the caller cut in, the words its played time covers. The
// barge-in, the transcript line and the next turn's history hold exactly that, and the
// marks the clear sends back count for nothing.
func TestHeardPrefixIsWhatTheClockPlayed(t *testing.T) {
	r, agent, _, results := replyRig(t, testConfig())
	askHours(r, agent, results)
	agent.say(reply3)
	close(agent.chunks)
	start := r.await(obs.PlayoutFirstAudio, ofTurn(1))
	r.await(obs.PlayoutQueued, ofTurn(1))
	r.settle()
	// The first sentence plays for 200 ms; its mark comes back then.
	r.tick(200 * time.Millisecond)
	mark := r.await(obs.PlayoutMark, named("t1-s1"))
	if mark.MS != start.MS+200 {
		t.Fatalf("t1-s1 came back at %d ms, want %d", mark.MS, start.MS+200)
	}
	// 130 ms into the 200 ms of "We close at five.": 65% of it, "We close at".
	r.tick(130 * time.Millisecond)
	const heard = "We open at nine. We close at"
	if got := r.interrupt().Text; got != heard {
		t.Errorf("barge-in heard %q, want %q:\n%s", got, heard, r.journal())
	}
	r.tick(time.Second) // the cleared marks come back; none of them is heard
	if r.has(obs.PlayoutMark, named("t1-s2")) || r.has(obs.PlayoutDone, ofTurn(1)) {
		t.Errorf("a mark the clear returned counted as played:\n%s", r.journal())
	}
	var line []string
	for _, l := range r.transcript() {
		if l.Role == voice.RoleAssistant {
			line = append(line, l.Text)
			if !l.Interrupted {
				t.Errorf("transcript line %+v not marked interrupted", l)
			}
		}
	}
	if !reflect.DeepEqual(line, []string{heard}) {
		t.Errorf("agent's transcript lines %q, want [%q]", line, heard)
	}

	results <- voice.Transcript{Text: "and on sunday", Final: true}
	r.until("turn 2 reaches the agent", false, func() bool { return len(agent.requests()) == 2 })
	want := []string{"user: what are your hours", "assistant: " + heard + " " + voice.InterruptedMarker, "user: and on sunday"}
	if got := contents(agent.requests()[1].History); !reflect.DeepEqual(got, want) {
		t.Errorf("turn 2's history %q, want %q", got, want)
	}
}
