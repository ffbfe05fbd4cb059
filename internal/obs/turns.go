package obs

import (
	"math"
	"time"
)

// TurnSummary is one caller turn read back from a journal, with the latency breakdown
// INTERFACE.md names, in milliseconds to a tenth (computed from the nanosecond timestamps).
// A latency is -1 when the journal lacks one of its two milestones.
type TurnSummary struct {
	Turn        int    `json:"turn"`
	Caller      string `json:"caller"`      // committed caller text
	Reply       string `json:"reply"`       // the agent's reply text
	Interrupted bool   `json:"interrupted"` // the caller barged in
	Error       string `json:"error,omitempty"`
	// InputTokens and OutputTokens are the turn's tokens as the runtime reported them
	// (agent.done); absent when it reported none.
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`

	EndpointMS  float64 `json:"endpoint_ms"`   // speech end to STT final
	AgentTTFTMS float64 `json:"agent_ttft_ms"` // agent request to first token
	TTSTTFBMS   float64 `json:"tts_ttfb_ms"`   // first TTS request to its first byte
	// ResponseMS is STT final to the reply's first audio on the wire: what the caller
	// waited for the answer. In a turn the long-turn filler began, the filler does not end
	// the wait; FillerMS says when it started.
	ResponseMS float64 `json:"response_ms"`
	FillerMS   float64 `json:"filler_ms"`   // STT final to the filler's first audio; -1 without one
	OverheadMS float64 `json:"overhead_ms"` // Handset's own share: final to request, TTS first byte to first audio
	// FirstAudioMS is when the reply's first audio went out, in call time.
	FirstAudioMS int64 `json:"first_audio_ms"`
}

// Turns groups a journal's events into caller turns. The VAD and STT events before a
// commit belong to the turn it commits.
func Turns(events []Event) []TurnSummary {
	var out []TurnSummary
	byTurn := map[int]int{}
	var lastSpeechEnd, lastFinal *Event
	for i := range events {
		e := &events[i]
		switch e.Type {
		case VADSpeechEnd:
			lastSpeechEnd = e
		case STTFinal:
			lastFinal = e
		case TurnCommit:
			s := TurnSummary{Turn: e.Turn, Caller: e.Text, EndpointMS: -1, AgentTTFTMS: -1, TTSTTFBMS: -1, ResponseMS: -1, FillerMS: -1, OverheadMS: -1, FirstAudioMS: -1}
			if lastFinal != nil && lastSpeechEnd != nil && !lastSpeechEnd.TS.After(lastFinal.TS) {
				s.EndpointMS = ms(lastSpeechEnd.TS, lastFinal.TS)
			}
			byTurn[e.Turn] = len(out)
			out = append(out, s)
			t := &out[len(out)-1]
			t.fill(events[i:], lastFinal)
			lastFinal, lastSpeechEnd = nil, nil
		}
	}
	return out
}

// fill reads the rest of the journal for this turn's milestones.
func (s *TurnSummary) fill(rest []Event, final *Event) {
	var request, firstToken, ttsReq, ttsByte, firstAudio, fillerAudio, replyAudio time.Time
	for _, e := range rest {
		if e.Turn != s.Turn {
			continue
		}
		switch e.Type {
		case AgentRequest:
			request = e.TS
		case AgentFirstToken:
			firstToken = e.TS
		case AgentDone:
			s.Reply = e.Text
			s.InputTokens, s.OutputTokens = e.InputTokens, e.OutputTokens
		case AgentError:
			s.Error = e.Kind + ": " + e.Message
		case TTSRequest:
			if ttsReq.IsZero() {
				ttsReq = e.TS
			}
		case TTSFirstByte:
			if ttsByte.IsZero() {
				ttsByte = e.TS
			}
		case PlayoutFirstAudio:
			firstAudio = e.TS
			if e.Kind == "filler" {
				fillerAudio = e.TS
			} else {
				replyAudio, s.FirstAudioMS = e.TS, e.MS
			}
		case PlayoutReplyAudio:
			replyAudio, s.FirstAudioMS = e.TS, e.MS
		case TurnInterrupted:
			s.Interrupted = true
		}
	}
	s.AgentTTFTMS = span(request, firstToken)
	s.TTSTTFBMS = span(ttsReq, ttsByte)
	if final != nil {
		s.ResponseMS = span(final.TS, replyAudio)
		s.FillerMS = span(final.TS, fillerAudio)
		// What Handset itself added: final -> agent request, and TTS first byte -> wire.
		if a, b := span(final.TS, request), span(ttsByte, firstAudio); a >= 0 && b >= 0 {
			s.OverheadMS = a + b
		}
	}
}

func span(from, to time.Time) float64 {
	if from.IsZero() || to.IsZero() || to.Before(from) {
		return -1
	}
	return ms(from, to)
}

// ms is the time between two events in milliseconds, to a tenth.
func ms(from, to time.Time) float64 {
	return math.Round(float64(to.Sub(from))/float64(time.Millisecond)*10) / 10
}
