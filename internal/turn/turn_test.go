package turn

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// base is the default configuration: the spec's defaults.
var base = Config{
	FirstMessage: "Hello, how can I help?", ErrorMessage: "Sorry, something went wrong.",
	LongTurnMessage: "One moment please.", LongTurnAfter: 4 * time.Second,
	SilenceMessage: "Are you still there?", SilenceReprompt: 8 * time.Second, SilenceHangup: 30 * time.Second,
	BargeInGate: 500 * time.Millisecond, BargeInConfirm: 1500 * time.Millisecond,
	TailGrace: 1500 * time.Millisecond, MaxCall: time.Hour,
}

func with(f func(*Config)) Config { c := base; f(&c); return c }

// A reply for turn 1 whose audio went out at 1000 ms and was fully queued at 1200 ms.
func speakingTurn1() []step {
	return []step{
		{0, start}, {200, wire(0)}, {300, said(0, "Hello, how can I help?")}, {400, queued(0)}, {2000, played(0)},
		{4000, speech}, {4800, quiet}, {4900, final("what are your opening hours")},
		{5000, said(1, "We open at nine.")}, {5100, wire(1)}, {5200, said(1, "We close at five.")}, {5300, queued(1)},
	}
}

func TestGreetingAndATurn(t *testing.T) {
	m := run(base, append(speakingTurn1(), step{8000, played(1)}), 8000)
	if diff := cmp.Diff([]string{
		`0:say 0 "Hello, how can I help?"`,
		`4800:finalize_stt`,
		`4900:dispatch 1 "what are your opening hours"`,
	}, pick(m.log, "say", "dispatch", "finalize", "clear", "cancel_turn")); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if m.s.Phase != TailGrace {
		t.Errorf("phase %v, want tail_grace right after playout", m.s.Phase)
	}
	m.advance(at(9500))
	if m.s.Phase != Idle {
		t.Errorf("phase %v after the grace, want idle", m.s.Phase)
	}
}

// patter 4.3 #1 and bug "multi-turn silence": speech in the tail grace is the next turn.
func TestSpeechInTailGraceIsANewTurnNotABargeIn(t *testing.T) {
	m := run(base, append(speakingTurn1(), step{8000, played(1)}, step{8300, speech}), 0)
	mustContain(t, m.log, "8300:note turn.rescue", "8300:replay_inbound")
	mustNotContain(t, m.log, "clear_playout", "record_interrupted", "cancel_turn")
	if m.s.Phase != Idle || !m.s.ListeningToSTT() {
		t.Fatalf("phase %v listening %v: the caller's words must reach STT", m.s.Phase, m.s.ListeningToSTT())
	}
	m.at(9100, quiet)
	m.at(9200, final("and on sundays"))
	mustContain(t, m.log, `9200:dispatch 2 "and on sundays"`)
}

// patter 4.3 #2: speech while the reply plays (gate open) clears exactly once.
func TestBargeInWhileSpeakingClearsExactlyOnce(t *testing.T) {
	m := run(base, append(speakingTurn1(), step{5700, speech}, step{5800, speech}), 0)
	if diff := cmp.Diff([]string{
		"5700:cancel_turn 1", "5700:clear_playout 1", "5700:record_interrupted 1", "5700:replay_inbound",
	}, pick(m.log[len(m.log)-10:], "cancel_turn", "clear", "record", "replay")); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if m.s.Phase != Idle {
		t.Errorf("phase %v, want idle", m.s.Phase)
	}
}

// patter 4.3 #3: grace is entered only after playout, cleared by the next turn, and a
// zero grace never enters it.
func TestTailGraceLifecycle(t *testing.T) {
	m := run(base, append(speakingTurn1(), step{8000, played(1)}), 0)
	if m.s.Phase != TailGrace {
		t.Fatalf("phase %v", m.s.Phase)
	}
	m.advance(at(9499))
	if m.s.Phase != TailGrace {
		t.Fatalf("grace ended early: %v", m.s.Phase)
	}
	m.advance(at(9500))
	mustContain(t, m.log, "9500:reset_vad")
	if m.s.Phase != Idle {
		t.Fatalf("phase %v after grace", m.s.Phase)
	}
	noGrace := run(with(func(c *Config) { c.TailGrace = 0 }), append(speakingTurn1(), step{8000, played(1)}), 0)
	if noGrace.s.Phase != Idle {
		t.Errorf("grace 0: phase %v, want idle at once", noGrace.s.Phase)
	}
	mustNotContain(t, noGrace.log, "arm tail_grace")
}

