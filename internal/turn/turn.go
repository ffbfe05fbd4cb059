// Package turn owns turn-taking: who holds the floor, when the caller has finished, when an
// interruption is real and what the agent runtime is told afterwards. It is a pure state
// machine, Step(state, input, now) -> (state, actions): no goroutines, no clock, no I/O.
// The call engine feeds it inputs, carries out its actions and arms the timers it asks for.
// Behaviour: docs/turn-taking.md.
package turn

import (
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// Step applies one input at now.
func Step(s State, in Input, now time.Time) (State, []Action) {
	if s.Phase == Ended {
		return s, nil
	}
	if s.Greeting && (in.Kind == SpeechStart || in.Kind == SpeechEnd) {
		return onGreetingSpeech(s, in.Kind)
	}
	if s.Config.Voicemail && (callerInput(in.Kind) || in.Kind == STTLost || in.Kind == STTRestored) {
		return s, nil // a recording is listening, not a caller: nothing it hears matters
	}
	if s.Closing && (callerInput(in.Kind) || in.Kind == STTLost || in.Kind == STTRestored) {
		// The goodbye is being said: nothing the line carries matters now.
		return s, nil
	}
	if s.Noticing && (in.Kind == Transcript || in.Kind == DTMF) {
		// Speech over the notice is the gate's to suppress (its audio is replayed once the
		// agent finishes); words and keys never cut the notice short.
		return s, nil
	}
	var acts []Action
	switch in.Kind {
	case CallStarted:
		s, acts = onCallStarted(s, now)
	case SpeechStart:
		s, acts = onSpeechStart(s, now)
	case SpeechEnd:
		s, acts = onSpeechEnd(s)
	case Transcript:
		s, acts = onTranscript(s, in, now)
	case DTMF:
		s, acts = onDTMF(s, in, now)
	case SentenceQueued:
		s, acts = onSentenceQueued(s, in)
	case AudioOnWire:
		s, acts = onAudioOnWire(s, in, now)
	case SpeechQueued:
		s = onSpeechQueued(s, in)
	case PlayoutDone:
		s, acts = onPlayoutDone(s, in)
	case AgentError:
		s, acts = onAgentError(s, in)
	case AgentProgress:
		s, acts = onAgentProgress(s, in)
	case TimerFired:
		s, acts = onTimer(s, in)
	case Hangup:
		s, acts = end(s, voice.EndCallerHangup)
	case Goodbye:
		s, acts = onGoodbye(s, in)
	case STTLost:
		s, acts = onSTTLost(s)
	case STTRestored:
		s.Deaf = false
		acts = s.disarm(nil, TimerDeaf)
	case NoticeHeard:
		s, acts = onNoticeHeard(s, now)
	}
	return s, acts
}

// onGoodbye: the server is stopping and the call's time is up. Whatever the agent was
// doing stops, the goodbye (in.Text) is said whole, and the call ends once the carrier has
// played it; with no goodbye it ends at once.
func onGoodbye(s State, in Input) (State, []Action) {
	if s.Closing {
		return s, nil
	}
	if in.Text == "" {
		return end(s, voice.EndShutdown)
	}
	var acts []Action
	switch s.Phase {
	case Thinking:
		acts = append(acts, Action{Kind: CancelTurn, Turn: s.Turn})
	case Speaking, Draining, BargeInPending:
		acts = append(acts, Action{Kind: CancelTurn, Turn: s.Turn}, Action{Kind: ClearPlayout, Turn: s.Turn})
	}
	for id := TimerID(1); id < numTimers; id++ {
		acts = s.disarm(acts, id)
	}
	s.Closing = true
	s.Noticing = false
	s.CallerSpeaking = false
	s, acts = beginTurn(s, s.Turn+1, acts)
	return s, append(acts, Action{Kind: Say, Turn: s.Turn, Text: in.Text, Reason: "goodbye"})
}

// callerInput reports whether k is something the caller's side of the line did.
func callerInput(k InputKind) bool {
	return k == SpeechStart || k == SpeechEnd || k == Transcript || k == DTMF
}

func (s *State) arm(id TimerID, after time.Duration) Action {
	t := &s.Timers[id]
	t.Armed = true
	t.Gen++
	return Action{Kind: ArmTimer, Timer: id, Gen: t.Gen, After: after}
}

// disarm cancels id if it is armed.
func (s *State) disarm(acts []Action, ids ...TimerID) []Action {
	for _, id := range ids {
		if s.Timers[id].Armed {
			s.Timers[id].Armed = false
			acts = append(acts, Action{Kind: CancelTimer, Timer: id})
		}
	}
	return acts
}

func onCallStarted(s State, _ time.Time) (State, []Action) {
	var acts []Action
	if s.Config.MaxCall > 0 {
		acts = append(acts, s.arm(TimerMaxCall, s.Config.MaxCall))
	}
	if s.Config.FirstMessage == "" && s.Config.Voicemail {
		return end(s, voice.EndAgentHangup) // nothing to leave
	}
	if s.Config.FirstMessage == "" && s.Config.Notice == "" {
		return enterIdle(s, acts)
	}
	if s.Config.Voicemail && s.Config.AwaitGreeting {
		s.Greeting = true
		return s, append(acts, s.arm(TimerGreeting, s.Config.NoGreeting))
	}
	return speakFirst(s, acts)
}

// speakFirst starts turn 0: the notice, then the first message.
func speakFirst(s State, acts []Action) (State, []Action) {
	s, acts = beginTurn(s, 0, acts)
	if s.Config.Notice != "" {
		s.Noticing = true
		acts = append(acts, Action{Kind: Say, Turn: 0, Text: s.Config.Notice, Reason: "notice"})
	}
	if s.Config.FirstMessage != "" {
		acts = append(acts, Action{Kind: Say, Turn: 0, Text: s.Config.FirstMessage, Reason: "greeting"})
	}
	return s, acts
}

// onNoticeHeard: the notice has played through, so the caller may interrupt what follows
// it once the barge-in gate, counted from now, opens.
func onNoticeHeard(s State, _ time.Time) (State, []Action) {
	if !s.Noticing {
		return s, nil
	}
	s.Noticing = false
	if s.Phase != Speaking && s.Phase != Draining {
		return s, nil
	}
	return s, openGateLater(&s)
}

// openGateLater arms the barge-in gate (or opens it at once when there is none).
func openGateLater(s *State) []Action {
	if s.Config.BargeInGate <= 0 {
		s.GateOpen = true
		return nil
	}
	return []Action{s.arm(TimerGate, s.Config.BargeInGate)}
}

// beginTurn hands the floor to a new agent turn n (dispatch, greeting, re-prompt).
func beginTurn(s State, n int, acts []Action) (State, []Action) {
	acts = s.disarm(acts, TimerGate, TimerConfirm, TimerTailGrace, TimerFiller, TimerSilence)
	s.Turn = n
	s.Phase = Thinking
	s.FirstAudioAt = time.Time{}
	s.GateOpen = false
	s.Queued = false
	s.RealSentence = false
	s.FillerSaid = false
	s.FillerDeferred = false
	s.AgentText = ""
	s.Suppressed = false
	s.Unheard = false
	// A fresh detector per agent turn: echo can leave a VAD stuck in speech, and then
	// barge-in would work only once.
	return s, append(acts, Action{Kind: ResetVAD})
}

// enterIdle gives the floor back to the caller and starts the silence clock.
func enterIdle(s State, acts []Action) (State, []Action) {
	acts = s.disarm(acts, TimerGate, TimerConfirm, TimerTailGrace, TimerFiller)
	s.Phase = Idle
	s.FirstAudioAt = time.Time{}
	s.GateOpen = false
	s.Queued = false
	return s, armSilence(&s, acts)
}

// armSilence starts the re-prompt (or, after one, the hang-up) clock while the caller is
// quiet and nobody holds the floor.
func armSilence(s *State, acts []Action) []Action {
	if s.Phase != Idle || s.CallerSpeaking {
		return acts
	}
	c := s.Config
	switch {
	case !s.Reprompted && c.SilenceMessage != "" && c.SilenceReprompt > 0:
		return append(acts, s.arm(TimerSilence, c.SilenceReprompt))
	case c.SilenceHangup > 0:
		wait := c.SilenceHangup
		if s.Reprompted && c.SilenceMessage != "" {
			wait -= c.SilenceReprompt
		}
		return append(acts, s.arm(TimerSilence, max(wait, time.Second)))
	}
	return acts
}

func onSpeechStart(s State, now time.Time) (State, []Action) {
	s.CallerSpeaking = true
	s.Reprompted = false
	s.Unheard = true
	acts := s.disarm(nil, TimerSilence)
	switch s.Phase {
	case TailGrace:
		// The agent is done and only its echo tail is left: this is the caller's next turn.
		// Recover its first syllables from the rescue ring; no clear, no interruption.
		s, acts = enterIdle(s, acts)
		return s, append(acts, Action{Kind: Note, Reason: NoteRescue}, Action{Kind: ReplayInbound})
	case Speaking, Draining:
		if !s.GateOpen {
			s.Suppressed = true
			return s, append(acts, Action{Kind: Note, Reason: NoteGateSuppressed})
		}
		if s.deferBargeIn() {
			return pendBargeIn(s, now, acts)
		}
		return bargeIn(s, acts)
	}
	return s, acts
}

// pendBargeIn waits for words before interrupting; STT now hears the caller.
func pendBargeIn(s State, _ time.Time, acts []Action) (State, []Action) {
	s.ResumePhase = s.Phase
	s.Phase = BargeInPending
	acts = append(acts, Action{Kind: Note, Reason: NoteBargeInPending}, s.arm(TimerConfirm, s.Config.BargeInConfirm))
	if !s.Config.ForwardSTTWhileSpeaking {
		acts = append(acts, Action{Kind: ReplayInbound})
	}
	return s, acts
}

// fillerOnly reports whether the only audio of the turn on the wire is the long-turn
// filler, still inside the barge-in gate, with STT deaf to the line: a final transcript
// then comes from words spoken before the filler.
func (s State) fillerOnly() bool {
	return (s.Phase == Speaking || s.Phase == Draining) && s.FillerSaid && !s.RealSentence &&
		!s.GateOpen && !s.Config.ForwardSTTWhileSpeaking
}

// bargeIn stops the agent: the caller interrupted.
func bargeIn(s State, acts []Action) (State, []Action) { return stopTurn(s, acts, true) }

// stopTurn cancels the turn and clears its audio from the line, recording what the
// caller heard of it when they interrupted it.
func stopTurn(s State, acts []Action, interrupted bool) (State, []Action) {
	acts = append(acts, Action{Kind: CancelTurn, Turn: s.Turn}, Action{Kind: ClearPlayout, Turn: s.Turn})
	if interrupted {
		acts = append(acts, Action{Kind: RecordInterrupted, Turn: s.Turn})
	}
	if (s.Phase == Speaking || s.Phase == Draining) && !s.Config.ForwardSTTWhileSpeaking {
		// STT did not hear the caller while the agent spoke: give it their first words.
		acts = append(acts, Action{Kind: ReplayInbound})
	}
	s.Suppressed = false
	return enterIdle(s, acts)
}

func onSpeechEnd(s State) (State, []Action) {
	s.CallerSpeaking = false
	var acts []Action
	if s.ListeningToSTT() {
		// Endpointing: our VAD heard the end of speech, so ask STT for its final now rather
		// than waiting for the provider's own (slower, noisier) endpointing.
		acts = append(acts, Action{Kind: FinalizeSTT})
	}
	if s.FillerDeferred && s.Phase == Thinking {
		// The filler waited for the caller: it goes out unless their words, final by then,
		// start a turn of their own (which disarms it).
		s.FillerDeferred = false
		acts = append(acts, s.arm(TimerFiller, fillerAfterSpeech))
	}
	acts = armSilence(&s, acts)
	if s.Deaf {
		return deafNotice(s, acts) // they finished speaking and nothing heard them
	}
	return s, acts
}

// onSTTLost: nothing hears the caller any more. The engine keeps trying to reopen a
// recognizer; if none is back within SilenceHangup the call ends, named for the cause.
// A caller who has already said something is told now; otherwise when they next finish
// speaking.
func onSTTLost(s State) (State, []Action) {
	if s.Deaf {
		return s, nil
	}
	s.Deaf = true
	var acts []Action
	if s.Config.SilenceHangup > 0 {
		acts = append(acts, s.arm(TimerDeaf, s.Config.SilenceHangup))
	}
	if s.Unheard && !s.CallerSpeaking {
		return deafNotice(s, acts)
	}
	return s, acts
}

// deafNotice tells the caller, once a call and only while the floor is theirs, that
// nothing can hear them: a turn of its own, like the re-prompt.
func deafNotice(s State, acts []Action) (State, []Action) {
	if s.DeafNoticed || s.Phase != Idle || s.Config.STTErrorMessage == "" {
		return s, acts
	}
	s.DeafNoticed = true
	s, acts = beginTurn(s, s.Turn+1, append(acts, Action{Kind: Note, Reason: NoteSTTNotice}))
	return s, append(acts, Action{Kind: Say, Turn: s.Turn, Text: s.Config.STTErrorMessage, Reason: "stt_error"})
}

func onTranscript(s State, in Input, now time.Time) (State, []Action) {
	text := normalize(in.Text)
	if text == "" {
		return s, nil
	}
	switch s.Phase {
	case Speaking, Draining, BargeInPending:
		if IsEcho(text, s.AgentText) {
			return s, []Action{{Kind: Note, Reason: NoteDropped, Text: "echo: " + in.Text}}
		}
		if s.isDuplicate(text, now) {
			return s, []Action{{Kind: Note, Reason: NoteDropped, Text: "duplicate: " + in.Text}}
		}
		if in.Final && s.fillerOnly() && !IsHallucination(in.Text) {
			// STT did not hear the line since the filler started, so these words were
			// spoken before it: the caller added to what they said, as in thinking.
			s, acts := stopTurn(s, nil, false)
			return commit(s, in.Text, text, now, acts)
		}
		if IsHallucination(in.Text) || !s.GateOpen || wordCount(text) < max(1, s.Config.BargeInMinWords) {
			return s, nil
		}
		var acts []Action
		s, acts = bargeIn(s, nil)
		if !in.Final {
			return s, acts
		}
		return commit(s, in.Text, text, now, acts)
	case TailGrace:
		if IsEcho(text, s.AgentText) {
			return s, []Action{{Kind: Note, Reason: NoteDropped, Text: "echo: " + in.Text}}
		}
		if !in.Final {
			return s, nil
		}
		s, acts := enterIdle(s, nil)
		acts = append(acts, Action{Kind: Note, Reason: NoteRescue})
		return commit(s, in.Text, text, now, acts)
	}
	if !in.Final {
		return s, nil
	}
	return commit(s, in.Text, text, now, nil)
}

// commit hands a finished caller utterance to the agent, unless a filter drops it.
func commit(s State, raw, norm string, now time.Time, acts []Action) (State, []Action) {
	switch {
	case IsHallucination(raw):
		return s, append(acts, Action{Kind: Note, Reason: NoteDropped, Text: "non-speech: " + raw})
	case s.isDuplicate(norm, now):
		return s, append(acts, Action{Kind: Note, Reason: NoteDropped, Text: "duplicate: " + raw})
	}
	s.LastCommit, s.LastCommitAt = norm, now
	if s.Phase == Thinking {
		// The caller added to what they said before the agent answered. One dispatch in
		// flight: abandon the old one; the agent gets both messages in the new turn.
		acts = append(acts, Action{Kind: CancelTurn, Turn: s.Turn})
	}
	s, acts = beginTurn(s, s.Turn+1, acts)
	acts = append(acts, Action{Kind: Dispatch, Turn: s.Turn, Text: raw})
	if s.Config.LongTurnMessage != "" && s.Config.LongTurnAfter > 0 {
		acts = append(acts, s.arm(TimerFiller, s.Config.LongTurnAfter))
	}
	return s, acts
}

// isDuplicate: the same words within 2 s, or one a word-prefix of the other within 500 ms
// (an is_final then its speech_final twin). A different fast follow-up is kept.
func (s State) isDuplicate(norm string, now time.Time) bool {
	if s.LastCommit == "" {
		return false
	}
	age := now.Sub(s.LastCommitAt)
	if norm == s.LastCommit && age < duplicateWindow {
		return true
	}
	return age < nearDuplicateWindow && (wordPrefix(norm, s.LastCommit) || wordPrefix(s.LastCommit, norm))
}

func onDTMF(s State, in Input, now time.Time) (State, []Action) {
	if in.Text == "" {
		return s, nil
	}
	s.Reprompted = false
	acts := s.disarm(nil, TimerSilence)
	text := "[DTMF " + in.Text + "]"
	if s.AgentHoldsFloor() || s.Phase == TailGrace {
		// A key press is deliberate: it interrupts at once, gate or not.
		if s.Phase == TailGrace {
			s, acts = enterIdle(s, acts)
		} else {
			s, acts = bargeIn(s, acts)
		}
	}
	s.LastCommit, s.LastCommitAt = "", now // keys are never duplicates of speech
	if s.Phase == Thinking {
		acts = append(acts, Action{Kind: CancelTurn, Turn: s.Turn})
	}
	s, acts = beginTurn(s, s.Turn+1, acts)
	acts = append(acts, Action{Kind: Dispatch, Turn: s.Turn, Text: text})
	if s.Config.LongTurnMessage != "" && s.Config.LongTurnAfter > 0 {
		acts = append(acts, s.arm(TimerFiller, s.Config.LongTurnAfter))
	}
	return s, acts
}

func onSentenceQueued(s State, in Input) (State, []Action) {
	if in.Turn != s.Turn {
		return s, nil
	}
	if s.AgentText != "" {
		s.AgentText += " "
	}
	s.AgentText += in.Text
	if in.Filler {
		return s, nil
	}
	s.RealSentence = true
	// The reply has started: a filler now would talk over it.
	return s, s.disarm(nil, TimerFiller)
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
	// The gate is anchored on audio really reaching the wire, not on dispatch: a slow
	// first token must not let line noise cancel a reply the caller never heard. Behind
	// the notice it stays shut until the notice has played.
	if s.Noticing {
		return s, nil
	}
	return s, openGateLater(&s)
}

func onSpeechQueued(s State, in Input) State {
	if in.Turn != s.Turn {
		return s
	}
	s.Queued = true
	switch s.Phase {
	case Speaking:
		s.Phase = Draining
	case BargeInPending:
		s.ResumePhase = Draining
	}
	return s
}

func onPlayoutDone(s State, in Input) (State, []Action) {
	if in.Turn != s.Turn || !s.Queued {
		return s, nil
	}
	switch s.Phase {
	case Thinking, Speaking, Draining, BargeInPending:
	default:
		return s, nil
	}
	acts := s.disarm(nil, TimerGate, TimerConfirm, TimerFiller)
	s.Noticing = false // played to its end, notice and all
	if s.Closing {
		return end(s, voice.EndShutdown) // the caller heard the goodbye
	}
	if s.Config.Voicemail {
		return end(s, voice.EndAgentHangup) // the message is on the recording
	}
	s.Phase = TailGrace
	if s.Config.TailGrace <= 0 {
		return graceEnd(s, acts)
	}
	return s, append(acts, s.arm(TimerTailGrace, s.Config.TailGrace))
}

// graceEnd hands the floor back after the echo tail.
func graceEnd(s State, acts []Action) (State, []Action) {
	suppressed := s.Suppressed
	s.Suppressed = false
	s, acts = enterIdle(s, acts)
	acts = append(acts, Action{Kind: ResetVAD})
	if suppressed {
		// Speech swallowed by the gate is not lost: STT hears it now.
		acts = append(acts, Action{Kind: ReplayInbound})
	}
	return s, acts
}

func onAgentError(s State, in Input) (State, []Action) {
	if in.Turn != s.Turn || in.Text == voice.KindCanceled.String() || s.Config.ErrorMessage == "" {
		return s, nil
	}
	switch s.Phase {
	case Thinking, Speaking, Draining, BargeInPending:
	default:
		return s, nil
	}
	acts := s.disarm(nil, TimerFiller)
	// Never the runtime's own error text: the configured message, after whatever part of
	// the reply already went out.
	return s, append(acts, Action{Kind: Say, Turn: s.Turn, Text: s.Config.ErrorMessage, Reason: "error"})
}

func onTimer(s State, in Input) (State, []Action) {
	if in.Timer >= numTimers || !s.Timers[in.Timer].Armed || s.Timers[in.Timer].Gen != in.Gen {
		return s, nil // cancelled or superseded
	}
	s.Timers[in.Timer].Armed = false
	switch in.Timer {
	case TimerMaxCall:
		return end(s, voice.EndMaxDuration)
	case TimerGate:
		s.GateOpen = true
		if s.Suppressed && s.CallerSpeaking && (s.Phase == Speaking || s.Phase == Draining) {
			// The caller started inside the gate and is still talking now it opens: that
			// is no noise burst, it is an interruption.
			s.Suppressed = false
			if s.deferBargeIn() {
				return pendBargeIn(s, time.Time{}, nil)
			}
			return bargeIn(s, nil)
		}
	case TimerConfirm:
		if s.Phase == BargeInPending {
			s.Phase = s.ResumePhase // nothing real was said: the agent carries on
			return s, []Action{{Kind: Note, Reason: NoteBargeInResumed}}
		}
	case TimerTailGrace:
		if s.Phase == TailGrace {
			return graceEnd(s, nil)
		}
	case TimerFiller:
		return sayFiller(s, nil)
	case TimerSilence:
		return onSilence(s)
	case TimerDeaf:
		if s.Deaf {
			return end(s, voice.EndSTTFailed)
		}
	case TimerGreeting:
		if s.Greeting {
			s.Greeting = false
			return speakFirst(s, []Action{{Kind: Note, Reason: NoteGreetingOver}})
		}
	}
	return s, nil
}

// onGreetingSpeech follows a voicemail greeting the message waits for: speech holds the
// message back, and the quiet after it (the greeting and its beep are over) lets it go.
func onGreetingSpeech(s State, k InputKind) (State, []Action) {
	if k == SpeechStart {
		return s, s.disarm(nil, TimerGreeting)
	}
	return s, []Action{s.arm(TimerGreeting, s.Config.GreetingQuiet)}
}

// onAgentProgress: the runtime started a tool. The caller is going to wait, so the filler
// goes out now instead of when its timer runs out.
func onAgentProgress(s State, in Input) (State, []Action) {
	if in.Turn != s.Turn || s.Config.LongTurnMessage == "" {
		return s, nil
	}
	return sayFiller(s, s.disarm(nil, TimerFiller))
}

// fillerAfterSpeech is how long a filler that came due while the caller spoke waits after
// they stop: time for STT's final, which makes their words a turn and the filler moot.
const fillerAfterSpeech = 700 * time.Millisecond

// sayFiller speaks the long-turn filler once, only while nothing of the turn has been
// heard and no reply sentence has started, and never over the caller: started while they
// speak, it would take the floor (STT stops hearing the line) before their words are a
// turn, and they would go unheard until the slow run ends.
func sayFiller(s State, acts []Action) (State, []Action) {
	if s.Phase != Thinking || s.RealSentence || s.FillerSaid || !s.FirstAudioAt.IsZero() {
		return s, acts
	}
	if s.CallerSpeaking {
		s.FillerDeferred = true
		return s, acts
	}
	s.FillerSaid = true
	return s, append(acts,
		Action{Kind: Note, Reason: NoteFiller, Turn: s.Turn},
		Action{Kind: Say, Turn: s.Turn, Text: s.Config.LongTurnMessage, Reason: "filler"})
}

func onSilence(s State) (State, []Action) {
	if s.Phase != Idle || s.CallerSpeaking {
		return s, nil
	}
	if !s.Reprompted && s.Config.SilenceMessage != "" && s.Config.SilenceReprompt > 0 {
		s.Reprompted = true
		if s.Deaf {
			return s, armSilence(&s, nil) // asking is pointless: nothing would hear the answer
		}
		s, acts := beginTurn(s, s.Turn+1, []Action{{Kind: Note, Reason: NoteReprompt}})
		return s, append(acts, Action{Kind: Say, Turn: s.Turn, Text: s.Config.SilenceMessage, Reason: "reprompt"})
	}
	if s.Deaf {
		return end(s, voice.EndSTTFailed) // the caller may have talked all along: nothing heard them
	}
	return end(s, voice.EndSilence)
}

func end(s State, reason voice.EndReason) (State, []Action) {
	var acts []Action
	if s.Phase != Idle {
		acts = append(acts, Action{Kind: CancelTurn, Turn: s.Turn})
	}
	for id := TimerID(1); id < numTimers; id++ {
		acts = s.disarm(acts, id)
	}
	s.Phase = Ended
	return s, append(acts, Action{Kind: EndCall, End: reason})
}
