package plivo_test

import (
	"net/url"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/voice"
)

const (
	requestID = "5d6e0c57-0000-4000-8000-00000000000a"
	callUUID  = "9a1c2b3d-0000-4000-8000-00000000000b"
)

// TestCallbackRecord: the request id names the call once the CallUUID arrived; the
// verdict and the end are kept; a callback naming no call is refused.
func TestCallbackRecord(t *testing.T) {
	ctx := ctxOf(t)
	m := carriertest.NewMemory()
	now := time.Now()
	query := url.Values{plivo.CallParam: {"call-1"}}
	for _, form := range []url.Values{
		{"RequestUUID": {requestID}, "CallUUID": {callUUID}, "CallStatus": {"ringing"}},
		{"RequestUUID": {requestID}, "CallUUID": {callUUID}, "CallStatus": {"in-progress"}, "Machine": {"false"}},
		{"RequestUUID": {requestID}, "CallUUID": {callUUID}, "CallStatus": {"completed"}, "BillDuration": {"7"}},
		{"RequestUUID": {requestID}, "CallUUID": {callUUID}, "CallStatus": {"in-progress"}}, // late
	} {
		if err := plivo.ReadCallback(query, form).Record(ctx, m, now); err != nil {
			t.Fatal(err)
		}
	}
	for _, ref := range []string{requestID, callUUID} {
		p, ok, err := m.Progress(ctx, ref)
		want := carrier.Progress{CallID: "call-1", Ref: callUUID, Status: carrier.StatusCompleted, AnsweredBy: carrier.AnsweredHuman, Duration: 7 * time.Second}
		if err != nil || !ok || p != want {
			t.Errorf("Progress(%s) = %+v, %v, %v; want %+v", ref, p, ok, err, want)
		}
	}
	if err := plivo.ReadCallback(query, url.Values{"CallStatus": {"completed"}, "CallUUID": {"../../etc"}}).Record(ctx, m, now); err == nil {
		t.Error("a callback naming no usable call was recorded")
	}
}

// TestAttestationOfSTIRParameters: a verified level is kept, a failed verification
// vouches for nothing whatever the level, an unknown value is no attestation, and an
// outbound call's callbacks carry none (the number is the one Handset called).
func TestAttestationOfSTIRParameters(t *testing.T) {
	for _, c := range []struct {
		attestation, verification string
		want                      voice.Attestation
	}{
		{"", "", ""},
		{"A", "Verified", voice.AttestationA},
		{"b", "verified", voice.AttestationB},
		{"C", "", voice.AttestationC},
		{"A", "Not Verified", voice.AttestationFailed},
		{"A", "Not  verified", voice.AttestationFailed},
		{"", "Not Applicable", voice.AttestationNone},
		{"Not Applicable", "Verified", voice.AttestationNone},
		{"Z", "", voice.AttestationNone},
	} {
		if got := plivo.Attestation(c.attestation, c.verification); got != c.want {
			t.Errorf("Attestation(%q, %q) = %q, want %q", c.attestation, c.verification, got, c.want)
		}
	}
	form := url.Values{"CallUUID": {callUUID}, plivo.ParamSTIRAttestation: {"A"}, plivo.ParamSTIRVerification: {"Verified"}}
	form.Set("Direction", "inbound")
	if got := plivo.ReadCallback(nil, form).Attestation; got != voice.AttestationA {
		t.Errorf("inbound callback: attestation %q", got)
	}
	form.Set("Direction", "outbound")
	if got := plivo.ReadCallback(nil, form).Attestation; got != "" {
		t.Errorf("outbound callback: attestation %q, want none", got)
	}
}
