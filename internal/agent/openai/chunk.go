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
	// StreamOptions asks for the usage chunk at the end of the stream; nil for a runtime
	// that refused the field.
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// wireChunk is the part of a chat.completion.chunk (streaming) or a chat.completion
// (non-streaming) that we read. Unknown fields (logprobs, tool calls, reasoning) are
// ignored: reasoning is never spoken. With stream_options.include_usage the last chunk has
// no choices and a usage object (every other chunk "usage": null).
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
	Usage json.RawMessage `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// usageOf reads a usage object ({"prompt_tokens","completion_tokens",…}); zero when it is
// absent, null or unreadable, and a negative count is none: a runtime's odd bookkeeping
// never costs the caller the reply.
func usageOf(raw json.RawMessage) voice.Usage {
	var u struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &u) != nil {
		return voice.Usage{}
	}
	return voice.Usage{InputTokens: max(u.PromptTokens, 0), OutputTokens: max(u.CompletionTokens, 0)}
}

// chunk is what one data payload tells the stream.
type chunk struct {
	Text   string
	Finish string       // finish_reason when the runtime gave one
	Err    *vendorError // an error object inside the stream
	Usage  voice.Usage  // the usage object, when the chunk has one
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
	c := chunk{Usage: usageOf(w.Usage)}
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

// parseCompletion reads a whole (non-streaming) chat.completion: its text and usage.
func parseCompletion(data []byte) (chunk, *vendorError, error) {
	var w wireChunk
	if err := json.Unmarshal(data, &w); err != nil {
		return chunk{}, nil, fmt.Errorf("decode completion: %w", err)
	}
	if ve := decodeVendorError(w.Error); ve != nil {
		return chunk{}, ve, nil
	}
	for i := range w.Choices {
		if w.Choices[i].Index == 0 {
			c := chunk{Usage: usageOf(w.Usage)}
			if text := w.Choices[i].Message.Content; text != nil {
				c.Text = *text
			}
			return c, nil, nil
		}
	}
	return chunk{}, nil, fmt.Errorf("decode completion: %w", errNoChoices)
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
