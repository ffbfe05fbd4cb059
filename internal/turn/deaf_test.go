package turn

import (
	"testing"
	"time"
)

var (
	lost     = Input{Kind: STTLost}
	restored = Input{Kind: STTRestored}
)

const notice = "Sorry, I'm having trouble hearing you. One moment."

// deafCfg: no greeting, a hang-up after 30 s of silence, the notice configured.
var deafCfg = with(func(c *Config) { c.FirstMessage = ""; c.STTErrorMessage = notice })

// A caller who speaks while nothing can hear them is told once, however often they speak;
// the call ends SilenceHangup after the recognizer was lost, named for it, even though the
// caller kept talking.
func TestDeafCallerIsToldOnceAndTheCallEndsAsSTTFailed(t *testing.T) {
	m := run(deafCfg, []step{
		{0, start}, {1000, lost},
		{2000, speech}, {3000, quiet}, // told now
		{3100, wire(1)}, {3200, said(1, notice)}, {3300, queued(1)}, {5000, played(1)},
		{8000, speech}, {9000, quiet}, // not again
		{15000, speech}, {16000, quiet},
		{22000, speech}, {23000, quiet},
		{29000, speech}, {30000, quiet},
	}, 40000)
	mustContain(t, m.log, "3000:note stt.notice", `3000:say 1 "`+notice+`"`, "31000:end stt_failed")
	if got := pick(m.log, "say"); len(got) != 1 {
		t.Errorf("the notice was said %d times, want once: %v", len(got), got)
	}
	mustNotContain(t, m.log, "end silence", "Are you still there")
}

// The caller had finished speaking when the recognizer was lost: their words are unheard,
// so they are told at once.
func TestCallerWaitingForAnAnswerIsToldWhenTheRecognizerIsLost(t *testing.T) {
	m := run(deafCfg, []step{{0, start}, {1000, speech}, {2000, quiet}, {2500, lost}}, 0)
	mustContain(t, m.log, `2500:say 1 "`+notice+`"`)
	// Not while they are still talking: then at the end of what they say.
	m = run(deafCfg, []step{{0, start}, {1000, speech}, {2500, lost}, {4000, quiet}}, 0)
	mustNotContain(t, m.log, "2500:say")
	mustContain(t, m.log, `4000:say 1 "`+notice+`"`)
	// Nobody said anything: nothing to apologise for yet.
	m = run(deafCfg, []step{{0, start}, {2500, lost}}, 5000)
	mustNotContain(t, m.log, "say")
}

// A recognizer that comes back in time: no hang-up, and the call goes on as usual.
func TestRestoredRecognizerKeepsTheCall(t *testing.T) {
	m := run(deafCfg, []step{{0, start}, {1000, lost}, {2000, speech}, {3000, quiet}, {6000, restored},
		{6100, final("what are your hours")}}, 20000)
	mustContain(t, m.log, `6100:dispatch 2 "what are your hours"`)
	mustNotContain(t, m.log, "end ")
	if m.s.Deaf || m.s.Timers[TimerDeaf].Armed {
		t.Errorf("deaf %v, deaf timer armed %v after the recognizer came back", m.s.Deaf, m.s.Timers[TimerDeaf].Armed)
	}
}

// Silence while nothing can hear: the re-prompt is still said (the caller may truly be
// quiet), but the hang-up names the recognizer, not silence.
func TestSilenceWhileDeafEndsAsSTTFailed(t *testing.T) {
	cfg := with(func(c *Config) { c.FirstMessage = ""; c.STTErrorMessage = notice; c.SilenceHangup = 20 * time.Second })
	m := run(cfg, []step{{0, start}, {100, speech}, {200, quiet}, {300, final("hi")}, {400, wire(1)}, {500, queued(1)}, {600, played(1)},
		{5000, lost}}, 60000)
	mustContain(t, m.log, "end stt_failed")
	mustNotContain(t, m.log, "end silence")
}

// No notice configured: nobody is told (nor asked whether they are still there: nothing
// would hear the answer), and the call still ends as stt_failed.
func TestDeafWithoutNotice(t *testing.T) {
	cfg := with(func(c *Config) { c.FirstMessage = "" })
	m := run(cfg, []step{{0, start}, {1000, lost}, {2000, speech}, {3000, quiet}}, 40000)
	mustNotContain(t, m.log, "say", "stt.notice")
	mustContain(t, m.log, "31000:end stt_failed")
}

// A voicemail listens to nobody: losing the recognizer changes nothing.
func TestVoicemailIgnoresTheRecognizer(t *testing.T) {
	cfg := with(func(c *Config) { c.Voicemail = true; c.STTErrorMessage = notice })
	m := run(cfg, []step{{0, start}, {100, lost}, {200, wire(0)}, {300, queued(0)}}, 60000)
	mustNotContain(t, m.log, "stt_failed", notice)
}
