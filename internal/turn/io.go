package turn

import (
	"fmt"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// InputKind says what happened.
type InputKind uint8

// Inputs the engine feeds the machine.
const (
	CallStarted  InputKind = iota + 1
	SpeechStart            // VAD: the caller started speaking
	SpeechEnd              // VAD: the caller stopped speaking
	Transcript             // STT result: Text, Final
	DTMF                   // the caller pressed Text
	AudioOnWire            // Turn's first audio reached the carrier
	SpeechQueued           // Turn's audio is fully queued for playout
	PlayoutDone            // the carrier finished playing Turn's audio
	AgentDone              // the agent finished Turn's reply: Text
	AgentError             // the agent failed Turn: Text is the error kind
	TimerFired             // Timer fired
	Hangup                 // the caller hung up
)

var inputNames = map[InputKind]string{
	CallStarted: "call_started", SpeechStart: "speech_start", SpeechEnd: "speech_end",
	Transcript: "transcript", DTMF: "dtmf", AudioOnWire: "audio_on_wire",
	SpeechQueued: "speech_queued", PlayoutDone: "playout_done", AgentDone: "agent_done",
	AgentError: "agent_error", TimerFired: "timer_fired", Hangup: "hangup",
}

func (k InputKind) String() string {
	if n, ok := inputNames[k]; ok {
		return n
	}
	return fmt.Sprintf("input(%d)", uint8(k))
}

// Input is one thing that happened.
type Input struct {
	Kind  InputKind
	Turn  int
	Text  string
	Final bool
	Timer TimerID
}

// TimerID names a timer the machine asked for.
type TimerID uint8

// Timers.
const (
	TimerMaxCall TimerID = iota + 1
)

// ActionKind says what the engine must do.
type ActionKind uint8

// Actions the machine asks for.
const (
	Dispatch          ActionKind = iota + 1 // send Text to the agent as caller turn Turn
	CancelTurn                              // abort Turn: agent stream, TTS, queued audio
	ClearPlayout                            // flush local playout and tell the carrier to clear
	RecordInterrupted                       // rewrite Turn's history to what the caller heard
	ReplayInbound                           // send the recent caller audio STT did not hear
	Say                                     // speak Text as part of Turn (Reason: greeting, error)
	FinalizeSTT                             // ask STT to finish the utterance now
	ArmTimer                                // fire Timer after After
	EndCall                                 // hang up with End
)

var actionNames = map[ActionKind]string{
	Dispatch: "dispatch", CancelTurn: "cancel_turn", ClearPlayout: "clear_playout",
	RecordInterrupted: "record_interrupted", ReplayInbound: "replay_inbound", Say: "say", FinalizeSTT: "finalize_stt",
	ArmTimer: "arm_timer", EndCall: "end_call",
}

func (k ActionKind) String() string {
	if n, ok := actionNames[k]; ok {
		return n
	}
	return fmt.Sprintf("action(%d)", uint8(k))
}

// Action is one thing the engine must do, in order.
type Action struct {
	Kind   ActionKind
	Turn   int
	Text   string
	Reason string
	Timer  TimerID
	After  time.Duration
	End    voice.EndReason
}
