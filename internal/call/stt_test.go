package call

import (
	"errors"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

func sttRig(t *testing.T, cfg Config, fallback bool) (*rig, *fakeSTT, *fakeSTT, *fakeAgent) {
	t.Helper()
	clk := clock.NewFake(t0)
	// Opens wait until the test releases them.
	primary := &fakeSTT{name: "primary", clk: clk, hold: make(chan struct{})}
	agent := &fakeAgent{reply: func(said string) string { return "You said: " + said + "." }}
	deps := Deps{STT: primary, TTS: &fakeTTS{name: "voice", clk: clk}, Agent: agent}
	var fb *fakeSTT
	if fallback {
		fb = &fakeSTT{name: "fallback", clk: clk, hold: make(chan struct{})}
		deps.STTFallback = fb
	}
	return startRig(t, clk, cfg, deps), primary, fb, agent
}

// release lets opens of f through from now on.
func release(f *fakeSTT) {
	f.mu.Lock()
	if f.hold != nil {
		close(f.hold)
		f.hold = nil
	}
	f.mu.Unlock()
}

// The primary recognizer is down for the whole call and the fallback is slow to open: the
// caller who finishes speaking unheard is told once, the fallback then gets their held
// words and hears the turn, and the agent answers it.
func TestPrimaryDownFallbackHearsTheHeldTurn(t *testing.T) {
	r, primary, fallback, agent := sttRig(t, testConfig(), true)
	primary.set(unavailable)
	release(primary)
	r.until("the outage is announced to the turn machine", true, func() bool { return r.has(obs.STTLost, nil) })
	if !r.has(obs.STTError, named("primary")) {
		t.Errorf("the primary's failure is not journaled:\n%s", r.journal())
	}

	r.speak(10)
	r.speak(8) // spoken again before anything hears: still told only once
	notice := testConfig().Turn.STTErrorMessage
	r.until("the caller is told", true, func() bool { return r.has(obs.PlayoutDone, nil) })
	if n := len(r.all(obs.TTSRequest, withText(notice))); n != 1 {
		t.Fatalf("notice spoken %d times, want 1:\n%s", n, r.journal())
	}

	release(fallback)
	r.until("the fallback opens", true, func() bool { return fallback.streamCount() == 1 })
	s := fallback.stream(0)
	r.until("the held words reach the fallback", true, func() bool { loud, fin := s.heard(); return loud >= 18 && fin > 0 })
	s.results <- voice.Transcript{Text: "what are your hours", Final: true}
	r.until("the agent answers", true, func() bool {
		return r.has(obs.PlayoutDone, func(e obs.Event) bool { return e.Turn == 2 })
	})
	reqs := agent.requests()
	if len(reqs) != 1 || reqs[0].History[len(reqs[0].History)-1].Content != "what are your hours" {
		t.Fatalf("agent requests %+v", reqs)
	}
	if !r.has(obs.STTRecovered, named("fallback")) {
		t.Errorf("no stt.recovered naming the fallback:\n%s", r.journal())
	}
	if n := len(r.all(obs.TTSRequest, withText(notice))); n != 1 {
		t.Errorf("notice spoken %d times, want 1", n)
	}
}

// With a fallback that opens at once nothing goes unheard: no notice, the fallback hears
// the caller, and the call stays on it once the primary works again.
func TestFallbackTakesOverAtOnceAndStays(t *testing.T) {
	r, primary, fallback, agent := sttRig(t, testConfig(), true)
	primary.set(unavailable)
	release(fallback)
	release(primary)
	r.until("the fallback opens", true, func() bool { return fallback.streamCount() == 1 })
	primary.set(nil) // the primary mends: the call stays where it is

	r.speak(10)
	s := fallback.stream(0)
	r.until("the fallback hears the caller", true, func() bool { loud, fin := s.heard(); return loud == 10 && fin > 0 })
	s.results <- voice.Transcript{Text: "hello there", Final: true}
	r.until("the agent answers", true, func() bool { return r.has(obs.PlayoutDone, nil) })
	r.clk.Advance(time.Minute)
	if len(agent.requests()) != 1 {
		t.Errorf("agent requests: %d", len(agent.requests()))
	}
	if r.has(obs.STTLost, nil) || r.has(obs.TTSRequest, withText(testConfig().Turn.STTErrorMessage)) {
		t.Errorf("the caller was told of an outage they never noticed:\n%s", r.journal())
	}
	if n := len(primary.openTimes()); n != 1 {
		t.Errorf("primary opened %d times, want 1: the call stays on the working fallback", n)
	}
}

// Without a fallback the call keeps reopening the primary for as long as it lasts, the
// wait doubling from STTRetryMin and capped at STTRetryMax; when the primary mends it hears
// the caller again.
func TestRecognizerIsReopenedWithCappedBackoff(t *testing.T) {
	cfg := testConfig()
	cfg.STTRetryMin, cfg.STTRetryMax = 250*time.Millisecond, time.Second
	r, primary, _, _ := sttRig(t, cfg, false)
	primary.set(unavailable)
	release(primary)
	want := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second, time.Second, time.Second}
	for i, gap := range want {
		r.until("the open fails", false, func() bool { return len(r.all(obs.STTError, nil)) == i+1 })
		r.clk.Advance(gap)
		r.until("the next open", false, func() bool { return len(primary.openTimes()) == i+2 })
	}
	r.until("the open fails", false, func() bool { return len(r.all(obs.STTError, nil)) == len(want)+1 })
	opens := primary.openTimes()
	for i, gap := range want {
		if got := opens[i+1].Sub(opens[i]); got != gap {
			t.Errorf("wait before open %d = %v, want %v", i+2, got, gap)
		}
	}
	primary.set(nil)
	r.clk.Advance(time.Second)
	r.until("the primary is back", false, func() bool { return primary.streamCount() == 1 })
	r.until("recovery is journaled", false, func() bool {
		return r.has(obs.STTRecovered, func(e obs.Event) bool { return e.Name == "primary" && e.Count == len(want)+2 })
	})
	if n := len(r.all(obs.STTError, nil)); n != len(want)+1 {
		t.Errorf("%d stt.error events, want one per failed open (%d)", n, len(want)+1)
	}
}

