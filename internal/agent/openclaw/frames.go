package openclaw

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// Wire frames of the OpenClaw gateway protocol v4 (docs/gateway/protocol in the openclaw
// package, as observed against openclaw 2026.9.6). Every
// frame is one JSON object in a WebSocket text message, of type "req", "res" or "event".

// protocolVersion is the only version an operator client may speak.
const protocolVersion = 4

// frame is any inbound frame; which fields are set depends on Type.
type frame struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	OK      bool            `json:"ok,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Error   *gatewayError   `json:"error,omitempty"`
	Event   string          `json:"event,omitempty"`
	Seq     *int64          `json:"seq,omitempty"`
}

// request is an outbound "req" frame.
type request struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params"`
}

// gatewayError is the error object of a failed "res" frame.
type gatewayError struct {
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Details   json.RawMessage `json:"details,omitempty"`
	Retryable bool            `json:"retryable,omitempty"`
	// RetryAfterMs is the gateway's hint for a retryable error (see StartingError).
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
}

func (e *gatewayError) detailCode() string {
	var d struct {
		Code string `json:"code"`
	}
	if len(e.Details) > 0 && json.Unmarshal(e.Details, &d) == nil {
		return d.Code
	}
	return ""
}

func (e *gatewayError) Error() string {
	msg := e.Code + ": " + clip(e.Message)
	if dc := e.detailCode(); dc != "" {
		msg += " [" + dc + "]"
	}
	return msg
}

// kind classifies a request failure.
func (e *gatewayError) kind() voice.ErrorKind {
	dc := e.detailCode()
	switch {
	case strings.HasPrefix(dc, "AUTH_"), strings.HasPrefix(dc, "DEVICE_"),
		dc == "PAIRING_REQUIRED", e.Code == "NOT_PAIRED", e.Code == "FORBIDDEN",
		strings.HasPrefix(e.Message, "unauthorized"):
		return voice.KindAuth
	case dc == "PROTOCOL_MISMATCH":
		return voice.KindProtocol
	case e.Code == "UNAVAILABLE" || e.Retryable:
		return voice.KindTransient
	case e.Code == "INVALID_REQUEST":
		return voice.KindBadInput
	}
	return voice.KindUnknown
}

