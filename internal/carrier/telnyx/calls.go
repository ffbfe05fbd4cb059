package telnyx

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// Answering-machine detection modes of a dial (answering_machine_detection).
const (
	AMDDisabled = "disabled"
	AMDDetect   = "detect"
	AMDBeep     = "detect_beep"
)

// CallRequest is the body of POST /calls: one outbound call. No stream_* fields: the
// stream starts once the call is answered (and judged), by the webhook handler.
type CallRequest struct {
	ConnectionID string `json:"connection_id"`
	To           string `json:"to"`
	From         string `json:"from"`
	// TimeoutSecs is how long it may ring (0: Telnyx's default).
	TimeoutSecs int `json:"timeout_secs,omitempty"`
	// TimeLimitSecs caps the call's length (0: Telnyx's default).
	TimeLimitSecs int `json:"time_limit_secs,omitempty"`
	// WebhookURL is where this call's events go instead of the application's URL.
	WebhookURL string `json:"webhook_url,omitempty"`
	// ClientState is echoed in every event of the call (EncodeClientState).
	ClientState string `json:"client_state,omitempty"`
	// CommandID makes a repeat of the same request harmless.
	CommandID string `json:"command_id,omitempty"`
	// AnsweringMachineDetection is AMDDisabled, AMDDetect, AMDBeep, … (empty: disabled).
	AnsweringMachineDetection string `json:"answering_machine_detection,omitempty"`
}

// CallInfo is a call as Telnyx holds it.
type CallInfo struct {
	CallControlID string `json:"call_control_id"`
	CallLegID     string `json:"call_leg_id"`
	CallSessionID string `json:"call_session_id"`
	IsAlive       bool   `json:"is_alive"`
	// CallDuration is the call's length so far in seconds (UNCONFIRMED field name).
	CallDuration int    `json:"call_duration"`
	RecordType   string `json:"record_type"`
}

// Duration is CallDuration as a time.Duration.
func (c CallInfo) Duration() time.Duration { return time.Duration(c.CallDuration) * time.Second }

// Dial places an outbound call (POST /calls).
func (r *REST) Dial(ctx context.Context, c CallRequest) (CallInfo, error) {
	var out struct {
		Data CallInfo `json:"data"`
	}
	err := r.do(ctx, "dial", http.MethodPost, "/calls", c, &out)
	return out.Data, classify(err)
}

// FetchCall is call callControlID as Telnyx holds it (GET /calls/{id}): only whether it is
// alive and for how long; Telnyx does not say how a call ended.
func (r *REST) FetchCall(ctx context.Context, callControlID string) (CallInfo, error) {
	const op = "fetch call"
	if err := checkID(callControlID); err != nil {
		return CallInfo{}, classify(&voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err})
	}
	var out struct {
		Data CallInfo `json:"data"`
	}
	err := r.do(ctx, op, http.MethodGet, "/calls/"+url.PathEscape(callControlID), nil, &out)
	return out.Data, classify(err)
}

// HangupRequest is the body of actions/hangup.
type HangupRequest struct {
	CommandID   string `json:"command_id,omitempty"`
	ClientState string `json:"client_state,omitempty"`
}

// StreamingStopRequest is the body of actions/streaming_stop.
type StreamingStopRequest struct {
	CommandID string `json:"command_id,omitempty"`
}

// TransferRequest is the body of actions/transfer.
type TransferRequest struct {
	To          string `json:"to"`
	From        string `json:"from,omitempty"`
	TimeoutSecs int    `json:"timeout_secs,omitempty"`
	CommandID   string `json:"command_id,omitempty"`
	ClientState string `json:"client_state,omitempty"`
}
