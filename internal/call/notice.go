package call

import (
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/voice"
)

// The recording notice (turn.Config.Notice) is said first, in turn 0, ahead of the
// greeting and in the same reply: it is synthesised, played, journaled (tts.request kind
// "notice") and written to the transcript like any agent speech, but it is not the
// agent's words, so the agent's history never holds it. The turn machine keeps the caller
// from cutting it short; a mark behind it tells the machine when the caller has heard it
// whole, and the greeting's barge-in gate counts from then.

// noticeMark names the mark queued behind the notice's audio (t<turn>-notice).
const noticeMark = "t%d-notice"

// startNotice begins turn's reply with the notice. Its queue stays open until this step's
// actions are done (noticeQueued), so the greeting the machine asks for next joins it.
func (c *Call) startNotice(turnN int, text string) *reply {
	r := c.beginReply(turnN, nil, false, sentenceNotice, text)
	c.notice, c.noticeOpen = text, r
	return r
}

// noticeQueued closes the notice's reply once the step that began it has queued all it
// asked for.
func (c *Call) noticeQueued() {
	if c.noticeOpen != nil {
		c.noticeOpen.queue.close()
		c.noticeOpen = nil
	}
}

// noticeHeard: the carrier played the notice through. The transcript gets its line, and
// the turn machine lets the caller interrupt what follows.
func (c *Call) noticeHeard(turnN int, mark string, now time.Time) {
	if !c.fsm.Noticing { // a goodbye cut it: the mark came back on the clear
		return
	}
	c.deps.Journal.Record(now, obs.Event{Type: obs.PlayoutMark, Turn: turnN, Name: mark})
	c.transcript(turnN, voice.RoleAssistant, c.notice, now, false) // empty (skipped) if no voice spoke it
	c.notice = ""
	c.step(turn.Input{Kind: turn.NoticeHeard, Turn: turnN})
}
