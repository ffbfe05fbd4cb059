package call

import (
	"fmt"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/voice"
)

// do carries out one action of the turn machine.
func (c *Call) do(a turn.Action) {
	now := c.deps.Clock.Now()
	j := c.deps.Journal
	switch a.Kind {
	case turn.Dispatch:
		j.Record(now, obs.Event{Type: obs.TurnCommit, Turn: a.Turn, Text: a.Text})
		c.history.forget(a.Turn - 1)
		c.history.user(a.Text)
		c.transcript(a.Turn, voice.RoleUser, a.Text, now, false)
		req := voice.TurnRequest{CallID: c.info.CallID, Turn: a.Turn, History: c.history.snapshot(),
			Unseen: c.history.unseen(), CallerHash: c.cfg.CallerHash}
		j.Record(now, obs.Event{Type: obs.AgentRequest, Turn: a.Turn})
		c.timing = turnTiming{turn: a.Turn, finalAt: c.lastFinalAt, requestAt: now, overhead: -1}
		c.lastFinalAt = time.Time{}
		c.reply = c.startReply(a.Turn, &req)
	case turn.CancelTurn:
		if c.reply != nil && c.reply.turn == a.Turn {
			c.reply.cancel()
			c.reply = nil
		}
		c.playout.drop(a.Turn)
	case turn.ClearPlayout:
		c.playout.clearCarrier(a.Turn)
		j.Record(now, obs.Event{Type: obs.Clear, Turn: a.Turn})
	case turn.RecordInterrupted:
		heard := c.history.interrupt(a.Turn, now)
		c.transcript(a.Turn, voice.RoleAssistant, heard, now, true)
		j.Record(now, obs.Event{Type: obs.BargeIn, Turn: a.Turn, Text: heard})
		j.Record(now, obs.Event{Type: obs.TurnInterrupted, Turn: a.Turn})
	case turn.ReplayInbound:
		c.replayInbound()
	case turn.Say:
		c.say(a)
	case turn.FinalizeSTT:
		if c.stt != nil {
			_ = c.stt.Finalize()
		}
	case turn.ResetVAD:
		c.vad.Reset()
	case turn.ArmTimer:
		c.armTimer(a.Timer, a.Gen, a)
	case turn.CancelTimer:
		if t := c.timers[a.Timer]; t != nil {
			t.Stop()
			delete(c.timers, a.Timer)
		}
	case turn.Note:
		j.Record(now, obs.Event{Type: a.Reason, Turn: a.Turn, Text: a.Text})
	case turn.EndCall:
		c.endReason = a.End
	default:
		panic(fmt.Sprintf("call: unhandled turn action %v", a.Kind))
	}
}

func (c *Call) armTimer(id turn.TimerID, gen uint32, a turn.Action) {
	if t := c.timers[id]; t != nil {
		t.Stop()
	}
	if c.timers == nil {
		c.timers = map[turn.TimerID]clock.Timer{}
	}
	c.timers[id] = c.deps.Clock.AfterFunc(a.After, func() { c.post(timerFired{id: id, gen: gen}) })
}

func (c *Call) say(a turn.Action) {
	if a.Reason == "notice" {
		c.reply = c.startNotice(a.Turn, a.Text)
		return
	}
	if c.reply != nil && c.reply.turn == a.Turn {
		switch a.Reason {
		case "greeting": // after the notice, in its turn
			c.history.assistant(a.Turn, a.Text)
			c.reply.queue.push(sentenceMessage, a.Text)
		case "filler":
			c.reply.queue.pushFront(sentence{text: a.Text, kind: sentenceFiller})
		default: // the error message, after whatever part of the reply is already queued
			c.reply.queue.push(sentenceError, a.Text)
		}
		return
	}
	// Greeting and re-prompt: the agent "said" them, so they go in its history.
	c.history.assistant(a.Turn, a.Text)
	c.reply = c.startReply(a.Turn, nil, a.Text)
}

// replayInbound sends STT the caller audio it did not hear while the agent was speaking,
// so the first words of an interruption are transcribed.
func (c *Call) replayInbound() {
	for {
		frame, ok := c.rescue.Pop(c.frame)
		if !ok {
			return
		}
		c.hearFrame(frame) // held for the next recognizer if none is open
	}
}

