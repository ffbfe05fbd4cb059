package call

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

const reply3 = "We open at nine. We close at five. See you soon."

// ttsRig: a caller whose first words are answered with reply3, spoken by voice (and
// fallback, when set).
func ttsRig(t *testing.T, cfg Config, primary, fallback func(text string, try int) ttsMode) (*rig, *fakeTTS, *fakeTTS, *fakeAgent) {
	t.Helper()
	clk := clock.NewFake(t0)
	stt := &fakeSTT{name: "stt", clk: clk}
	agent := &fakeAgent{reply: func(said string) string {
		if said == "bye" {
			return "Goodbye."
		}
		return reply3
	}}
	v := &fakeTTS{name: "voice", clk: clk, how: primary}
	deps := Deps{STT: stt, TTS: v, Agent: agent}
	var fb *fakeTTS
	if fallback != nil {
		fb = &fakeTTS{name: "backup", clk: clk, how: fallback}
		deps.TTSFallback = fb
	}
	r := startRig(t, clk, cfg, deps)
	r.until("the recognizer opens", false, func() bool { return stt.streamCount() == 1 })
	r.speak(5)
	stt.stream(0).results <- voice.Transcript{Text: "what are your hours", Final: true}
	r.stt = stt
	return r, v, fb, agent
}

// nextTurn has the caller say "bye" and waits for the agent's request.
func (r *rig) nextTurn(agent *fakeAgent) voice.TurnRequest {
	r.t.Helper()
	n := len(agent.requests())
	r.speak(5)
	r.stt.stream(0).results <- voice.Transcript{Text: "bye", Final: true}
	r.until("the next turn reaches the agent", true, func() bool { return len(agent.requests()) > n })
	return agent.requests()[n]
}

func failText(text string, times int) func(string, int) ttsMode {
	return func(t string, try int) ttsMode {
		if t == text && try < times {
			return speakFail
		}
		return speakOK
	}
}

func playedTurn(r *rig, turn int) func() bool {
	return func() bool { return r.has(obs.PlayoutDone, func(e obs.Event) bool { return e.Turn == turn }) }
}

// heardAll: turn 1's transcript line holds exactly these sentences.
func heardAll(t *testing.T, r *rig, sentences ...string) {
	t.Helper()
	var got string
	r.until("turn 1's transcript line", true, func() bool {
		for _, l := range r.transcript() {
			if l.Role == voice.RoleAssistant && l.Turn == 1 {
				got = l.Text
				return true
			}
		}
		return false
	})
	if want := strings.Join(sentences, " "); got != want {
		t.Errorf("transcript of turn 1 = %q, want %q:\n%s", got, want, r.journal())
	}
}

// A sentence whose synthesis fails once is tried again on the same voice and played.
func TestSentenceFailingOnceIsRetriedAndPlayed(t *testing.T) {
	r, v, _, agent := ttsRig(t, testConfig(), failText("We close at five.", 1), nil)
	r.until("the reply plays", true, playedTurn(r, 1))
	if n := v.count("We close at five."); n != 2 {
		t.Errorf("the failing sentence was requested %d times, want 2", n)
	}
	if len(r.all(obs.TTSError, named("voice"))) != 1 || r.has(obs.TTSLost, nil) {
		t.Errorf("want one tts.error and nothing lost:\n%s", r.journal())
	}
	heardAll(t, r, "We open at nine.", "We close at five.", "See you soon.")
	req := r.nextTurn(agent)
	if got := req.History[len(req.History)-2].Content; got != reply3 {
		t.Errorf("history holds %q, want the whole reply", got)
	}
}

