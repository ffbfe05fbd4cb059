package turn

import (
	"fmt"
	"time"
)

// Phase is who holds the floor.
type Phase uint8

// Phases.
const (
	// Idle: nobody speaks for the agent; caller audio goes to STT.
	Idle Phase = iota
	// Thinking: a turn is dispatched (or a message is being prepared) and none of its audio
	// has reached the wire. The barge-in gate is closed; caller audio still goes to STT.
	Thinking
	// Speaking: the turn's audio is on the wire and more may follow. Gate closed until
	// GateOpen, then armed.
	Speaking
	// BargeInPending: caller speech while Speaking or Draining waits for a transcript to
	// confirm it (min-words strategy, or STT hearing the agent without echo cancellation).
	BargeInPending
	// Draining: the reply is fully queued; the carrier is still playing its backlog. Armed.
	Draining
	// TailGrace: the carrier has played everything; the echo tail fades. Caller speech now
	// starts a new turn, never a barge-in.
	TailGrace
	// Ended: the call is over; every input is ignored.
	Ended
)

var phaseNames = [...]string{"idle", "thinking", "speaking", "barge_in_pending", "draining", "tail_grace", "ended"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Config holds the turn-taking settings (docs/turn-taking.md); zero durations disable.
type Config struct {
	// Notice is said first on every call, before the greeting and in the same turn 0, whole:
	// nothing the caller says or keys interrupts it, and the greeting's barge-in gate
	// opens only once it has played (NoticeHeard). It is not the agent's words: the engine
	// keeps it out of the agent's history. Empty: none.
	Notice          string
	FirstMessage    string        // greeting spoken when the call starts
	ErrorMessage    string        // spoken when the agent runtime fails
	LongTurnMessage string        // filler for slow turns
	LongTurnAfter   time.Duration // when the filler is spoken if no audio went out
	SilenceMessage  string        // re-prompt after SilenceReprompt of caller silence
	SilenceReprompt time.Duration
	SilenceHangup   time.Duration // hang up after this much silence in total
	// STTErrorMessage is spoken once a call when the caller's words go unheard because no
	// recognizer is up; empty: never.
	STTErrorMessage string
	BargeInGate     time.Duration // caller speech cannot interrupt this soon after first audio
	BargeInConfirm  time.Duration // a pending barge-in gives up after this
	BargeInMinWords int           // >0: barge-in waits for a transcript of this many words
	// ForwardSTTWhileSpeaking lets STT hear the line while the agent speaks; without echo
	// cancellation that means transcripts of the agent's own voice, so barge-in is then
	// confirmed by words and the echo guard drops what the agent said.
	ForwardSTTWhileSpeaking bool
	TailGrace               time.Duration // echo-tail window after playout ends
	MaxCall                 time.Duration // the call ends after this long
	// Voicemail: the call reached an answering machine after its greeting. The first
	// message is spoken whole (nothing the line says interrupts it) and the call ends once
	// the carrier has played it.
	Voicemail bool
	// AwaitGreeting (with Voicemail): the carrier judged "machine" while its greeting was
	// still playing and cannot hear the beep, so the message waits until the line has been
	// quiet for GreetingQuiet after speech (the greeting and its beep are over), or for
	// NoGreeting when nothing is heard at all. Left without it, the message would be
	// spoken over the greeting and the recording would keep only its end.
	AwaitGreeting bool
	GreetingQuiet time.Duration // quiet after the greeting that means it is over
	NoGreeting    time.Duration // how long to wait for a greeting that never comes
}

// Filter windows for repeated transcripts.
const (
	duplicateWindow     = 2 * time.Second
	nearDuplicateWindow = 500 * time.Millisecond
)

// State is everything the machine remembers. The zero value is not ready: use New.
type State struct {
	Config Config
	Phase  Phase
	// Turn numbers the agent's speaking turns: 0 is the greeting, caller turns and
	// re-prompts count up from 1.
	Turn int
	// Of the current turn:
	FirstAudioAt time.Time // its first audio reached the wire (zero: none yet)
	GateOpen     bool      // the barge-in gate has opened
	Queued       bool      // all of its audio is queued for playout
	RealSentence bool      // a sentence of the reply (not a filler) went to TTS
	FillerSaid   bool      // the long-turn filler was spoken
	// FillerDeferred: the filler came due while the caller was speaking; it waits until they
	// finish (fillerAfterSpeech), by when their words are usually a turn of their own.
	FillerDeferred bool
	AgentText      string // what the agent is saying: the echo guard's reference
	// ResumePhase is where a pending barge-in returns when nothing confirms it.
	ResumePhase Phase
	// Suppressed: caller speech was swallowed by the closed gate; its audio is replayed to
	// STT when the agent finishes.
	Suppressed bool

	CallerSpeaking bool
	Reprompted     bool // the silence re-prompt was spoken since the caller last spoke
	// Noticing: the recording notice has not finished playing; the caller's words and keys
	// are not heard as a turn or an interruption until it has.
	Noticing bool
	// Closing: the goodbye of a stopping server is being said. Nothing the caller does
	// interrupts it, and the call ends once the carrier has played it.
	Closing bool
	// Unheard: the caller has spoken since the agent's floor last changed hands (their words
	// are not yet a turn).
	Unheard bool
	// Deaf: no recognizer hears the caller (STTLost, until STTRestored).
	Deaf bool
	// DeafNoticed: the caller was told nothing hears them (once a call).
	DeafNoticed bool
	// Greeting: a voicemail's own greeting is playing or may still come (AwaitGreeting);
	// the message waits for its end.
	Greeting bool

	LastCommit   string // normalised text of the last committed caller turn
	LastCommitAt time.Time

	Timers [numTimers]TimerState
}

// TimerState says whether a timer is armed and which arming is current.
type TimerState struct {
	Armed bool
	Gen   uint32
}

// New returns the state of a call that has not started.
func New(cfg Config) State { return State{Config: cfg} }

// AgentHoldsFloor reports whether agent audio is (or may be) playing to the caller.
func (s State) AgentHoldsFloor() bool {
	return s.Phase == Speaking || s.Phase == Draining || s.Phase == BargeInPending
}

// ListeningToSTT reports whether caller audio should reach STT now. While the agent's
// audio plays the caller's frames feed only the VAD (and the rescue ring), so the agent
// cannot hear, and answer, itself, unless ForwardSTTWhileSpeaking.
func (s State) ListeningToSTT() bool {
	switch s.Phase {
	case Idle, Thinking, BargeInPending:
		return true
	case Speaking, Draining:
		return s.Config.ForwardSTTWhileSpeaking
	}
	return false
}

// deferBargeIn reports whether barge-in waits for words instead of acting on VAD alone.
func (s State) deferBargeIn() bool {
	return s.Config.BargeInMinWords > 0 || s.Config.ForwardSTTWhileSpeaking
}