// patter 4.3 #4 and bug "detects the interruption but keeps talking": while the carrier
// still plays its backlog the agent holds the floor and barge-in is armed.
func TestBacklogStaysInterruptible(t *testing.T) {
	m := run(base, append(speakingTurn1(), step{7000, speech}), 0)
	if m.s.Phase != Idle {
		t.Fatalf("phase %v", m.s.Phase)
	}
	mustContain(t, m.log, "7000:clear_playout 1")
}

// patter 4.3 #5: with STT forwarded while speaking, a confirming transcript during the
// backlog cancels fully.
func TestTranscriptDuringBacklogCancels(t *testing.T) {
	cfg := with(func(c *Config) { c.ForwardSTTWhileSpeaking = true })
	m := run(cfg, append(speakingTurn1(), step{6500, final("stop stop I have another question")}), 0)
	mustContain(t, m.log, "6500:cancel_turn 1", "6500:clear_playout 1", `6500:dispatch 2 "stop stop I have another question"`)
	mustNotContain(t, m.log, "6500:replay_inbound")
}

// patter 4.3 #9 and #11: echo helpers; echo never interrupts; real speech does.
func TestEchoGuard(t *testing.T) {
	agent := "We open at nine on weekdays and at ten on Saturdays."
	tests := []struct {
		transcript string
		echo       bool
	}{
		{"we open at nine on weekdays", true},      // ≥ 4 words, verbatim
		{"open at mine on weekdays and ten", true}, // garbled, ≥ 60 % shared words
		{"Saturdays", false},                       // short answers repeating offered words
		{"at ten on saturdays", true},              // 4 words verbatim
		{"ten please", false},                      // 2 words
		{"what about sunday mornings then", false}, // unrelated
		{"", false}, // empty
		{"WE OPEN, AT NINE... on weekdays!", true}, // normalisation
	}
	for _, tt := range tests {
		if got := IsEcho(tt.transcript, agent); got != tt.echo {
			t.Errorf("IsEcho(%q) = %v, want %v", tt.transcript, got, tt.echo)
		}
	}
	cfg := with(func(c *Config) { c.ForwardSTTWhileSpeaking = true })
	m := run(cfg, append(speakingTurn1(), step{5800, final("we open at nine")}), 0)
	mustContain(t, m.log, `5800:note stt.dropped echo: we open at nine`)
	mustNotContain(t, m.log, "clear_playout")
	m.at(6000, final("no I meant on sunday"))
	mustContain(t, m.log, "6000:clear_playout 1", `6000:dispatch 2 "no I meant on sunday"`)
}

// patter 4.3 #10 and bug "fast real follow-up swallowed by dedup".
func TestDuplicateFilters(t *testing.T) {
	m := run(base, []step{
		{0, final("no")}, {300, final("nothing else")}, // a different fast follow-up is kept
		{5000, final("book a table")}, {5300, final("book a table for two")}, // word-prefix twin within 500 ms
		{9000, final("yes")}, {10500, final("Yes.")}, // identical within 2 s
		{14000, final("yes")}, {16500, final("yes")}, // identical after 2 s is a new answer
	}, 0)
	if diff := cmp.Diff([]string{
		`0:dispatch 1 "no"`, `300:dispatch 2 "nothing else"`, `5000:dispatch 3 "book a table"`,
		`9000:dispatch 4 "yes"`, `14000:dispatch 5 "yes"`, `16500:dispatch 6 "yes"`,
	}, pick(m.log, "dispatch")); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	mustContain(t, m.log, `5300:note stt.dropped duplicate: book a table for two`, `10500:note stt.dropped duplicate: Yes.`)
}

