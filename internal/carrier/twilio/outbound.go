package twilio

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// Query parameters Handset puts on the URLs it gives Twilio for an outbound call. Twilio
// signs the whole URL, query included, so they reach us as we wrote them.
const (
	callParam    = "handset_call"    // Handset's call id
	machineParam = "handset_machine" // what to do when a machine answers
)

// MachinePolicy is carrier.MachinePolicy, named here for the webhook code that reads it.
type MachinePolicy = carrier.MachinePolicy

// Machine policies.
const (
	MachineHangup  = carrier.MachineHangup
	MachineMessage = carrier.MachineMessage
	MachineTalk    = carrier.MachineTalk
)

// OutboundURLs are the voice and status callback URLs for an outbound call placed with
// CreateCall: publicURL is HANDSET_PUBLIC_URL.
func OutboundURLs(publicURL string, id voice.CallID, policy MachinePolicy) (voiceURL, statusURL string) {
	base := strings.TrimRight(publicURL, "/")
	q := url.Values{callParam: {string(id)}}
	statusURL = base + StatusPath + "?" + q.Encode()
	q.Set(machineParam, string(policy))
	return base + VoicePath + "?" + q.Encode(), statusURL
}

// Status is one call status callback, as Twilio sent it.
type Status struct {
	CallID     voice.CallID // Handset's id, for calls Handset placed; empty otherwise
	CallSid    string
	CallStatus string // queued, initiated, ringing, in-progress, completed, busy, no-answer, failed, canceled
	AnsweredBy string
	Sequence   int // SequenceNumber: callbacks may arrive out of order
	Duration   time.Duration
	// Declined is set when Handset itself refused to connect an answered call (a machine
	// picked up and the policy is hangup): CallStatus is then "machine".
	Declined bool
}

// Ended reports whether the status is final.
func (s Status) Ended() bool { return s.Declined || CallEnded(s.CallStatus) }

func statusFrom(r *http.Request) Status {
	f := r.PostForm
	seq, _ := strconv.Atoi(f.Get("SequenceNumber"))
	secs, _ := strconv.Atoi(f.Get("CallDuration"))
	return Status{
		CallID: voice.CallID(r.URL.Query().Get(callParam)), CallSid: f.Get("CallSid"),
		CallStatus: f.Get("CallStatus"), AnsweredBy: f.Get("AnsweredBy"),
		Sequence: seq, Duration: time.Duration(secs) * time.Second,
	}
}

// machineAnswered reports whether AnsweredBy names a recording or a fax.
func machineAnswered(answeredBy string) bool {
	return voice.LegInfo{AnsweredBy: answeredBy}.Machine()
}

// hangupTwiML ends the call.
func hangupTwiML() []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<Response><Hangup/></Response>`)
}