// A voice that keeps failing a sentence: after its second try the fallback voice speaks it.
func TestFailingVoiceFallsBack(t *testing.T) {
	r, v, fb, _ := ttsRig(t, testConfig(), failText("We close at five.", 99), func(string, int) ttsMode { return speakOK })
	r.until("the reply plays", true, playedTurn(r, 1))
	if n, m := v.count("We close at five."), fb.count("We close at five."); n != 2 || m != 1 {
		t.Errorf("primary asked %d times (want 2), fallback %d (want 1)", n, m)
	}
	if !r.has(obs.TTSFallback, func(e obs.Event) bool { return e.Name == "backup" && e.Turn == 1 }) {
		t.Errorf("no tts.fallback:\n%s", r.journal())
	}
	heardAll(t, r, "We open at nine.", "We close at five.", "See you soon.")
	// The primary failed: for TTSHold the fallback speaks first.
	if n := v.count("See you soon."); n != 0 {
		t.Errorf("the primary was asked for the next sentence %d times inside the hold", n)
	}
}

// A voice that never sends its first byte: the sentence goes to the fallback exactly
// TTSTimeout after it was asked for, with no second wait on the stalled voice.
func TestStallingVoiceTimesOutToTheFallback(t *testing.T) {
	cfg := testConfig()
	cfg.TTSTimeout = 2 * time.Second
	cfg.Turn.FirstMessage = "Hello."
	clk := clock.NewFake(t0)
	v := &fakeTTS{name: "voice", clk: clk, how: func(string, int) ttsMode { return speakStall }}
	fb := &fakeTTS{name: "backup", clk: clk}
	r := startRig(t, clk, cfg, Deps{STT: &fakeSTT{name: "stt", clk: clk}, TTS: v, TTSFallback: fb, Agent: &fakeAgent{}})
	r.until("the greeting is asked for", false, func() bool { return len(v.requests()) == 1 })
	asked := v.requests()[0].at
	clk.Advance(cfg.TTSTimeout - time.Millisecond)
	clk.Advance(time.Millisecond)
	r.until("the fallback is asked", false, func() bool { return len(fb.requests()) == 1 })
	if got := fb.requests()[0].at.Sub(asked); got != cfg.TTSTimeout {
		t.Errorf("fallback asked %v after the stalled request, want exactly %v", got, cfg.TTSTimeout)
	}
	r.until("the greeting plays", true, playedTurn(r, 0))
	if n := len(v.requests()); n != 1 {
		t.Errorf("the stalled voice was asked %d times, want once", n)
	}
	if !r.has(obs.TTSError, func(e obs.Event) bool { return e.Name == "voice" && e.Kind == "timeout" }) {
		t.Errorf("the stall is not journaled as a timeout:\n%s", r.journal())
	}
}

// A sentence no voice could speak: the caller never heard it, so neither the agent's
// history nor the transcript holds it, and the caller hears the error message instead.
func TestSentenceNoVoiceSpokeIsNotInHistoryOrTranscript(t *testing.T) {
	always := failText("We close at five.", 99)
	r, _, _, agent := ttsRig(t, testConfig(), always, always)
	r.until("the reply plays", true, playedTurn(r, 1))
	if !r.has(obs.TTSLost, withText("We close at five.")) {
		t.Fatalf("no tts.lost:\n%s", r.journal())
	}
	if !r.has(obs.TTSRequest, func(e obs.Event) bool { return e.Turn == 1 && e.Text == testConfig().Turn.ErrorMessage }) {
		t.Errorf("the caller was not told something went wrong:\n%s", r.journal())
	}
	heardAll(t, r, "We open at nine.", "See you soon.")
	req := r.nextTurn(agent)
	if got := req.History[len(req.History)-2]; got.Role != voice.RoleAssistant || got.Content != "We open at nine. See you soon." {
		t.Errorf("the agent's history holds %+v, want only what was played", got)
	}
}

// A voice that breaks partway through a sentence: the sentence is spoken again from its
// start, and the history holds it once.
func TestSentenceCutOffIsSpokenAgain(t *testing.T) {
	cut := func(text string, try int) ttsMode {
		if text == "We close at five." && try == 0 {
			return speakCut
		}
		return speakOK
	}
	r, v, _, agent := ttsRig(t, testConfig(), cut, nil)
	r.until("the reply plays", true, playedTurn(r, 1))
	if n := v.count("We close at five."); n != 2 {
		t.Errorf("the cut sentence was requested %d times, want 2", n)
	}
	heardAll(t, r, "We open at nine.", "We close at five.", "See you soon.")
	req := r.nextTurn(agent)
	if got := req.History[len(req.History)-2].Content; got != reply3 {
		t.Errorf("history holds %q, want the reply once", got)
	}
}