// chatEvent is the payload of a "chat" event: one state of one run.
type chatEvent struct {
	RunID        string          `json:"runId"`
	SessionKey   string          `json:"sessionKey"`
	State        string          `json:"state"` // status, delta, final, aborted, error
	DeltaText    *string         `json:"deltaText,omitempty"`
	Replace      bool            `json:"replace,omitempty"`
	Message      json.RawMessage `json:"message,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	ErrorKind    string          `json:"errorKind,omitempty"`
	ErrorDetail  *struct {
		HTTPStatus int `json:"httpStatus"`
	} `json:"errorDetail,omitempty"`
	StopReason string `json:"stopReason,omitempty"`

	// Progress is set on the synthetic "progress" state made from an agent event.
	Progress string `json:"-"`
	// Usage is set on the synthetic "usage" state made from an agent event.
	Usage voice.Usage `json:"-"`
}

// agentEvent is the payload of an "agent" event; only tool starts and retries are read,
// to tell the engine the runtime is busy, and the run's usage.
type agentEvent struct {
	RunID  string `json:"runId"`
	Stream string `json:"stream"`
	Data   struct {
		Kind  string `json:"kind"`
		Phase string `json:"phase"`
		Title string `json:"title"`
		Name  string `json:"name"`
		// OutputTokens (stream "usage") is the run's output so far: the gateway sends it
		// after each model call, and no input count.
		OutputTokens int `json:"outputTokens"`
	} `json:"data"`
}

// parseAgentEvent turns a tool start or a retry into a "progress" chat event, and a
// usage report into a "usage" one; ok is false for every other agent event.
func parseAgentEvent(payload []byte) (chatEvent, bool) {
	var ev agentEvent
	if json.Unmarshal(payload, &ev) != nil || ev.RunID == "" {
		return chatEvent{}, false
	}
	if ev.Stream == "usage" {
		if ev.Data.OutputTokens <= 0 {
			return chatEvent{}, false
		}
		return chatEvent{RunID: ev.RunID, State: "usage", Usage: voice.Usage{OutputTokens: ev.Data.OutputTokens}}, true
	}
	label := ""
	switch {
	case ev.Stream == "item" && ev.Data.Kind == "tool" && ev.Data.Phase == "start":
		label = ev.Data.Title
		if label == "" {
			label = ev.Data.Name
		}
		if label == "" {
			label = "tool"
		}
	case ev.Stream == "run_status" && ev.Data.Phase == "retrying":
		label = "retrying"
	default:
		return chatEvent{}, false
	}
	return chatEvent{RunID: ev.RunID, State: "progress", Progress: clip(label)}, true
}

// errBadFrame marks a frame we cannot read; it is counted and dropped.
var errBadFrame = errors.New("malformed gateway frame")

// parseFrame decodes one inbound frame and checks the fields its type needs.
func parseFrame(data []byte) (frame, error) {
	var f frame
	if err := json.Unmarshal(data, &f); err != nil {
		return frame{}, fmt.Errorf("%w: %v", errBadFrame, err)
	}
	switch f.Type {
	case "res":
		if f.ID == "" {
			return frame{}, fmt.Errorf("%w: response without id", errBadFrame)
		}
		if !f.OK && f.Error == nil {
			f.Error = &gatewayError{Code: "UNKNOWN", Message: "request failed without an error object"}
		}
	case "event":
		if f.Event == "" {
			return frame{}, fmt.Errorf("%w: event without name", errBadFrame)
		}
	case "req":
		// Servers do not send requests to operator clients; tolerated and ignored.
	default:
		return frame{}, fmt.Errorf("%w: unknown type %q", errBadFrame, f.Type)
	}
	return f, nil
}

// parseChat decodes the payload of a "chat" event.
func parseChat(payload []byte) (chatEvent, error) {
	var ev chatEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return chatEvent{}, fmt.Errorf("%w: chat payload: %v", errBadFrame, err)
	}
	if ev.RunID == "" || ev.State == "" {
		return chatEvent{}, fmt.Errorf("%w: chat event without runId or state", errBadFrame)
	}
	return ev, nil
}

// messageText extracts the text of an assistant message snapshot, which is either
// {"content":"..."} or {"content":[{"type":"text","text":"..."},…]}. ok is false when the
// message is absent or has no readable content.
func messageText(raw json.RawMessage) (text string, ok bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false
	}
	var m struct {
		Content json.RawMessage `json:"content"`
		Text    *string         `json:"text"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return "", false
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "" {
				b.WriteString(p.Text)
			}
		}
		return b.String(), true
	}
	if m.Text != nil {
		return *m.Text, true
	}
	return "", false
}

// runError turns a terminal "error" event into the turn's error. The gateway's text is
// kept for logs only; the engine speaks its own message.
func (ev chatEvent) runError() *voice.ProviderError {
	kind := voice.KindUnknown
	switch ev.ErrorKind {
	case "rate_limit":
		kind = voice.KindQuota
	case "timeout":
		kind = voice.KindTimeout
	case "refusal", "context_length":
		kind = voice.KindBadInput
	}
	status := 0
	if ev.ErrorDetail != nil && ev.ErrorDetail.HTTPStatus >= 400 {
		status = ev.ErrorDetail.HTTPStatus
		if kind == voice.KindUnknown {
			kind = voice.KindFromStatus(status)
		}
	}
	msg := ev.ErrorMessage
	if msg == "" {
		msg = "run failed"
	}
	return &voice.ProviderError{Provider: providerName, Op: "chat", Kind: kind, Status: status,
		Err: errors.New(clip(msg))}
}

// clip bounds gateway text carried into errors and logs.
func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
