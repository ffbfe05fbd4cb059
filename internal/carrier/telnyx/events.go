package telnyx

import (
	"encoding/json"
	"time"
)

// Envelope is a Call Control v2 webhook: every event Telnyx posts has this shape.
type Envelope struct {
	Data struct {
		RecordType string          `json:"record_type"`
		EventType  string          `json:"event_type"`
		ID         string          `json:"id"` // the event's id; Telnyx repeats it on retries
		OccurredAt string          `json:"occurred_at"`
		Payload    json.RawMessage `json:"payload"`
	} `json:"data"`
	Meta struct {
		Attempt     int    `json:"attempt"`
		DeliveredTo string `json:"delivered_to"`
	} `json:"meta"`
}

// Event types Handset acts on (the machine detection ones are with MachineVerdict).
const (
	EventCallInitiated    = "call.initiated"
	EventCallAnswered     = "call.answered"
	EventCallHangup       = "call.hangup"
	EventStreamingStarted = "streaming.started"
	EventStreamingStopped = "streaming.stopped"
	EventStreamingFailed  = "streaming.failed"
)

// CallPayload is the payload of the call.* events: the fields Handset reads.
type CallPayload struct {
	CallControlID string `json:"call_control_id"`
	CallLegID     string `json:"call_leg_id"`
	CallSessionID string `json:"call_session_id"`
	ConnectionID  string `json:"connection_id"`
	From          string `json:"from"`
	To            string `json:"to"`
	Direction     string `json:"direction"` // "incoming" or "outgoing"
	State         string `json:"state"`
	// ClientState is base64 of what Handset put on the call's last command; null on a
	// call that came in.
	ClientState string `json:"client_state"`
	// STIR/SHAKEN of an inbound call (names UNCONFIRMED): "A", "B" or "C", and whether it
	// verified.
	StirAttestation string `json:"shaken_stir_attestation"`
	StirValidated   *bool  `json:"shaken_stir_validated"`
	// call.hangup
	HangupCause    string `json:"hangup_cause"`
	HangupSource   string `json:"hangup_source"`
	SIPHangupCause string `json:"sip_hangup_cause"`
	StartTime      string `json:"start_time"`
	EndTime        string `json:"end_time"`
	// call.machine.* verdicts
	Result string `json:"result"`
}

// Duration is how long an answered call lasted by its hang-up's start and end times;
// zero when either is missing or malformed.
func (p CallPayload) Duration() time.Duration {
	start, err1 := time.Parse(time.RFC3339Nano, p.StartTime)
	end, err2 := time.Parse(time.RFC3339Nano, p.EndTime)
	if err1 != nil || err2 != nil || end.Before(start) {
		return 0
	}
	return end.Sub(start)
}