// A stream that dies while the caller speaks: the reopened one gets what the caller had
// said since the last final transcript, so the utterance is heard whole.
func TestReopenedRecognizerHearsTheUtteranceCutOff(t *testing.T) {
	r, primary, _, agent := sttRig(t, testConfig(), false)
	release(primary)
	r.until("the primary opens", false, func() bool { return primary.streamCount() == 1 })
	first := primary.stream(0)
	first.results <- voice.Transcript{Text: "hello", Final: true}
	r.until("the first turn is answered", true, func() bool { return r.has(obs.PlayoutDone, nil) })

	for range 6 {
		r.frame(loudFrame)
	}
	first.die(&voice.ProviderError{Provider: "primary", Op: "reopen stream", Kind: voice.KindTransient, Err: errors.New("gave up")})
	r.speak(4) // the rest of the utterance, heard by nothing
	r.until("the primary is reopened", true, func() bool { return primary.streamCount() == 2 })
	second := primary.stream(1)
	r.until("the whole utterance reaches it", true, func() bool { loud, fin := second.heard(); return loud == 10 && fin > 0 })
	second.results <- voice.Transcript{Text: "what are your hours", Final: true}
	r.until("the second turn", true, func() bool { return len(agent.requests()) == 2 })
	if r.has(obs.STTLost, nil) {
		t.Errorf("a quick reopen was announced as an outage:\n%s", r.journal())
	}
}

// Nothing can hear the caller for the rest of the call: they are told once, the call keeps
// trying, and it ends after HANDSET_SILENCE_HANGUP as stt_failed, never as silence.
func TestCallNobodyCanHearEndsAsSTTFailed(t *testing.T) {
	cfg := testConfig()
	cfg.Turn.SilenceHangup = 10 * time.Second
	cfg.STTRetryMax = time.Second
	r, primary, _, _ := sttRig(t, cfg, false)
	primary.set(unavailable)
	release(primary)
	r.until("the outage is announced", true, func() bool { return r.has(obs.STTLost, nil) })
	r.speak(10)
	if reason := r.end(); reason != voice.EndSTTFailed {
		t.Fatalf("call ended %v, want stt_failed:\n%s", reason, r.journal())
	}
	if n := len(r.all(obs.TTSRequest, withText(cfg.Turn.STTErrorMessage))); n != 1 {
		t.Errorf("notice spoken %d times, want 1", n)
	}
	// 0, 0.25, 0.75, 1.75 s, then every second: about 11 before the end at 11 s.
	if n := len(primary.openTimes()); n < 9 {
		t.Errorf("only %d opens in 11 s: the call stopped trying", n)
	}
	if !r.has(obs.CallEnd, func(e obs.Event) bool { return e.Reason == "stt_failed" }) {
		t.Errorf("call.end does not name the cause:\n%s", r.journal())
	}
}
