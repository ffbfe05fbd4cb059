package turn

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/voice"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

type stepAt struct {
	ms int
	in Input
}

// run applies steps and returns the final state and every action, tagged with its time.
func run(cfg Config, steps []stepAt) (State, []string) {
	s := New(cfg)
	var log []string
	for _, st := range steps {
		var acts []Action
		s, acts = Step(s, st.in, at(st.ms))
		for _, a := range acts {
			log = append(log, describe(a))
		}
	}
	return s, log
}

func describe(a Action) string {
	out := a.Kind.String()
	switch a.Kind {
	case Dispatch, Say:
		out += " " + itoa(a.Turn) + " " + a.Text
	case CancelTurn, ClearPlayout, RecordInterrupted:
		out += " " + itoa(a.Turn)
	case EndCall:
		out += " " + a.End.String()
	}
	return out
}

func itoa(n int) string { return string(rune('0' + n)) }

var cfg = Config{FirstMessage: "Hello!", ErrorMessage: "Sorry.", BargeInGate: 500 * time.Millisecond}

func final(text string) Input { return Input{Kind: Transcript, Text: text, Final: true} }

func TestTurnTaking(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		steps     []stepAt
		want      []string
		wantPhase Phase
	}{
		{
			name:      "greeting is spoken at call start",
			cfg:       cfg,
			steps:     []stepAt{{0, Input{Kind: CallStarted}}},
			want:      []string{"say 0 Hello!"},
			wantPhase: Thinking,
		},
		{
			name:      "no greeting configured: the call starts idle",
			cfg:       Config{BargeInGate: cfg.BargeInGate},
			steps:     []stepAt{{0, Input{Kind: CallStarted}}},
			wantPhase: Idle,
		},
		{
			name: "speech end asks STT to finalise and the final dispatches a turn",
			cfg:  Config{},
			steps: []stepAt{
				{0, Input{Kind: CallStarted}},
				{100, Input{Kind: SpeechStart}},
				{900, Input{Kind: SpeechEnd}},
				{950, final("what time is it")},
			},
			want:      []string{"finalize_stt", "dispatch 1 what time is it"},
			wantPhase: Thinking,
		},
		{
			name: "a whole turn returns to idle once the carrier played it",
			cfg:  Config{},
			steps: []stepAt{
				{0, Input{Kind: CallStarted}},
				{950, final("hi")},
				{1300, Input{Kind: AudioOnWire, Turn: 1}},
				{1400, Input{Kind: SpeechQueued, Turn: 1}},
				{3000, Input{Kind: PlayoutDone, Turn: 1}},
			},
			want:      []string{"dispatch 1 hi"},
			wantPhase: Idle,
		},
		{
			name: "caller speech inside the barge-in gate does not interrupt",
			cfg:  cfg,
			steps: []stepAt{
				{0, Input{Kind: CallStarted}},
				{200, Input{Kind: AudioOnWire, Turn: 0}},
				{500, Input{Kind: SpeechStart}},
			},
			want:      []string{"say 0 Hello!"},
			wantPhase: Speaking,
		},
		{
			name: "the greeting is interruptible once the gate opens",
			cfg:  cfg,
			steps: []stepAt{
				{0, Input{Kind: CallStarted}},
				{200, Input{Kind: AudioOnWire, Turn: 0}},
				{800, Input{Kind: SpeechStart}},
			},
			want:      []string{"say 0 Hello!", "cancel_turn 0", "clear_playout 0", "record_interrupted 0", "replay_inbound"},
			wantPhase: Idle,
		},
		{
			name: "barge-in while the backlog drains clears exactly once",
			cfg:  Config{BargeInGate: cfg.BargeInGate},
			steps: []stepAt{
				{0, final("tell me a story")},
				{400, Input{Kind: AudioOnWire, Turn: 1}},
				{600, Input{Kind: SpeechQueued, Turn: 1}},
				{2000, Input{Kind: SpeechStart}},
				{2100, Input{Kind: SpeechStart}},
			},
			want:      []string{"dispatch 1 tell me a story", "cancel_turn 1", "clear_playout 1", "record_interrupted 1", "replay_inbound"},
			wantPhase: Idle,
		},
		{
			name: "the gate stays closed before any audio reaches the wire",
			cfg:  Config{BargeInGate: cfg.BargeInGate},
			steps: []stepAt{
				{0, final("look something up")},
				{5000, Input{Kind: SpeechStart}},
			},
			want:      []string{"dispatch 1 look something up"},
			wantPhase: Thinking,
		},
		{
			name: "a new final while thinking replaces the in-flight turn",
			cfg:  Config{},
			steps: []stepAt{
				{0, final("book a table")},
				{700, final("for two people")},
			},
			want:      []string{"dispatch 1 book a table", "cancel_turn 1", "dispatch 2 for two people"},
			wantPhase: Thinking,
		},
		{
			name: "a final during speech after the gate barges in and dispatches",
			cfg:  Config{BargeInGate: cfg.BargeInGate},
			steps: []stepAt{
				{0, final("hi")},
				{300, Input{Kind: AudioOnWire, Turn: 1}},
				{1500, final("stop")},
			},
			want:      []string{"dispatch 1 hi", "cancel_turn 1", "clear_playout 1", "record_interrupted 1", "replay_inbound", "dispatch 2 stop"},
			wantPhase: Thinking,
		},
		{
			name: "agent error speaks the configured message, never the runtime's text",
			cfg:  cfg,
			steps: []stepAt{
				{0, final("hi")},
				{100, Input{Kind: AgentError, Turn: 1, Text: "⚠ upstream exploded"}},
			},
			want:      []string{"dispatch 1 hi", "say 1 Sorry."},
			wantPhase: Thinking,
		},
		{
			name: "an error for a cancelled turn is ignored",
			cfg:  cfg,
			steps: []stepAt{
				{0, final("one")},
				{10, final("two")},
				{20, Input{Kind: AgentError, Turn: 1}},
			},
			want:      []string{"dispatch 1 one", "cancel_turn 1", "dispatch 2 two"},
			wantPhase: Thinking,
		},
		{
			name:      "DTMF reaches the agent as text",
			cfg:       Config{},
			steps:     []stepAt{{0, Input{Kind: DTMF, Text: "5"}}},
			want:      []string{"dispatch 1 [DTMF 5]"},
			wantPhase: Thinking,
		},
		{
			name:      "interim and empty transcripts do nothing",
			cfg:       Config{},
			steps:     []stepAt{{0, Input{Kind: Transcript, Text: "wh"}}, {10, final("   ")}},
			wantPhase: Idle,
		},
		{
			name: "hang-up cancels the turn in flight and ends the call; later inputs are ignored",
			cfg:  Config{},
			steps: []stepAt{
				{0, final("hi")},
				{10, Input{Kind: Hangup}},
				{20, final("again")},
			},
			want:      []string{"dispatch 1 hi", "cancel_turn 1", "end_call caller_hangup"},
			wantPhase: Ended,
		},
		{
			name: "maximum call length ends the call",
			cfg:  Config{MaxCall: time.Minute},
			steps: []stepAt{
				{0, Input{Kind: CallStarted}},
				{60000, Input{Kind: TimerFired, Timer: TimerMaxCall}},
			},
			want:      []string{"arm_timer", "end_call max_duration"},
			wantPhase: Ended,
		},
		{
			name: "stale playout events of an old turn do not move the floor",
			cfg:  Config{},
			steps: []stepAt{
				{0, final("one")},
				{10, final("two")},
				{300, Input{Kind: AudioOnWire, Turn: 1}},
				{400, Input{Kind: SpeechQueued, Turn: 1}},
				{500, Input{Kind: PlayoutDone, Turn: 1}},
			},
			want:      []string{"dispatch 1 one", "cancel_turn 1", "dispatch 2 two"},
			wantPhase: Thinking,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, got := run(tt.cfg, tt.steps)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if s.Phase != tt.wantPhase {
				t.Errorf("phase = %v, want %v", s.Phase, tt.wantPhase)
			}
		})
	}
}

func TestSTTHearsTheCallerOnlyWhileTheAgentIsSilent(t *testing.T) {
	s := New(Config{})
	if !s.ListeningToSTT() {
		t.Fatal("idle call must feed STT")
	}
	s, _ = Step(s, final("hi"), at(0))
	if !s.ListeningToSTT() {
		t.Fatal("thinking call must feed STT")
	}
	s, _ = Step(s, Input{Kind: AudioOnWire, Turn: 1}, at(100))
	if s.ListeningToSTT() {
		t.Fatal("STT must not hear the caller line while the agent speaks")
	}
}

func TestEndReasonsAreVoiceReasons(t *testing.T) {
	_, acts := Step(New(Config{}), Input{Kind: Hangup}, at(0))
	if len(acts) != 1 || acts[0].End != voice.EndCallerHangup {
		t.Fatalf("hangup actions %+v", acts)
	}
}
