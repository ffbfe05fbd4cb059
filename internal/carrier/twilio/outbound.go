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

// progressFrom is a status callback as the carrier contract words it.
func progressFrom(r *http.Request) carrier.Progress {
	f := r.PostForm
	secs, _ := strconv.Atoi(f.Get("CallDuration"))
	return carrier.Progress{
		CallID: voice.CallID(r.URL.Query().Get(callParam)), Ref: f.Get("CallSid"),
		Status: carrier.Status(f.Get("CallStatus")), AnsweredBy: carrier.AnsweredBy(f.Get("AnsweredBy")),
		Duration: time.Duration(secs) * time.Second,
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
