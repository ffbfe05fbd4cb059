package turn

import (
	"fmt"
	"testing"
)

// inputFrom turns fuzz bytes into one input for the current state: turn numbers near the
// current one (so stale and current events both occur) and texts from a small vocabulary
// (so duplicates and echoes occur).
func inputFrom(b0, b1 byte, s State) Input {
	texts := []string{"hello", "what are your hours", "we open at nine on weekdays", "no", "nothing else", "[music]", "stop", ""}
	turn := s.Turn - int(b1%3) + 1 // current-1 .. current+1
	text := texts[int(b1>>3)%len(texts)]
	switch b0 % 16 {
	case 0:
		return Input{Kind: SpeechStart}
	case 1:
		return Input{Kind: SpeechEnd}
	case 2:
		return Input{Kind: Transcript, Text: text, Final: true}
	case 3:
		return Input{Kind: Transcript, Text: text}
	case 4:
		return Input{Kind: DTMF, Text: "5"}
	case 5:
		return Input{Kind: SentenceQueued, Turn: turn, Text: text, Filler: b1&1 == 1}
	case 6:
		return Input{Kind: AudioOnWire, Turn: turn}
	case 7:
		return Input{Kind: SpeechQueued, Turn: turn}
	case 8:
		return Input{Kind: PlayoutDone, Turn: turn}
	case 9:
		return Input{Kind: AgentDone, Turn: turn}
	case 10:
		return Input{Kind: AgentError, Turn: turn, Text: []string{"transient", "timeout", "canceled"}[int(b1)%3]}
	case 11:
		return Input{Kind: CallStarted}
	case 13:
		return Input{Kind: AgentProgress, Turn: turn, Text: "tool"}
	case 12: // a stale or wrong timer fire
		return Input{Kind: TimerFired, Timer: TimerID(1 + int(b1)%int(numTimers-1)), Gen: uint32(b1 % 4)}
	case 14: // the server stops: a goodbye, or none
		return Input{Kind: Goodbye, Text: []string{"Goodbye.", ""}[int(b1)%2]}
	case 15:
		if b1&1 == 1 {
			return Input{Kind: STTRestored}
		}
		return Input{Kind: STTLost}
	}
	return Input{Kind: SpeechStart}
}

// checkStep asserts the invariants over one step's actions.
func checkStep(t *testing.T, before State, acts []Action, after State) {
	t.Helper()
	holding := before.Phase == Thinking || before.Phase == Speaking || before.Phase == Draining || before.Phase == BargeInPending
	cancelled := map[int]bool{}
	cleared := map[int]bool{}
	for i, a := range acts {
		switch a.Kind {
		case CancelTurn:
			cancelled[a.Turn] = true
		case ClearPlayout:
			cleared[a.Turn] = true
		case Dispatch:
			// Never two dispatches in flight: the turn that held the floor is cancelled first.
			if holding && !cancelled[before.Turn] {
				t.Fatalf("dispatch %d while turn %d (%v) still in flight: %v", a.Turn, before.Turn, before.Phase, acts)
			}
			if a.Turn <= before.Turn {
				t.Fatalf("dispatch reuses turn number %d (was %d)", a.Turn, before.Turn)
			}
		case RecordInterrupted:
			// A barge-in always cancels the agent and flushes playout.
			if !cancelled[a.Turn] || !cleared[a.Turn] {
				t.Fatalf("barge-in on turn %d without cancel and clear: %v", a.Turn, acts[:i+1])
			}
		case Say:
			if a.Text == "" {
				t.Fatalf("say with no text: %+v", a)
			}
		}
	}
	if after.Phase == Ended && len(armedTimers(after)) != 0 {
		t.Fatalf("call ended with timers armed: %v", armedTimers(after))
	}
	if after.Phase == Speaking && !after.ListeningToSTT() == after.Config.ForwardSTTWhileSpeaking {
		t.Fatalf("speaking: STT listening %v with forward %v", after.ListeningToSTT(), after.Config.ForwardSTTWhileSpeaking)
	}
}

func FuzzTurnMachine(f *testing.F) {
	f.Add([]byte{11, 0, 6, 1, 7, 1, 8, 1, 0, 0, 1, 0, 2, 8}, uint8(0))
	f.Add([]byte{2, 8, 5, 9, 6, 1, 0, 0, 0, 0, 2, 16}, uint8(1))
	f.Add([]byte{2, 8, 2, 9, 2, 24, 10, 1, 6, 1}, uint8(2))
	f.Add([]byte{11, 0, 12, 3, 0, 0, 4, 0, 5, 1, 3, 8}, uint8(3))
	f.Add([]byte{11, 0, 6, 0, 0, 5, 7, 0, 0, 2, 8, 8, 0, 8}, uint8(8))
	f.Add([]byte{11, 0, 1, 14, 0, 20, 0, 0, 20, 1, 0, 20, 0, 0, 5, 1, 0, 5, 14, 1, 50}, uint8(0))
	f.Fuzz(func(t *testing.T, script []byte, mode uint8) {
		cfg := base
		cfg.ForwardSTTWhileSpeaking = mode&1 == 1
		if mode&2 != 0 {
			cfg.BargeInMinWords = 2
		}
		if mode&4 != 0 {
			cfg.TailGrace = 0
		}
		cfg.Voicemail = mode&8 != 0
		cfg.STTErrorMessage = "I can't hear you."
		m := newMachine(cfg)
		clock := 0
		notices := 0
		for i := 0; i+2 < len(script); i += 3 {
			clock += int(script[i+2]) * 37 // up to ~9 s between inputs: timers fire in between
			m.advance(at(clock))
			before := m.s
			in := inputFrom(script[i], script[i+1], m.s)
			acts := m.apply(in, at(clock))
			checkStep(t, before, acts, m.s)
			for _, a := range acts {
				if a.Kind == Say && a.Reason == "stt_error" {
					if notices++; notices > 1 || !before.Deaf && in.Kind != STTLost {
						t.Fatalf("notice %d said on %v (deaf before: %v): %v", notices, in.Kind, before.Deaf, acts)
					}
				}
			}
			if cfg.Voicemail && callerInput(in.Kind) && len(acts) > 0 {
				t.Fatalf("voicemail: the line's %v caused %v", in.Kind, acts)
			}
			if before.Closing && callerInput(in.Kind) && len(acts) > 0 {
				t.Fatalf("saying goodbye: the caller's %v caused %v", in.Kind, acts)
			}
			if before.Phase == Ended && len(acts) > 0 {
				t.Fatalf("actions after the call ended: %v", acts)
			}
		}
		// Every call ends, and every timer armed is then fired or cancelled.
		clock += 10
		m.advance(at(clock))
		before := m.s
		acts := m.apply(Input{Kind: Hangup}, at(clock))
		checkStep(t, before, acts, m.s)
		if m.s.Phase != Ended || m.ends != 1 {
			t.Fatalf("after hang-up: phase %v, ends %d", m.s.Phase, m.ends)
		}
		if len(m.timers) != 0 {
			t.Fatalf("timers neither fired nor cancelled: %v", fmt.Sprint(m.timers))
		}
	})
}