// handle applies one event from another goroutine.
func (c *Call) handle(ev any) {
	now := c.deps.Clock.Now()
	j := c.deps.Journal
	switch e := ev.(type) {
	case inLoop:
		e()
	case legEnded:
		c.legEnded(e.err)
	case markEchoed:
		c.onMark(e.name, now)
	case dtmfPressed:
		j.Record(now, obs.Event{Type: obs.DTMF, Digit: e.digit})
		c.step(turn.Input{Kind: turn.DTMF, Text: e.digit})
	case frameMalformed:
		j.Record(now, obs.Event{Type: obs.MediaMalformed, Message: e.err.Error(), Count: int(c.malformed.Load())})
	case audioOnWire:
		c.onAudioOnWire(e, now)
	case agentFirstToken:
		if c.current(e.turn) {
			j.Record(now, obs.Event{Type: obs.AgentFirstToken, Turn: e.turn})
		}
	case agentProgress:
		if c.current(e.turn) {
			j.Record(now, obs.Event{Type: obs.AgentProgress, Turn: e.turn, Text: e.label})
			c.step(turn.Input{Kind: turn.AgentProgress, Turn: e.turn, Text: e.label})
		}
	case agentDone:
		c.onAgentDone(e)
	case agentFailed:
		c.onAgentFailed(e)
	case ttsRequested:
		if c.current(e.turn) {
			kind := ""
			switch e.kind {
			case sentenceFiller:
				kind = "filler"
			case sentenceNotice:
				kind = "notice"
			}
			j.Record(now, obs.Event{Type: obs.TTSRequest, Turn: e.turn, Text: e.text, Kind: kind})
			c.step(turn.Input{Kind: turn.SentenceQueued, Turn: e.turn, Text: e.text, Filler: e.kind == sentenceFiller})
		}
	case ttsFirstByte:
		c.history.firstByte(e.turn, e.mark, now)
		if c.current(e.turn) && c.ttsByteTurn != e.turn {
			c.ttsByteTurn = e.turn
			if c.timing.turn == e.turn {
				c.timing.ttsAt = now
			}
			j.Record(now, obs.Event{Type: obs.TTSFirstByte, Turn: e.turn})
		}
	case ttsFailed:
		c.journalNamed(obs.TTSError, e.turn, e.name, e.err)
		c.log.Warn("a voice failed a sentence", "turn", e.turn, "tts", e.name, "err", e.err)
	case ttsFallbackUsed:
		j.Record(now, obs.Event{Type: obs.TTSFallback, Turn: e.turn, Name: e.name})
	case ttsLost:
		c.onTTSLost(e, now)
	case ttsDead:
		if c.current(e.turn) {
			c.log.Error("no voice can speak, not even the error message: ending the call", "turn", e.turn)
			closing := c.fsm.Closing // a stopping server's goodbye: the call ends as its shutdown
			c.step(turn.Input{Kind: turn.Hangup})
			if c.endReason = voice.EndTTSFailed; closing {
				c.endReason = voice.EndShutdown
			}
		}
	case segmentQueued:
		c.history.segment(e.turn, e.mark, e.text, e.dur, e.cut || e.kind != sentenceReply && e.kind != sentenceMessage)
	case speechQueued:
		j.Record(now, obs.Event{Type: obs.PlayoutQueued, Turn: e.turn})
		c.step(turn.Input{Kind: turn.SpeechQueued, Turn: e.turn})
	case timerFired:
		j.Record(now, obs.Event{Type: obs.TimerFired, Name: e.id.String(), Count: int(e.gen)})
		c.step(turn.Input{Kind: turn.TimerFired, Timer: e.id, Gen: e.gen})
	case goPanicked:
		c.endReason = voice.EndInternalError
	case transferring:
		c.transferring = e.on
	case endRequested:
		c.step(turn.Input{Kind: turn.Hangup})
		c.endReason = e.reason
	case goodbyeRequested:
		j.Record(now, obs.Event{Type: obs.CallGoodbye, Text: e.text})
		// The reply being cut goes in the transcript as far as the caller heard it.
		if text, interrupted, ok := c.history.settled(c.fsm.Turn, now, true); ok {
			c.transcript(c.fsm.Turn, voice.RoleAssistant, text, now, interrupted)
		}
		c.step(turn.Input{Kind: turn.Goodbye, Text: e.text})
	case sttOpened:
		c.onSTTOpened(e)
	case sttTimer:
		c.onSTTTimer(e)
	default:
		panic(fmt.Sprintf("call: unhandled event %T", ev))
	}
}

// onTTSLost: the caller never heard the sentence, so the agent's history and the
// transcript must not hold it.
func (c *Call) onTTSLost(e ttsLost, now time.Time) {
	c.deps.Journal.Record(now, obs.Event{Type: obs.TTSLost, Turn: e.turn, Text: e.text})
	c.log.Warn("no voice could speak a sentence; the caller did not hear it", "turn", e.turn)
	if e.kind == sentenceReply || e.kind == sentenceMessage {
		c.history.lose(e.turn, e.text)
	}
	if e.kind == sentenceNotice {
		c.notice = "" // nor the transcript
	}
}

