package call

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

// TestDrainSaysGoodbyeOverTheReply: a stopping server whose drain time is up has each call
// still going say its goodbye (Manager.Drain, Call.Goodbye): the reply stops where the
// caller is, the goodbye is said whole though the caller talks over it, the call ends as
// shutdown once the carrier has played it, not before, and then Drain returns.
func TestDrainSaysGoodbyeOverTheReply(t *testing.T) {
	m := NewManager(context.Background(), 0)
	clk := clock.NewFake(t0)
	results := make(chan voice.Transcript, 4)
	agent := newPushAgent()
	r := startManagedRig(t, m, clk, testConfig(), Deps{Leg: newTestLeg(clk, playPaced),
		STT: &scriptedSTT{results: results}, TTS: &fakeTTS{name: "voice", clk: clk}, Agent: agent})
	askHours(r, agent, results)
	agent.say(reply3)
	close(agent.chunks)
	r.await(obs.PlayoutQueued, ofTurn(1))
	r.tick(300 * time.Millisecond) // the first sentence and half the second have played

	over, cancel := context.WithCancel(context.Background())
	cancel() // the drain's time is up
	drained := make(chan struct{})
	go func() { m.Drain(over, Goodbye{Text: "Goodbye.", Within: time.Minute}); close(drained) }()
	r.await(obs.CallGoodbye, nil)
	r.sync()
	var cut []string
	for _, l := range r.transcript() {
		if l.Role == voice.RoleAssistant && l.Turn == 1 && l.Interrupted {
			cut = append(cut, l.Text)
		}
	}
	if len(cut) != 1 || cut[0] != "We open at nine. We close" {
		t.Errorf("the cut reply's transcript lines %q, want [\"We open at nine. We close\"]", cut)
	}
	r.until("the reply is cleared", false, func() bool { return r.leg.count("clear") == 1 })

	r.tickUntil("the goodbye's first audio", func() bool { return r.has(obs.PlayoutFirstAudio, ofTurn(2)) })
	r.await(obs.PlayoutFirstAudio, ofTurn(2))
	// Timed from when the goodbye reached the carrier: the journal notes it as the engine
	// handles the playout's report, which can be a clock step later.
	wire := r.leg.firstAudioAfter("clear")
	r.frame(loudFrame) // the caller talks over it
	r.frame(loudFrame)
	r.tick(wire.Add(190 * time.Millisecond).Sub(clk.Now()))
	select {
	case reason := <-r.ended:
		t.Fatalf("the call ended (%v) before the goodbye had played", reason)
	default:
	}
	r.playOut(2)
	if reason := r.end(); reason != voice.EndShutdown {
		t.Errorf("the call ended %v, want shutdown", reason)
	}
	end := r.await(obs.CallEnd, nil)
	// Ended once the 200 ms goodbye had played: not before, and within the clock step the
	// engine takes to handle the carrier's mark.
	if played := wire.Add(200 * time.Millisecond); end.TS.Before(played) || end.TS.Sub(played) > 10*time.Millisecond {
		t.Errorf("the call ended at %v, want when the 200 ms goodbye had played (%v)", end.TS, played.UTC())
	}
	if r.has(obs.BargeIn, nil) || r.leg.count("clear") != 1 {
		t.Errorf("the caller interrupted the goodbye:\n%s", r.journal())
	}
	select {
	case <-drained:
	case <-time.After(30 * time.Second): // a safety net: Drain returns as the call ends
		t.Fatal("Drain did not return once its call had ended")
	}
	if n := m.Active(); n != 0 {
		t.Errorf("%d calls still running after the drain", n)
	}
}

// TestHangupMidReplyStopsEverything: the caller hanging up while the agent still streams,
// a voice is stuck in a sentence and the carrier has audio queued ends the call as their
// hang-up, with every goroutine the call started gone and the reply's transcript line as
// far as they heard it.
func TestHangupMidReplyStopsEverything(t *testing.T) {
	running := goleak.IgnoreCurrent()
	clk := clock.NewFake(t0)
	results := make(chan voice.Transcript, 4)
	agent := newPushAgent()
	stuck := func(text string, _ int) ttsMode {
		if text == "We close at five." {
			return speakStall
		}
		return speakOK
	}
	cfg := testConfig()
	cfg.TTSTimeout = time.Hour
	r := startRig(t, clk, cfg, Deps{Leg: newTestLeg(clk, playPaced), STT: &scriptedSTT{results: results},
		TTS: &fakeTTS{name: "voice", clk: clk, how: stuck}, Agent: agent})
	askHours(r, agent, results)
	agent.say(reply3) // the stream stays open: the agent is still writing
	r.await(obs.TTSRequest, withText("We close at five."))
	r.await(obs.PlayoutFirstAudio, ofTurn(1))
	r.tick(200 * time.Millisecond) // the first sentence has played
	r.await(obs.PlayoutMark, named("t1-s1"))

	r.leg.hangUp()
	select {
	case <-r.c.Done():
	case <-time.After(30 * time.Second): // a safety net: the wait ends with the call
		t.Fatalf("the call did not end on the hang-up:\n%s", r.journal())
	}
	if reason := r.c.Reason(); reason != voice.EndCallerHangup {
		t.Errorf("the call ended %v, want caller_hangup", reason)
	}
	if err := agent.contexts()[0].Err(); err == nil {
		t.Error("the agent's run was left going")
	}
	goleak.VerifyNone(t, running)
	var line []string
	for _, l := range r.transcript() {
		if l.Role == voice.RoleAssistant {
			line = append(line, l.Text)
			if !l.Interrupted {
				t.Errorf("transcript line %+v not marked interrupted", l)
			}
		}
	}
	if len(line) != 1 || line[0] != "We open at nine." {
		t.Errorf("the reply's transcript lines %q, want what was heard: [\"We open at nine.\"]", line)
	}
}
