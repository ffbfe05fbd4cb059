package telnyx

import (
	"encoding/json"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
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

// Event types Handset acts on.
const (
	EventCallInitiated          = "call.initiated"
	EventCallAnswered           = "call.answered"
	EventCallHangup             = "call.hangup"
	EventMachineDetectionEnded  = "call.machine.detection.ended"
	EventMachinePremiumEnded    = "call.machine.premium.detection.ended"
	EventMachineGreetingEnded   = "call.machine.greeting.ended"
	EventMachinePremiumGreeting = "call.machine.premium.greeting.ended"
	EventStreamingStarted       = "streaming.started"
	EventStreamingStopped       = "streaming.stopped"
	EventStreamingFailed        = "streaming.failed"
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

// Hang-up causes Telnyx reports on call.hangup.
const (
	CauseCallRejected     = "call_rejected"
	CauseNormalClearing   = "normal_clearing"
	CauseOriginatorCancel = "originator_cancel"
	CauseTimeout          = "timeout"
	CauseTimeLimit        = "time_limit"
	CauseUserBusy         = "user_busy"
	CauseNotFound         = "not_found"
	CauseNoAnswer         = "no_answer"
	CauseUnspecified      = "unspecified"
)

// HangupStatus maps a call.hangup's cause to how the call ended; answered says whether
// it was answered first. An unknown cause is a failure.
func HangupStatus(cause string, answered bool) carrier.Status {
	switch cause {
	case CauseNormalClearing, CauseTimeLimit:
		if answered {
			return carrier.StatusCompleted
		}
		return carrier.StatusCanceled
	case CauseUserBusy:
		return carrier.StatusBusy
	case CauseTimeout, CauseNoAnswer:
		return carrier.StatusNoAnswer
	case CauseOriginatorCancel:
		return carrier.StatusCanceled
	case CauseUnspecified:
		if answered {
			return carrier.StatusCompleted
		}
		return carrier.StatusFailed
	}
	return carrier.StatusFailed
}

// MachineVerdict maps a machine-detection event's result to Handset's words for who
// answered. An unknown result is AnsweredUnknown.
func MachineVerdict(eventType, result string) carrier.AnsweredBy {
	switch eventType {
	case EventMachineGreetingEnded, EventMachinePremiumGreeting:
		switch result {
		case "beep_detected":
			return carrier.AnsweredBeep
		case "ended":
			return carrier.AnsweredOther
		}
		return carrier.AnsweredUnknown
	}
	switch result {
	case "human", "human_residence", "human_business":
		return carrier.AnsweredHuman
	case "machine":
		return carrier.AnsweredMachine
	case "silence":
		return carrier.AnsweredSilence
	case "fax_detected":
		return carrier.AnsweredFax
	}
	return carrier.AnsweredUnknown
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