// onAudioOnWire: a turn's first audio reached the carrier (the reply's, or the long-turn
// filler's), or, in a turn the filler began, the reply's own first audio did. The turn
// machine hears of the first; the caller's wait for the answer ends with the reply.
func (c *Call) onAudioOnWire(e audioOnWire, now time.Time) {
	j := c.deps.Journal
	if e.start == audioAfterFiller {
		j.Record(now, obs.Event{Type: obs.PlayoutReplyAudio, Turn: e.turn})
		c.turnAnswered(e.turn, now)
		return
	}
	kind := ""
	if e.start == audioFiller {
		kind = "filler"
	}
	c.history.audioStarted(e.turn, now)
	j.Record(now, obs.Event{Type: obs.PlayoutFirstAudio, Turn: e.turn, Kind: kind})
	c.firstAudio(e.turn, now)
	if e.start == audioReply {
		c.turnAnswered(e.turn, now)
	}
	c.step(turn.Input{Kind: turn.AudioOnWire, Turn: e.turn})
}

// firstAudio notes Handset's share of a caller turn's wait, by the same definition as
// obs.Turns: final to agent request, plus TTS first byte to the first audio on the wire
// (the filler's, when it went first).
func (c *Call) firstAudio(turnN int, now time.Time) {
	t := &c.timing
	if t.turn != turnN || t.requestAt.IsZero() || t.finalAt.IsZero() || t.ttsAt.IsZero() {
		return
	}
	t.overhead = t.requestAt.Sub(t.finalAt) + now.Sub(t.ttsAt)
}

// turnAnswered gives the metrics a caller turn's latency once its reply's first audio is
// on the wire, by the same definition as obs.Turns: response is STT final to the reply's
// first audio (after the filler, when one went first), and Handset's share as firstAudio
// noted it.
func (c *Call) turnAnswered(turnN int, now time.Time) {
	t := c.timing
	if t.turn != turnN || t.requestAt.IsZero() {
		return // the greeting or a re-prompt: no caller turn behind it
	}
	response := time.Duration(-1)
	if !t.finalAt.IsZero() {
		response = now.Sub(t.finalAt)
	}
	c.deps.Metrics.TurnAnswered(response, t.overhead)
	c.timing = turnTiming{overhead: -1}
}

// current reports whether events of turn still matter (the turn was not cancelled).
func (c *Call) current(turn int) bool { return c.reply != nil && c.reply.turn == turn }

func (c *Call) legEnded(err error) {
	if err != nil && c.ctx.Err() == nil {
		c.log.Warn("media leg failed", "err", err)
		c.endReason = voice.EndMediaError
		return
	}
	c.step(turn.Input{Kind: turn.Hangup})
	if c.transferring {
		c.endReason = voice.EndTransferred
	}
}

func (c *Call) onMark(name string, now time.Time) {
	var t, seg int
	if _, err := fmt.Sscanf(name, "t%d-s%d", &t, &seg); err == nil {
		if c.history.heard(t, name, now) {
			c.deps.Journal.Record(now, obs.Event{Type: obs.PlayoutMark, Turn: t, Name: name})
		}
		return
	}
	if n, err := fmt.Sscanf(name, noticeMark, &t); err == nil && n == 1 {
		c.noticeHeard(t, name, now)
		return
	}
	if _, err := fmt.Sscanf(name, "t%d-end", &t); err == nil {
		c.deps.Journal.Record(now, obs.Event{Type: obs.PlayoutDone, Turn: t})
		if text, interrupted, ok := c.history.settled(t, now, false); ok {
			c.transcript(t, voice.RoleAssistant, text, now, interrupted)
		}
		c.step(turn.Input{Kind: turn.PlayoutDone, Turn: t})
	}
}

func (c *Call) onAgentDone(e agentDone) {
	if !c.current(e.turn) {
		return
	}
	c.deps.Journal.Record(c.deps.Clock.Now(), obs.Event{Type: obs.AgentDone, Turn: e.turn, Text: e.text,
		InputTokens: e.usage.InputTokens, OutputTokens: e.usage.OutputTokens})
	c.history.finished(e.turn, e.text)
	c.step(turn.Input{Kind: turn.AgentDone, Turn: e.turn, Text: e.text})
	if c.reply != nil {
		c.reply.queue.close()
	}
}

func (c *Call) onAgentFailed(e agentFailed) {
	if !c.current(e.turn) {
		return // cancelled by barge-in or hang-up: not a failure
	}
	c.journalError(obs.AgentError, e.turn, e.err)
	c.log.Warn("agent turn failed", "turn", e.turn, "err", e.err)
	c.history.assistant(e.turn, e.partial)
	c.step(turn.Input{Kind: turn.AgentError, Turn: e.turn, Text: voice.KindOf(e.err).String()})
	if c.reply != nil {
		c.reply.queue.close()
	}
}
