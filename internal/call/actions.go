package call

import (
	"fmt"

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
		c.history.user(a.Text)
		req := voice.TurnRequest{CallID: c.info.CallID, Turn: a.Turn, History: c.history.snapshot(), CallerHash: c.cfg.CallerHash}
		j.Record(now, obs.Event{Type: obs.AgentRequest, Turn: a.Turn})
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
		heard := c.history.interrupt(a.Turn)
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
	case turn.ArmTimer:
		id := a.Timer
		c.timers = append(c.timers, c.deps.Clock.AfterFunc(a.After, func() { c.post(timerFired{id: id}) }))
	case turn.EndCall:
		c.endReason = a.End
	default:
		panic(fmt.Sprintf("call: unhandled turn action %v", a.Kind))
	}
}

func (c *Call) say(a turn.Action) {
	if c.reply != nil && c.reply.turn == a.Turn {
		c.reply.queue.push(a.Text) // after whatever part of the reply is already queued
		return
	}
	if a.Reason == "greeting" {
		c.history.assistant(a.Turn, a.Text)
	}
	c.reply = c.startReply(a.Turn, nil, a.Text)
}

// replayInbound sends STT the caller audio it did not hear while the agent was speaking,
// so the first words of an interruption are transcribed.
func (c *Call) replayInbound() {
	if c.stt == nil {
		c.rescue.Reset()
		return
	}
	for {
		frame, ok := c.rescue.Pop(c.frame)
		if !ok {
			return
		}
		_ = c.stt.Write(frame)
	}
}

// handle applies one event from another goroutine.
func (c *Call) handle(ev any) {
	now := c.deps.Clock.Now()
	j := c.deps.Journal
	switch e := ev.(type) {
	case legEnded:
		c.legEnded(e.err)
	case markEchoed:
		c.onMark(e.name)
	case dtmfPressed:
		j.Record(now, obs.Event{Type: obs.DTMF, Turn: c.fsm.Turn, Digit: e.digit})
		c.step(turn.Input{Kind: turn.DTMF, Text: e.digit})
	case frameMalformed:
		j.Record(now, obs.Event{Type: obs.MediaMalformed, Message: e.err.Error(), Count: int(c.malformed.Load())})
	case audioOnWire:
		j.Record(now, obs.Event{Type: obs.PlayoutFirstAudio, Turn: e.turn})
		c.step(turn.Input{Kind: turn.AudioOnWire, Turn: e.turn})
	case agentFirstToken:
		if c.current(e.turn) {
			j.Record(now, obs.Event{Type: obs.AgentFirstToken, Turn: e.turn})
		}
	case agentProgress:
		if c.current(e.turn) {
			j.Record(now, obs.Event{Type: obs.AgentProgress, Turn: e.turn, Text: e.label})
		}
	case agentDone:
		c.onAgentDone(e)
	case agentFailed:
		c.onAgentFailed(e)
	case ttsRequested:
		if c.current(e.turn) {
			j.Record(now, obs.Event{Type: obs.TTSRequest, Turn: e.turn, Text: e.text})
		}
	case ttsFirstByte:
		if c.current(e.turn) {
			j.Record(now, obs.Event{Type: obs.TTSFirstByte, Turn: e.turn})
		}
	case ttsFailed:
		c.journalError(obs.TTSError, e.turn, e.err)
	case segmentQueued:
		c.history.segment(e.turn, e.mark, e.text)
	case speechQueued:
		c.step(turn.Input{Kind: turn.SpeechQueued, Turn: e.turn})
	case timerFired:
		c.step(turn.Input{Kind: turn.TimerFired, Timer: e.id})
	case goPanicked:
		c.endReason = voice.EndInternalError
	default:
		panic(fmt.Sprintf("call: unhandled event %T", ev))
	}
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
}

func (c *Call) onMark(name string) {
	var t, seg int
	if _, err := fmt.Sscanf(name, "t%d-s%d", &t, &seg); err == nil {
		if c.history.heard(t, name) {
			c.deps.Journal.Record(c.deps.Clock.Now(), obs.Event{Type: obs.PlayoutMark, Turn: t, Name: name})
		}
		return
	}
	if _, err := fmt.Sscanf(name, "t%d-end", &t); err == nil {
		c.step(turn.Input{Kind: turn.PlayoutDone, Turn: t})
	}
}

func (c *Call) onAgentDone(e agentDone) {
	if !c.current(e.turn) {
		return
	}
	c.deps.Journal.Record(c.deps.Clock.Now(), obs.Event{Type: obs.AgentDone, Turn: e.turn, Text: e.text})
	c.history.assistant(e.turn, e.text)
	c.step(turn.Input{Kind: turn.AgentDone, Turn: e.turn, Text: e.text})
	c.reply.queue.close()
}

func (c *Call) onAgentFailed(e agentFailed) {
	if !c.current(e.turn) {
		return // cancelled by barge-in or hang-up: not a failure
	}
	c.journalError(obs.AgentError, e.turn, e.err)
	c.log.Warn("agent turn failed", "turn", e.turn, "err", e.err)
	c.history.assistant(e.turn, e.partial)
	c.step(turn.Input{Kind: turn.AgentError, Turn: e.turn, Text: voice.KindOf(e.err).String()})
	c.reply.queue.close()
}
