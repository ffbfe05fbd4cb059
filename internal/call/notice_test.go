package call

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

const (
	testNotice   = "This call is recorded."
	testGreeting = "Hello, how can I help?"
)

// The recording notice is the first thing said, played whole though the caller talks over
// it past the barge-in gate, transcribed, and never part of what the agent is told.
func TestTheNoticeIsHeardFirstAndWholeAndIsNotTheAgents(t *testing.T) {
	cfg := testConfig()
	cfg.Turn.Notice, cfg.Turn.FirstMessage = testNotice, testGreeting
	r, agent, tts, results := replyRig(t, cfg)

	r.await(obs.PlayoutFirstAudio, ofTurn(0))
	r.tick(cfg.Turn.BargeInGate + 20*time.Millisecond) // a greeting's gate would be open by now
	results <- voice.Transcript{Text: "hello hello is this thing on", Final: true}
	// The caller talks over the notice until it has played.
	noticePlayed := func() bool { return r.has(obs.PlayoutMark, named("t0-notice")) }
	for waited := 0; !noticePlayed(); waited++ {
		if waited > 500 {
			t.Fatalf("the notice never played:\n%s", r.journal())
		}
		r.frame(loudFrame)
		r.tick(20 * time.Millisecond)
	}
	for range 5 {
		r.frame(quietFrame)
	}
	r.playOut(0)
	if r.has(obs.BargeIn, nil) || r.has(obs.Clear, nil) || r.has(obs.TurnCommit, nil) {
		t.Fatalf("the caller cut the notice short:\n%s", r.journal())
	}

	reqs := tts.requests()
	if len(reqs) < 2 || reqs[0].text != testNotice || reqs[1].text != testGreeting {
		t.Fatalf("spoken %+v: want the notice, then the greeting", reqs)
	}
	if first := r.all(obs.TTSRequest, nil)[0]; first.Kind != "notice" {
		t.Errorf("first tts.request kind %q, want notice", first.Kind)
	}
	lines := r.transcript()
	i := slices.IndexFunc(lines, func(l store.TranscriptLine) bool { return l.Text == testNotice })
	j := slices.IndexFunc(lines, func(l store.TranscriptLine) bool { return l.Text == testGreeting })
	if i < 0 || j < 0 || i > j || lines[i].Role != voice.RoleAssistant || lines[i].Interrupted {
		t.Errorf("transcript %+v: want the notice, whole, then the greeting", lines)
	}

	results <- voice.Transcript{Text: "what are your hours", Final: true}
	r.until("the caller's turn reaches the agent", false, func() bool { return len(agent.requests()) == 1 })
	history := agent.requests()[0].History
	var said []string
	for _, m := range history {
		said = append(said, m.Content)
		if strings.Contains(m.Content, testNotice) {
			t.Errorf("the agent's history holds the notice: %+v", history)
		}
	}
	if !slices.Contains(said, testGreeting) {
		t.Errorf("history %q: want the greeting in it", said)
	}
}

// Once the notice has played, the greeting behind it can be interrupted as usual.
func TestTheGreetingAfterTheNoticeCanBeInterrupted(t *testing.T) {
	cfg := testConfig()
	cfg.Turn.Notice, cfg.Turn.FirstMessage = testNotice, testGreeting
	r, _, _, _ := replyRig(t, cfg)
	r.tickUntil("the notice plays", func() bool { return r.has(obs.PlayoutMark, named("t0-notice")) })
	r.tick(cfg.Turn.BargeInGate + 20*time.Millisecond)
	if r.has(obs.PlayoutDone, ofTurn(0)) {
		t.Fatalf("the greeting played out before its gate opened:\n%s", r.journal())
	}
	barge := r.interrupt()
	if barge.Turn != 0 {
		t.Errorf("barge-in of turn %d, want the greeting's (0)", barge.Turn)
	}
}

// A notice no voice could speak was not heard: the transcript does not claim it, the caller
// hears the error message after the greeting, and the call goes on.
func TestANoticeNoVoiceSpeaksIsNotTranscribed(t *testing.T) {
	cfg := testConfig()
	cfg.Turn.Notice, cfg.Turn.FirstMessage = testNotice, testGreeting
	clk := clock.NewFake(t0)
	tts := &fakeTTS{name: "voice", clk: clk, how: func(text string, _ int) ttsMode {
		if text == testNotice {
			return speakFail
		}
		return speakOK
	}}
	r := startRig(t, clk, cfg, Deps{Leg: newTestLeg(clk, playPaced), STT: &scriptedSTT{results: make(chan voice.Transcript)},
		TTS: tts, Agent: newPushAgent()})
	r.playOut(0)
	if !r.has(obs.TTSLost, withText(testNotice)) {
		t.Fatalf("no tts.lost for the notice:\n%s", r.journal())
	}
	for _, l := range r.transcript() {
		if l.Text == testNotice {
			t.Errorf("the transcript holds the notice no one heard: %+v", r.transcript())
		}
	}
	if tts.count(testGreeting) == 0 || tts.count(cfg.Turn.ErrorMessage) == 0 {
		t.Errorf("spoken %+v: want the greeting, then the error message", tts.requests())
	}
}
