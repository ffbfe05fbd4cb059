package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// maxErrorMessage bounds how much of a vendor's error text we carry into a ProviderError.
const maxErrorMessage = 200

// chatRequest is the body of POST /chat/completions.
type chatRequest struct {
	Model    string        `json:"model"`
	Stream   bool          `json:"stream"`
	Messages []wireMessage `json:"messages"`
}

type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// wireChunk is the part of a chat.completion.chunk (streaming) or a chat.completion
// (non-streaming) that we read. Unknown fields (usage, logprobs, tool calls, reasoning)
// are ignored: reasoning is never spoken.
type wireChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content *string `json:"content"`
		} `json:"delta"`
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Error json.RawMessage `json:"error"`
}

// chunk is what one data payload tells the stream.
type chunk struct {
	Text   string
	Finish string       // finish_reason when the runtime gave one
	Err    *vendorError // an error object inside the stream
}

// vendorError is an OpenAI-style error object: {"message","type","param","code"}.
// Some runtimes send a bare string instead ({"error":"..."}), which lands in Message.
type vendorError struct {
	Message string
	Type    string
	Code    string // a string code, or a number written in decimal (vLLM uses HTTP codes)
}

func (e *vendorError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "no message"
	}
	if e.Code != "" {
		return msg + " [" + e.Code + "]"
	}
	if e.Type != "" {
		return msg + " [" + e.Type + "]"
	}
	return msg
}

// kind classifies an error object found inside a 2xx stream.
func (e *vendorError) kind() voice.ErrorKind {
	if n, err := strconv.Atoi(e.Code); err == nil && n >= 400 && n < 600 {
		return voice.KindFromStatus(n)
	}
	t := strings.ToLower(e.Type + " " + e.Code)
	switch {
	case strings.Contains(t, "auth") || strings.Contains(t, "api_key"):
		return voice.KindAuth
	case strings.Contains(t, "rate_limit") || strings.Contains(t, "quota"):
		return voice.KindQuota
	case strings.Contains(t, "timeout"):
		return voice.KindTimeout
	case strings.Contains(t, "invalid_request") || strings.Contains(t, "badrequest") ||
		strings.Contains(t, "not_found"):
		return voice.KindBadInput
	}
	return voice.KindTransient
}

var errNoChoices = errors.New("no choices")

// parseChunk reads one data payload of a chat.completion.chunk stream. It uses the
// choice with index 0 (the only one unless n > 1 was asked for).
func parseChunk(data []byte) (chunk, error) {
	var w wireChunk
	if err := json.Unmarshal(data, &w); err != nil {
		return chunk{}, fmt.Errorf("decode chunk %q: %w", voice.Clip(string(data), 80), err)
	}
	var c chunk
	if ve := decodeVendorError(w.Error); ve != nil {
		c.Err = ve
	}
	for i := range w.Choices {
		ch := &w.Choices[i]
		if ch.Index != 0 {
			continue
		}
		if ch.Delta.Content != nil {
			c.Text = *ch.Delta.Content
		}
		if ch.FinishReason != nil {
			c.Finish = *ch.FinishReason
		}
		break
	}
	return c, nil
}

// parseCompletion reads a whole (non-streaming) chat.completion.
func parseCompletion(data []byte) (string, *vendorError, error) {
	var w wireChunk
	if err := json.Unmarshal(data, &w); err != nil {
		return "", nil, fmt.Errorf("decode completion: %w", err)
	}
	if ve := decodeVendorError(w.Error); ve != nil {
		return "", ve, nil
	}
	for i := range w.Choices {
		if w.Choices[i].Index == 0 {
			if c := w.Choices[i].Message.Content; c != nil {
				return *c, nil, nil
			}
			return "", nil, nil
		}
	}
	return "", nil, fmt.Errorf("decode completion: %w", errNoChoices)
}

// decodeVendorError reads an "error" member: an object, a bare string, or absent/null.
func decodeVendorError(raw json.RawMessage) *vendorError {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &vendorError{Message: voice.Clip(s, maxErrorMessage)}
	}
	var o struct {
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return &vendorError{Message: voice.Clip(string(raw), maxErrorMessage)}
	}
	return &vendorError{
		Message: voice.Clip(scalar(o.Message), maxErrorMessage),
		Type:    voice.Clip(scalar(o.Type), 64),
		Code:    voice.Clip(scalar(o.Code), 64),
	}
}

// scalar renders a JSON string or number as text; anything else as its JSON.
func scalar(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// errorFromBody turns a non-2xx response body into an error carrying the vendor's message.
func errorFromBody(body []byte) error {
	var envelope struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"` // a few servers put it at the top level
	}
	if json.Unmarshal(body, &envelope) == nil {
		if ve := decodeVendorError(envelope.Error); ve != nil {
			return ve
		}
		if m := scalar(envelope.Message); m != "" {
			return &vendorError{Message: voice.Clip(m, maxErrorMessage)}
		}
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		return errors.New("empty error body")
	}
	return &vendorError{Message: voice.Clip(text, maxErrorMessage)}
}