// No voice can say anything, not even the error message: the call ends as tts_failed
// rather than leave the caller in silence.
func TestNoVoiceAtAllEndsTheCallAsTTSFailed(t *testing.T) {
	cfg := testConfig()
	cfg.Turn.FirstMessage = "Hello."
	clk := clock.NewFake(t0)
	dead := func(string, int) ttsMode { return speakFail }
	r := startRig(t, clk, cfg, Deps{STT: &fakeSTT{name: "stt", clk: clk},
		TTS: &fakeTTS{name: "voice", clk: clk, how: dead}, TTSFallback: &fakeTTS{name: "backup", clk: clk, how: dead},
		Agent: &fakeAgent{}})
	if reason := r.end(); reason != voice.EndTTSFailed {
		t.Fatalf("call ended %v, want tts_failed:\n%s", reason, r.journal())
	}
	if !r.has(obs.TTSLost, withText("Hello.")) || !r.has(obs.TTSLost, withText(cfg.Turn.ErrorMessage)) {
		t.Errorf("want the greeting and the error message lost:\n%s", r.journal())
	}
}

// With no other voice to go to, a voice that stalled is asked once more when the timeout
// runs out; if that works, the sentence plays.
func TestStalledOnlyVoiceIsAskedAgain(t *testing.T) {
	cfg := testConfig()
	cfg.TTSTimeout = 2 * time.Second
	cfg.Turn.FirstMessage = "Hello."
	clk := clock.NewFake(t0)
	v := &fakeTTS{name: "voice", clk: clk, how: func(_ string, try int) ttsMode {
		if try == 0 {
			return speakStall
		}
		return speakOK
	}}
	r := startRig(t, clk, cfg, Deps{STT: &fakeSTT{name: "stt", clk: clk}, TTS: v, Agent: &fakeAgent{}})
	r.until("the greeting is asked for", false, func() bool { return len(v.requests()) == 1 })
	clk.Advance(cfg.TTSTimeout)
	r.until("the greeting is asked for again", false, func() bool { return len(v.requests()) == 2 })
	if got := v.requests()[1].at.Sub(v.requests()[0].at); got != cfg.TTSTimeout {
		t.Errorf("asked again after %v, want %v", got, cfg.TTSTimeout)
	}
	r.until("the greeting plays", true, playedTurn(r, 0))
	if r.has(obs.TTSLost, nil) {
		t.Errorf("the greeting was lost:\n%s", r.journal())
	}
}

// A reply that ran its course lets go of its context: left uncancelled, every turn's
// context stayed among the call's children until the call ended, a call's memory growing
// with its turns.
func TestFinishedReplyReleasesItsContext(t *testing.T) {
	r, _, _, agent := ttsRig(t, testConfig(), func(string, int) ttsMode { return speakOK }, nil)
	r.until("turn 1 plays out", true, playedTurn(r, 1))
	first := r.currentReply()
	r.nextTurn(agent)
	r.until("turn 2 plays out", true, playedTurn(r, 2))
	second := r.currentReply()
	if first == nil || second == nil || first == second {
		t.Fatalf("replies of turns 1 and 2: %p, %p", first, second)
	}
	for i, rep := range []*reply{first, second} {
		r.until(fmt.Sprintf("reply %d's context is released", i+1), false, func() bool { return rep.ctx.Err() != nil })
	}
	if err := r.c.ctx.Err(); err != nil {
		t.Fatalf("the call itself ended: %v", err)
	}
}

// currentReply reads the call's reply on its owner loop.
func (r *rig) currentReply() *reply {
	got := make(chan *reply, 1)
	r.c.post(inLoop(func() { got <- r.c.reply }))
	select {
	case rep := <-got:
		return rep
	case <-time.After(30 * time.Second):
		r.t.Fatal("the owner loop never ran the probe")
		return nil
	}
}
