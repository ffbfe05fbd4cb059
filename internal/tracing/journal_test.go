package tracing

import (
	"time"

	"github.com/handset-voice/handset/internal/obs"
)

// callerWords is what the caller says in every test turn: no span may carry it.
const callerWords = "my card number is four one one one"

// script writes a journal the way a call does, on a clock that moves in microseconds so
// that a figure rounded to the millisecond would show.
type script struct {
	start  time.Time
	now    time.Duration
	events []obs.Event
}

func newScript() *script {
	s := &script{start: time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)}
	s.add(obs.Event{Type: obs.CallStart, Carrier: "twilio", Direction: "inbound", CallerHash: "ch_5f3a",
		Attestation: "A", Agent: "openai", STT: "deepgram", TTS: "elevenlabs"})
	return s
}

// after moves the clock on by ms (fractions allowed) and records e then.
func (s *script) after(ms float64, e obs.Event) *script {
	s.now += time.Duration(ms * float64(time.Millisecond))
	return s.add(e)
}

func (s *script) add(e obs.Event) *script {
	e.TS = s.start.Add(s.now)
	e.MS = s.now.Milliseconds()
	s.events = append(s.events, e)
	return s
}

// greeting: the first message, played to its end.
func (s *script) greeting() *script {
	return s.after(8.2, obs.Event{Type: obs.TTSRequest, Text: "Hello, this is Handset."}).
		after(3.1, obs.Event{Type: obs.MediaFirstIn}).
		after(97.35, obs.Event{Type: obs.TTSFirstByte}).
		after(11.02, obs.Event{Type: obs.PlayoutFirstAudio}).
		after(1400.4, obs.Event{Type: obs.PlayoutMark, Name: "t0-s1"}).
		after(9.9, obs.Event{Type: obs.PlayoutDone})
}

// asks is the caller's side of turn n: speech, partials, the final and the commit.
func (s *script) asks(n int) *script {
	return s.after(700.25, obs.Event{Type: obs.VADSpeechStart}).
		after(350.5, obs.Event{Type: obs.STTPartial, Text: callerWords[:10]}).
		after(651.75, obs.Event{Type: obs.VADSpeechEnd}).
		after(183.417, obs.Event{Type: obs.STTFinal, Text: callerWords}).
		after(2.06, obs.Event{Type: obs.TurnCommit, Turn: n, Text: callerWords})
}

// answers is the agent's reply to turn n, up to its first audio on the wire.
func (s *script) answers(n int) *script {
	return s.after(1.3, obs.Event{Type: obs.AgentRequest, Turn: n}).
		after(412.77, obs.Event{Type: obs.AgentFirstToken, Turn: n}).
		after(88.123, obs.Event{Type: obs.TTSRequest, Turn: n, Text: "Sure."}).
		after(131.9, obs.Event{Type: obs.TTSFirstByte, Turn: n}).
		after(6.66, obs.Event{Type: obs.PlayoutFirstAudio, Turn: n}).
		after(40.4, obs.Event{Type: obs.AgentDone, Turn: n, Text: "Sure. We open at nine.", InputTokens: 812, OutputTokens: 9})
}

// played: the reply of turn n plays to its end.
func (s *script) played(n int) *script {
	return s.after(1300.5, obs.Event{Type: obs.PlayoutMark, Turn: n, Name: "s1"}).
		after(10.01, obs.Event{Type: obs.PlayoutDone, Turn: n})
}

// bargesIn: the caller talks over the reply of turn n.
func (s *script) bargesIn(n int) *script {
	return s.after(620.3, obs.Event{Type: obs.BargeInPending, Turn: n}).
		after(180.2, obs.Event{Type: obs.Clear, Turn: n}).
		add(obs.Event{Type: obs.BargeIn, Turn: n, Text: callerWords}).
		add(obs.Event{Type: obs.TurnInterrupted, Turn: n})
}

// agentFails: turn n's runtime times out, and the error message is spoken.
func (s *script) agentFails(n int) *script {
	return s.after(1.1, obs.Event{Type: obs.AgentRequest, Turn: n}).
		after(30000.5, obs.Event{Type: obs.AgentError, Turn: n, Kind: "timeout", Message: "no answer in 30 s"}).
		after(3.3, obs.Event{Type: obs.TTSRequest, Turn: n, Text: "Sorry, something went wrong."}).
		after(120.12, obs.Event{Type: obs.TTSFirstByte, Turn: n}).
		after(5.5, obs.Event{Type: obs.PlayoutFirstAudio, Turn: n})
}

func (s *script) ends(reason string) []obs.Event {
	s.after(500, obs.Event{Type: obs.CallEnd, Reason: reason})
	return s.events
}

// threeTurns: the greeting; a turn answered; a turn the caller barges in on, with a keypress;
// a turn whose agent times out; the caller hangs up.
func threeTurns() []obs.Event {
	s := newScript().greeting()
	s.asks(1).answers(1).played(1)
	s.asks(2).answers(2).bargesIn(2).after(20, obs.Event{Type: obs.DTMF, Digit: "7"})
	s.asks(3).agentFails(3).played(3)
	return s.ends("caller_hangup")
}

// healthyCall: the greeting and two turns answered.
func healthyCall() []obs.Event {
	s := newScript().greeting()
	s.asks(1).answers(1).played(1)
	s.asks(2).answers(2).played(2)
	return s.ends("caller_hangup")
}
