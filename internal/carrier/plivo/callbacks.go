package plivo

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// Callback is one of Plivo's callbacks about a call (ring, hangup, machine detection) as
// Handset reads it: a form POST whose URL carries Handset's call id for a call it placed.
type Callback struct {
	Progress carrier.Progress
	// RequestUUID is the request id Dial returned for the call, which Plivo repeats so
	// the CallUUID in Progress.Ref can be tied to it; "" for a call that came in.
	RequestUUID string
	// From and To are the call's numbers in E.164 (Plivo sends them without "+"); "" when
	// not phone numbers (a SIP URI, say, or a withheld caller's "anonymous"), which
	// Handset treats as a withheld caller.
	From, To string
	// Attestation is the STIR/SHAKEN verification of an inbound caller's number; "" when
	// Plivo sent none.
	Attestation voice.Attestation
}

// The STIR/SHAKEN parameters of an inbound call's callbacks (UNCONFIRMED names and
// values: Plivo's call details name stir_attestation and stir_verification).
const (
	ParamSTIRAttestation  = "STIRAttestation"
	ParamSTIRVerification = "STIRVerification"
)

// Attestation reads Plivo's STIR/SHAKEN parameters: a level A/B/C that verified, failed
// when the verification says it did not, nothing when Plivo sent neither. A value it
// does not recognise vouches for nothing.
func Attestation(attestation, verification string) voice.Attestation {
	a := strings.ToUpper(strings.TrimSpace(attestation))
	v := strings.ToLower(strings.Join(strings.Fields(verification), " "))
	switch {
	case a == "" && v == "":
		return ""
	case v == "not verified" || v == "failed":
		return voice.AttestationFailed
	case v != "" && v != "verified":
		return voice.AttestationNone
	case a == "A":
		return voice.AttestationA
	case a == "B":
		return voice.AttestationB
	case a == "C":
		return voice.AttestationC
	}
	return voice.AttestationNone
}

// maxCallbackField bounds the fields kept from a callback.
const maxCallbackField = 128

// ReadCallback reads a callback's query (Handset's own parameters, signed with the URL)
// and form. Fields too long for their kind are cut; a status Plivo has no word for is
// left empty.
func ReadCallback(query, form url.Values) Callback {
	p := carrier.Progress{
		CallID: voice.CallID(clip(query.Get(CallParam))),
		Ref:    idOrEmpty(form.Get("CallUUID")),
		Status: statusOf(form.Get("CallStatus")),
	}
	switch form.Get("Machine") { // the machine-detection verdict (name unconfirmed)
	case "true":
		p.AnsweredBy = carrier.AnsweredMachine
	case "false":
		p.AnsweredBy = carrier.AnsweredHuman
	}
	secs := form.Get("BillDuration")
	if secs == "" {
		secs = form.Get("Duration")
	}
	if n, err := strconv.Atoi(secs); err == nil && n > 0 && n < 1<<31 {
		p.Duration = time.Duration(n) * time.Second
	}
	cb := Callback{Progress: p, RequestUUID: idOrEmpty(form.Get("RequestUUID")),
		From: e164(clip(form.Get("From"))), To: e164(clip(form.Get("To")))}
	if form.Get("Direction") == "inbound" {
		cb.Attestation = Attestation(clip(form.Get(ParamSTIRAttestation)), clip(form.Get(ParamSTIRVerification)))
	}
	return cb
}

func clip(s string) string { return voice.Clip(s, maxCallbackField) }

func idOrEmpty(id string) string {
	if validID(id) {
		return id
	}
	return ""
}

// Record writes the callback to the calls' memory: the request id becomes an alias of the
// CallUUID (so Control finds the call by the id Dial returned), and the progress is
// merged into the call's latest word. A callback naming no call is refused.
func (cb Callback) Record(ctx context.Context, m carrier.Memory, at time.Time) error {
	p := cb.Progress
	switch {
	case p.Ref != "" && cb.RequestUUID != "" && p.Ref != cb.RequestUUID:
		if err := m.Alias(ctx, p.Ref, cb.RequestUUID); err != nil {
			return err
		}
	case p.Ref == "":
		p.Ref = cb.RequestUUID
	}
	if p.Ref == "" {
		return errors.New("the callback names no call: it has no CallUUID nor RequestUUID")
	}
	return m.Progressed(ctx, p, at)
}
