// Package turn owns turn-taking: who holds the floor, when the caller has finished, when an
// interruption is real and what the agent runtime is told afterwards. It is a pure state
// machine, Step(state, input, now) -> (state, actions): no goroutines, no clock, no I/O.
// The call engine feeds it inputs, carries out its actions and arms the timers it asks for.
// Behaviour: docs/turn-taking.md.
package turn

import (
	"fmt"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// Phase is who holds the floor.
type Phase uint8

// Phases.
const (
	// Idle: nobody speaks for the agent; caller audio goes to STT.
	Idle Phase = iota
	// Thinking: a turn is dispatched (or a message queued) and no agent audio has reached
	// the wire yet. The barge-in gate is closed; caller audio still goes to STT.
	Thinking
	// Speaking: agent audio is on the wire and more may follow.
	Speaking
	// Draining: the reply is fully queued; the carrier is still playing its backlog.
	Draining
	// Ended: the call is over; every input is ignored.
	Ended
)

var phaseNames = [...]string{"idle", "thinking", "speaking", "draining", "ended"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Config holds the turn-taking settings.
type Config struct {
	FirstMessage string        // greeting spoken when the call starts; empty = none
	ErrorMessage string        // spoken when the agent runtime fails
	BargeInGate  time.Duration // barge-in stays closed this long after first audio
	MaxCall      time.Duration // the call ends after this long; 0 = no limit
}

// State is everything the machine remembers. The zero value is not ready: use New.
type State struct {
	Config Config
	Phase  Phase
	// Turn numbers the caller's turns from 1; 0 is the greeting.
	Turn int
	// FirstAudioAt is when the current turn's first audio reached the wire (zero: none yet).
	FirstAudioAt time.Time
	// Queued reports that the current turn's audio is fully queued for playout.
	Queued bool
	// CallerSpeaking follows the VAD.
	CallerSpeaking bool
}

// New returns the state of a call that has not started.
func New(cfg Config) State { return State{Config: cfg} }

// ListeningToSTT reports whether caller audio should reach STT now. While the agent's
// audio is on the wire the caller's frames only feed the VAD, so the agent cannot hear
// (and answer) itself.
func (s State) ListeningToSTT() bool { return s.Phase == Idle || s.Phase == Thinking }

// BargeInOpen reports whether caller speech may interrupt the agent at now.
func (s State) BargeInOpen(now time.Time) bool {
	if s.Phase != Speaking && s.Phase != Draining {
		return false
	}
	return !s.FirstAudioAt.IsZero() && !now.Before(s.FirstAudioAt.Add(s.Config.BargeInGate))
}

// Step applies one input at now.
func Step(s State, in Input, now time.Time) (State, []Action) {
	if s.Phase == Ended {
		return s, nil
	}
	h := handlers[in.Kind]
	if h == nil {
		return s, nil
	}
	return h(s, in, now)
}

var handlers = map[InputKind]func(State, Input, time.Time) (State, []Action){
	CallStarted:  onCallStarted,
	SpeechStart:  onSpeechStart,
	SpeechEnd:    onSpeechEnd,
	Transcript:   onTranscript,
	DTMF:         onDTMF,
	AudioOnWire:  onAudioOnWire,
	SpeechQueued: onSpeechQueued,
	PlayoutDone:  onPlayoutDone,
	AgentError:   onAgentError,
	TimerFired:   onTimer,
	Hangup:       onHangup,
}

func onCallStarted(s State, _ Input, _ time.Time) (State, []Action) {
	var acts []Action
	if s.Config.MaxCall > 0 {
		acts = append(acts, Action{Kind: ArmTimer, Timer: TimerMaxCall, After: s.Config.MaxCall})
	}
	if s.Config.FirstMessage == "" {
		return s, acts
	}
	s = beginTurn(s, 0)
	return s, append(acts, Action{Kind: Say, Turn: 0, Text: s.Config.FirstMessage, Reason: "greeting"})
}

func onSpeechStart(s State, _ Input, now time.Time) (State, []Action) {
	s.CallerSpeaking = true
	if !s.BargeInOpen(now) {
		return s, nil
	}
	return bargeIn(s, now)
}

func onSpeechEnd(s State, _ Input, _ time.Time) (State, []Action) {
	s.CallerSpeaking = false
	// Endpointing: our VAD heard the end of speech, so ask STT for its final now rather
	// than waiting for the provider's own (slower, noisier) endpointing.
	return s, []Action{{Kind: FinalizeSTT}}
}

func onTranscript(s State, in Input, now time.Time) (State, []Action) {
	text := strings.TrimSpace(in.Text)
	if !in.Final || text == "" {
		return s, nil
	}
	return commit(s, text, now)
}

func onDTMF(s State, in Input, now time.Time) (State, []Action) {
	if in.Text == "" {
		return s, nil
	}
	return commit(s, "[DTMF "+in.Text+"]", now)
}

// commit hands a finished caller utterance to the agent.
func commit(s State, text string, now time.Time) (State, []Action) {
	var acts []Action
	switch s.Phase {
	case Thinking:
		// The caller added to what they said before the agent answered: one in-flight
		// dispatch only, so abandon the old one and answer everything together.
		acts = append(acts, Action{Kind: CancelTurn, Turn: s.Turn})
	case Speaking, Draining:
		if !s.BargeInOpen(now) {
			return s, nil // a transcript inside the gate is the agent's own echo or noise
		}
		s, acts = bargeIn(s, now)
	}
	s = beginTurn(s, s.Turn+1)
	return s, append(acts, Action{Kind: Dispatch, Turn: s.Turn, Text: text})
}

func bargeIn(s State, _ time.Time) (State, []Action) {
	acts := []Action{
		{Kind: CancelTurn, Turn: s.Turn},
		{Kind: ClearPlayout, Turn: s.Turn},
		{Kind: RecordInterrupted, Turn: s.Turn},
		{Kind: ReplayInbound},
	}
	s.Phase = Idle
	s.FirstAudioAt = time.Time{}
	s.Queued = false
	return s, acts
}

func beginTurn(s State, n int) State {
	s.Turn = n
	s.Phase = Thinking
	s.FirstAudioAt = time.Time{}
	s.Queued = false
	return s
}

func onAudioOnWire(s State, in Input, now time.Time) (State, []Action) {
	if in.Turn != s.Turn || s.Phase != Thinking {
		return s, nil
	}
	s.FirstAudioAt = now
	s.Phase = Speaking
	if s.Queued {
		s.Phase = Draining
	}
	return s, nil
}

func onSpeechQueued(s State, in Input, _ time.Time) (State, []Action) {
	if in.Turn != s.Turn {
		return s, nil
	}
	s.Queued = true
	if s.Phase == Speaking {
		s.Phase = Draining
	}
	return s, nil
}

func onPlayoutDone(s State, in Input, _ time.Time) (State, []Action) {
	if in.Turn != s.Turn || !s.Queued || (s.Phase != Draining && s.Phase != Thinking) {
		return s, nil
	}
	s.Phase = Idle
	s.FirstAudioAt = time.Time{}
	return s, nil
}

func onAgentError(s State, in Input, _ time.Time) (State, []Action) {
	if in.Turn != s.Turn || s.Phase == Idle || s.Config.ErrorMessage == "" {
		return s, nil
	}
	// Never the runtime's own error text: the configured message, spoken after whatever
	// part of the reply already went out.
	return s, []Action{{Kind: Say, Turn: s.Turn, Text: s.Config.ErrorMessage, Reason: "error"}}
}

func onTimer(s State, in Input, _ time.Time) (State, []Action) {
	if in.Timer == TimerMaxCall {
		return end(s, voice.EndMaxDuration)
	}
	return s, nil
}

func onHangup(s State, _ Input, _ time.Time) (State, []Action) {
	return end(s, voice.EndCallerHangup)
}

func end(s State, reason voice.EndReason) (State, []Action) {
	var acts []Action
	if s.Phase != Idle {
		acts = append(acts, Action{Kind: CancelTurn, Turn: s.Turn})
	}
	s.Phase = Ended
	return s, append(acts, Action{Kind: EndCall, End: reason})
}
