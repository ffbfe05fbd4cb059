package deepgram

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// Server message types this provider acts on; others (Metadata, SpeechStarted, and any
// type Deepgram adds later) are read and ignored.
const (
	typeResults      = "Results"
	typeUtteranceEnd = "UtteranceEnd"
)

// serverMessage is the part of a Deepgram live server message the provider uses.
type serverMessage struct {
	Type string
	// Results
	Transcript   string  // channel.alternatives[0].transcript, trimmed
	Start        float64 // seconds of stream audio
	Duration     float64
	IsFinal      bool
	SpeechFinal  bool
	FromFinalize bool
	// UtteranceEnd
	LastWordEnd float64
}

// End is where a Results message's span ends, in seconds of stream audio.
func (m serverMessage) End() float64 { return m.Start + m.Duration }

type wireType struct {
	Type *string `json:"type"`
}

type wireResults struct {
	Start        *float64 `json:"start"`
	Duration     *float64 `json:"duration"`
	IsFinal      bool     `json:"is_final"`
	SpeechFinal  bool     `json:"speech_final"`
	FromFinalize bool     `json:"from_finalize"`
	Channel      *struct {
		Alternatives []struct {
			Transcript string `json:"transcript"`
		} `json:"alternatives"`
	} `json:"channel"`
}

type wireUtteranceEnd struct {
	LastWordEnd float64 `json:"last_word_end"`
}

// parseServerMessage reads one text message from /v1/listen. It rejects what it cannot
// trust: no type, a Results without start, duration or channel, or negative or absurd
// times (which would corrupt the replay offsets).
func parseServerMessage(data []byte) (serverMessage, error) {
	var t wireType
	if err := json.Unmarshal(data, &t); err != nil {
		return serverMessage{}, fmt.Errorf("not a JSON object: %w", err)
	}
	if t.Type == nil || *t.Type == "" {
		return serverMessage{}, errors.New("message without a type")
	}
	m := serverMessage{Type: *t.Type}
	switch m.Type {
	case typeResults:
		var r wireResults
		if err := json.Unmarshal(data, &r); err != nil {
			return serverMessage{}, fmt.Errorf("results: %w", err)
		}
		if r.Start == nil || r.Duration == nil || r.Channel == nil {
			return serverMessage{}, errors.New("results without start, duration or channel")
		}
		if !validTime(*r.Start) || !validTime(*r.Duration) {
			return serverMessage{}, fmt.Errorf("results with impossible times start=%v duration=%v", *r.Start, *r.Duration)
		}
		m.Start, m.Duration = *r.Start, *r.Duration
		m.IsFinal, m.SpeechFinal, m.FromFinalize = r.IsFinal, r.SpeechFinal, r.FromFinalize
		if len(r.Channel.Alternatives) > 0 {
			m.Transcript = strings.TrimSpace(r.Channel.Alternatives[0].Transcript)
		}
	case typeUtteranceEnd:
		var u wireUtteranceEnd
		if err := json.Unmarshal(data, &u); err != nil {
			return serverMessage{}, fmt.Errorf("utterance end: %w", err)
		}
		if !validTime(u.LastWordEnd) {
			return serverMessage{}, fmt.Errorf("utterance end with impossible last_word_end=%v", u.LastWordEnd)
		}
		m.LastWordEnd = u.LastWordEnd
	}
	return m, nil
}

// maxStreamSeconds bounds the times we accept: a week of audio.
const maxStreamSeconds = 7 * 24 * 3600

func validTime(s float64) bool {
	return s >= 0 && s <= maxStreamSeconds && !math.IsNaN(s)
}

// vendorError reads Deepgram's JSON error body ({"err_code","err_msg","request_id"}, or the
// newer {"category","message"}) from a refused handshake and returns its message.
func vendorError(resp *http.Response) error {
	var raw []byte
	if resp.Body != nil {
		raw, _ = io.ReadAll(io.LimitReader(resp.Body, 4096))
	}
	var body struct {
		ErrCode   string `json:"err_code"`
		ErrMsg    string `json:"err_msg"`
		Category  string `json:"category"`
		Message   string `json:"message"`
		RequestID string `json:"request_id"`
	}
	msg := ""
	if json.Unmarshal(raw, &body) == nil {
		switch {
		case body.ErrMsg != "":
			msg = body.ErrMsg
		case body.Message != "":
			msg = body.Message
		}
		if code := body.ErrCode + body.Category; msg != "" && code != "" {
			msg = code + ": " + msg
		}
		if msg != "" && body.RequestID != "" {
			msg += " (request_id " + body.RequestID + ")"
		}
	}
	if msg == "" {
		msg = resp.Header.Get("dg-error")
	}
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return errors.New(voice.Clip(msg, voice.EchoLimit))
}