func TestNonSpeechHallucinationsAreDroppedRealWordsNever(t *testing.T) {
	for _, h := range []string{"Thanks for watching!", "[music]", "(applause)", "[BLANK_AUDIO]", "Thank you for watching. [Music]"} {
		if !IsHallucination(h) {
			t.Errorf("%q should be dropped", h)
		}
	}
	for _, real := range []string{"yes", "thanks", "okay", "no thank you", "thanks for watching my dog tomorrow", "music please"} {
		if IsHallucination(real) {
			t.Errorf("%q is a real answer", real)
		}
	}
	m := run(base, []step{{0, final("[music]")}, {100, final("okay")}}, 0)
	if diff := cmp.Diff([]string{`100:dispatch 1 "okay"`}, pick(m.log, "dispatch")); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// patter 4.3 #14: the long-turn filler.
func TestLongTurnFiller(t *testing.T) {
	t.Run("slow turn: filler once, before the reply", func(t *testing.T) {
		m := run(base, []step{{0, final("look up my order")}, {4050, filler(1, "One moment please.")}, {4300, wire(1)},
			{9000, said(1, "Your order shipped.")}}, 20000)
		if diff := cmp.Diff([]string{`0:dispatch 1 "look up my order"`, `4000:say 1 "One moment please."`},
			pick(m.log, "dispatch", "say")); diff != "" {
			t.Errorf("(-want +got)\n%s", diff)
		}
	})
	t.Run("fast turn: no filler, timer cancelled", func(t *testing.T) {
		m := run(base, []step{{0, final("hi")}, {800, said(1, "Hello!")}, {900, wire(1)}}, 20000)
		mustNotContain(t, m.log, "say 1", "note filler")
		mustContain(t, m.log, "800:cancel filler")
	})
	t.Run("unset: nothing", func(t *testing.T) {
		m := run(with(func(c *Config) { c.LongTurnMessage = "" }), []step{{0, final("hi")}}, 20000)
		mustNotContain(t, m.log, "filler")
	})
	t.Run("floor lost before the timer: silent", func(t *testing.T) {
		m := run(base, []step{{0, final("hi")}, {1000, hangup}}, 20000)
		mustNotContain(t, m.log, "say 1")
	})
	t.Run("a reply sentence already in TTS: no filler", func(t *testing.T) {
		m := run(base, []step{{0, final("hi")}, {3900, said(1, "Let me see.")}}, 20000)
		mustNotContain(t, m.log, "say 1")
	})
}

// patter 4.3 #15 and bug "agent mute after greeting": the gate is closed before first audio
// and for the gate length after it.
func TestBargeInGate(t *testing.T) {
	m := run(base, []step{{0, start}, {100, speech}}, 0)
	mustNotContain(t, m.log, "clear_playout")
	m = run(base, []step{{0, start}, {200, wire(0)}, {300, speech}}, 0)
	mustNotContain(t, m.log, "clear_playout")
	mustContain(t, m.log, "300:note barge_in.suppressed")
	m = run(base, []step{{0, start}, {200, wire(0)}, {699, speech}}, 0)
	mustNotContain(t, m.log, "clear_playout")
	m = run(base, []step{{0, start}, {200, wire(0)}, {700, speech}}, 0)
	mustContain(t, m.log, "700:clear_playout 0")
	// A slow first token: nothing on the wire after 20 s, so noise cannot cancel the turn.
	m = run(base, []step{{0, final("hi")}, {20000, speech}}, 0)
	mustNotContain(t, m.log, "clear_playout", "cancel_turn")
}

// bug "greeting cancelled by carrier noise within 100 ms of pickup".
func TestPickupNoiseDoesNotCancelTheGreeting(t *testing.T) {
	m := run(base, []step{{0, start}, {50, wire(0)}, {150, speech}, {400, quiet}}, 0)
	mustNotContain(t, m.log, "cancel_turn", "clear_playout")
	if m.s.Phase != Speaking {
		t.Errorf("phase %v", m.s.Phase)
	}
}

// patter 4.3 #16: transcript-confirmed barge-in.
func TestPendingBargeIn(t *testing.T) {
	cfg := with(func(c *Config) { c.BargeInMinWords = 2 })
	t.Run("confirmed by enough words", func(t *testing.T) {
		m := run(cfg, append(speakingTurn1(), step{5800, speech}, step{6100, partial("wait")}, step{6300, partial("wait a second")}), 0)
		mustContain(t, m.log, "5800:note barge_in.pending", "5800:replay_inbound", "6300:clear_playout 1")
		mustNotContain(t, m.log, "6100:clear")
		if !m.s.ListeningToSTT() {
			t.Error("STT must hear the caller after the barge-in")
		}
	})
	t.Run("not confirmed: the agent carries on", func(t *testing.T) {
		m := run(cfg, append(speakingTurn1(), step{5800, speech}, step{6000, quiet}), 7400)
		mustContain(t, m.log, "7300:note barge_in.resumed")
		mustNotContain(t, m.log, "clear_playout 1")
		if m.s.Phase != Draining {
			t.Errorf("phase %v, want draining (the reply was fully queued)", m.s.Phase)
		}
	})
	t.Run("hang-up cancels the pending timer", func(t *testing.T) {
		m := run(cfg, append(speakingTurn1(), step{5800, speech}, step{6000, hangup}), 0)
		if got := armedTimers(m.s); len(got) != 0 {
			t.Errorf("timers still armed after hang-up: %v", got)
		}
		mustContain(t, m.log, "6000:cancel confirm")
	})
}

// bug "self-interrupt on own echo with forward-STT and no AEC".
func TestForwardedEchoDoesNotSelfInterrupt(t *testing.T) {
	cfg := with(func(c *Config) { c.ForwardSTTWhileSpeaking = true })
	m := run(cfg, append(speakingTurn1(), step{5700, speech}, step{6000, partial("we open at nine")},
		step{6400, final("we open at nine")}), 7300)
	mustContain(t, m.log, "5700:note barge_in.pending", "7200:note barge_in.resumed")
	mustNotContain(t, m.log, "clear_playout 1")
}

// patter 4.3 #18 and bug "one-shot barge-in": the VAD is reset at every agent turn and at
// the end of the grace.
func TestVADResets(t *testing.T) {
	m := run(base, append(speakingTurn1(), step{8000, played(1)}), 9600)
	mustContain(t, m.log, "0:reset_vad", "4900:reset_vad", "9500:reset_vad")
}

// patter 4.3 #19: speech swallowed by the closed gate reaches STT when the agent is done.
func TestSuppressedSpeechIsReplayedAtGraceEnd(t *testing.T) {
	m := run(base, []step{{0, start}, {100, wire(0)}, {200, speech}, {350, quiet}, {400, queued(0)}, {1200, played(0)}}, 2800)
	mustContain(t, m.log, "200:note barge_in.suppressed", "2700:replay_inbound")
}

// bug "stale cancel token killing the next turn": late events of a cancelled turn are
// ignored and the new turn proceeds.
func TestCancelledTurnsEventsAreStale(t *testing.T) {
	m := run(base, []step{
		{0, final("one")}, {300, final("two")},
		{400, failed(1, "transient")}, {500, wire(1)}, {600, queued(1)}, {700, played(1)},
		{800, said(2, "Two it is.")}, {900, wire(2)},
	}, 0)
	mustNotContain(t, m.log, "say 1")
	if m.s.Phase != Speaking || m.s.Turn != 2 {
		t.Errorf("phase %v turn %d, want speaking turn 2", m.s.Phase, m.s.Turn)
	}
}

// bug "barge-in impossible during long runtime turns": a 60 s tool run, the filler goes
// out, and the caller can interrupt once it plays.
func TestBargeInDuringALongToolRun(t *testing.T) {
	m := run(base, []step{
		{0, final("check all my orders")}, {4050, filler(1, "One moment please.")}, {4100, wire(1)},
		{5000, speech},
	}, 0)
	mustContain(t, m.log, "4000:say 1", "5000:cancel_turn 1", "5000:clear_playout 1")
	// Without a filler the caller's next words replace the turn as soon as STT has them.
	m = run(with(func(c *Config) { c.LongTurnMessage = "" }), []step{
		{0, final("check all my orders")}, {30000, speech}, {30800, quiet}, {30900, final("actually never mind")},
	}, 0)
	mustContain(t, m.log, "30900:cancel_turn 1", `30900:dispatch 2 "actually never mind"`)
}

func TestAgentErrors(t *testing.T) {
	m := run(base, []step{{0, final("hi")}, {500, failed(1, "transient")}}, 0)
	mustContain(t, m.log, `500:say 1 "Sorry, something went wrong."`, "500:cancel filler")
	m = run(base, []step{{0, final("hi")}, {500, failed(1, "canceled")}}, 0)
	mustNotContain(t, m.log, "say 1")
	m = run(base, append(speakingTurn1(), step{8000, played(1)}, step{8100, failed(1, "transient")}), 0)
	mustNotContain(t, m.log, `say 1 "Sorry`) // the turn is over: nothing to apologise for
}

func TestDTMF(t *testing.T) {
	m := run(base, []step{{0, dtmf("5")}}, 0)
	mustContain(t, m.log, `0:dispatch 1 "[DTMF 5]"`)
	// A key while the agent speaks interrupts at once, even inside the gate.
	m = run(base, append(speakingTurn1(), step{5150, dtmf("#")}), 0)
	mustContain(t, m.log, "5150:clear_playout 1", `5150:dispatch 2 "[DTMF #]"`)
}

func TestSilenceRepromptAndHangup(t *testing.T) {
	cfg := with(func(c *Config) { c.FirstMessage = "" })
	m := run(cfg, []step{{0, start}, {8100, wire(1)}, {8200, queued(1)}, {9000, played(1)}}, 40000)
	mustContain(t, m.log, `8000:say 1 "Are you still there?"`, "note silence.reprompt")
	// 8 s to the re-prompt, 1.5 s grace, then the remaining 22 s of silence.
	mustContain(t, m.log, "32500:end silence")
	// Speech resets the clock and the re-prompt.
	m = run(cfg, []step{{0, start}, {7000, speech}, {8000, quiet}, {8100, final("hello")}}, 15000)
	mustNotContain(t, m.log, "Are you still there")
}

func TestMaxCallLength(t *testing.T) {
	m := run(with(func(c *Config) { c.MaxCall = time.Minute }), []step{{0, start}, {500, final("tell me everything")}}, 61000)
	mustContain(t, m.log, "60000:cancel_turn 1", "60000:end max_duration")
	if m.s.Phase != Ended || len(armedTimers(m.s)) != 0 {
		t.Errorf("phase %v timers %v", m.s.Phase, armedTimers(m.s))
	}
}

func TestHangupEndsEverything(t *testing.T) {
	m := run(base, append(speakingTurn1(), step{5800, hangup}, step{6000, final("again")}), 0)
	mustContain(t, m.log, "5800:cancel_turn 1", "5800:end caller_hangup")
	mustNotContain(t, m.log, "6000:")
	if len(armedTimers(m.s)) != 0 || m.ends != 1 {
		t.Errorf("timers %v, ends %d", armedTimers(m.s), m.ends)
	}
}

func TestCutAtWord(t *testing.T) {
	text := "We open at nine."
	tests := []struct {
		frac float64
		want string
	}{
		{0, ""}, {0.1, ""}, {0.2, "We"}, {0.45, "We open"}, {0.5, "We open"}, {0.63, "We open at"}, {0.99, "We open at"}, {1, text},
	}
	for _, tt := range tests {
		if got := CutAtWord(text, tt.frac); got != tt.want {
			t.Errorf("CutAtWord(%.2f) = %q, want %q", tt.frac, got, tt.want)
		}
	}
}

// A caller who starts inside the gate and is still talking when it opens interrupts then
// (a short filler can end before the gate does, and the caller must not go unheard).
func TestSpeechThroughTheGateInterruptsWhenItOpens(t *testing.T) {
	m := run(base, []step{{0, final("check my orders")}, {4050, filler(1, "One moment.")}, {4100, wire(1)}, {4300, speech}}, 4700)
	mustContain(t, m.log, "4300:note barge_in.suppressed", "4600:cancel_turn 1", "4600:clear_playout 1")
	// A burst that ended inside the gate does not.
	m = run(base, []step{{0, final("check my orders")}, {4050, filler(1, "One moment.")}, {4100, wire(1)}, {4300, speech}, {4450, quiet}}, 4700)
	mustNotContain(t, m.log, "cancel_turn 1", "clear_playout")
}

// A tool starting (runtime progress) brings the filler forward; it is still said once.
func TestToolProgressSpeaksTheFillerAtOnce(t *testing.T) {
	progress := Input{Kind: AgentProgress, Turn: 1, Text: "search_orders"}
	m := run(base, []step{{0, final("check my orders")}, {700, progress}, {900, progress}}, 10000)
	if diff := cmp.Diff([]string{`0:dispatch 1 "check my orders"`, `700:say 1 "One moment please."`},
		pick(m.log, "dispatch", "say")); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	mustContain(t, m.log, "700:cancel filler")
	// Once the reply has started, progress says nothing.
	m = run(base, []step{{0, final("hi")}, {300, said(1, "Let me look.")}, {700, progress}}, 10000)
	mustNotContain(t, m.log, "say 1")
}
