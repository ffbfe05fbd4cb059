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
	CallStarted    InputKind = iota + 1
	SpeechStart              // VAD: the caller started speaking
	SpeechEnd                // VAD: the caller stopped speaking
	Transcript               // STT result: Text, Final
	DTMF                     // the caller pressed Text
	SentenceQueued           // a sentence of Turn went to TTS: Text; Filler for the long-turn filler
	AudioOnWire              // Turn's first audio reached the carrier
	SpeechQueued             // Turn's audio is fully queued for playout
	PlayoutDone              // the carrier finished playing Turn's audio
	AgentDone                // the agent finished Turn's reply
	AgentError               // the agent failed Turn: Text is the error kind
	AgentProgress            // the runtime reports work on Turn (a tool running): Text is its label
	TimerFired               // Timer fired (Gen says which arming)
	Hangup                   // the caller hung up
	Goodbye                  // the server is stopping: say Text, then end the call
	STTLost                  // no recognizer has heard the caller for a while: nothing hears them
	STTRestored              // a recognizer hears the caller again
	NoticeHeard              // the carrier played the recording notice through
)

var inputNames = [...]string{
	CallStarted: "call_started", SpeechStart: "speech_start", SpeechEnd: "speech_end",
	Transcript: "transcript", DTMF: "dtmf", SentenceQueued: "sentence_queued",
	AudioOnWire: "audio_on_wire", SpeechQueued: "speech_queued", PlayoutDone: "playout_done",
	AgentDone: "agent_done", AgentError: "agent_error", AgentProgress: "agent_progress",
	TimerFired: "timer_fired", Hangup: "hangup", Goodbye: "goodbye", STTLost: "stt_lost", STTRestored: "stt_restored",
	NoticeHeard: "notice_heard",
}

func (k InputKind) String() string {
	if int(k) < len(inputNames) && inputNames[k] != "" {
		return inputNames[k]
	}
	return fmt.Sprintf("input(%d)", uint8(k))
}

// Input is one thing that happened.
type Input struct {
	Kind   InputKind
	Turn   int
	Text   string
	Final  bool
	Filler bool
	Timer  TimerID
	Gen    uint32
}

// TimerID names a timer the machine asks for.
type TimerID uint8

// Timers. Each is armed at most once at a time; re-arming supersedes the old one.
const (
	TimerMaxCall   TimerID = iota + 1 // the call has lasted Config.MaxCall
	TimerGate                         // the barge-in gate opens
	TimerConfirm                      // a pending barge-in was not confirmed: carry on
	TimerTailGrace                    // the echo tail after a reply is over
	TimerFiller                       // the agent is slow: speak the long-turn filler
	TimerSilence                      // the caller has been silent: re-prompt, or hang up
	TimerDeaf                         // nothing has heard the caller for SilenceHangup: hang up
	TimerGreeting                     // a voicemail greeting is over (or never began): leave the message
	numTimers
)

var timerNames = [...]string{
	TimerMaxCall: "max_call", TimerGate: "gate", TimerConfirm: "confirm",
	TimerTailGrace: "tail_grace", TimerFiller: "filler", TimerSilence: "silence", TimerDeaf: "deaf",
	TimerGreeting: "greeting",
}

func (t TimerID) String() string {
	if int(t) < len(timerNames) && timerNames[t] != "" {
		return timerNames[t]
	}
	return fmt.Sprintf("timer(%d)", uint8(t))
}

// ActionKind says what the engine must do.
type ActionKind uint8

// Actions the machine asks for, carried out in order.
const (
	Dispatch          ActionKind = iota + 1 // send Text to the agent as caller turn Turn
	CancelTurn                              // abort Turn: agent stream (even before its first token), TTS, queued audio
	ClearPlayout                            // flush local playout and tell the carrier to clear
	RecordInterrupted                       // rewrite Turn's history to what the caller heard
	ReplayInbound                           // send STT the recent caller audio it did not hear
	Say                                     // speak Text as part of Turn; Reason: greeting, error, filler, reprompt, stt_error
	FinalizeSTT                             // ask STT to finish the utterance now
	ResetVAD                                // forget the VAD's state (a stuck detector makes barge-in one-shot)
	ArmTimer                                // fire Timer (with Gen) after After
	CancelTimer                             // Timer is no longer wanted
	Note                                    // journal a decision: Reason is the event type, Text its detail
	EndCall                                 // hang up with End
)

var actionNames = [...]string{
	Dispatch: "dispatch", CancelTurn: "cancel_turn", ClearPlayout: "clear_playout",
	RecordInterrupted: "record_interrupted", ReplayInbound: "replay_inbound", Say: "say",
	FinalizeSTT: "finalize_stt", ResetVAD: "reset_vad", ArmTimer: "arm_timer",
	CancelTimer: "cancel_timer", Note: "note", EndCall: "end_call",
}

func (k ActionKind) String() string {
	if int(k) < len(actionNames) && actionNames[k] != "" {
		return actionNames[k]
	}
	return fmt.Sprintf("action(%d)", uint8(k))
}

// Action is one thing the engine must do.
type Action struct {
	Kind   ActionKind
	Turn   int
	Text   string
	Reason string
	Timer  TimerID
	Gen    uint32
	After  time.Duration
	End    voice.EndReason
}

// Notes the machine journals (Action.Reason of a Note), in the journal's naming style.
const (
	NoteBargeInPending = "barge_in.pending"
	NoteBargeInResumed = "barge_in.resumed"
	NoteGateSuppressed = "barge_in.suppressed" // caller speech inside the gate
	NoteRescue         = "turn.rescue"         // caller speech in the tail grace: a new turn
	NoteDropped        = "stt.dropped"         // a transcript the filters dropped: Text says why
	NoteFiller         = "filler"
	NoteReprompt       = "silence.reprompt"
	NoteSTTNotice      = "stt.notice" // nothing hears the caller: they are told so, once a call
	// NoteGreetingOver: a voicemail's greeting is over (or never came): the message starts.
	NoteGreetingOver = "voicemail.greeting_over"
)

// TimerByName finds a timer by the name its String gives (as journals record it).
func TimerByName(name string) (TimerID, bool) {
	for id := TimerID(1); id < numTimers; id++ {
		if timerNames[id] == name {
			return id, true
		}
	}
	return 0, false
}
