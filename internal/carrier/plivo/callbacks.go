package plivo

import (
	"net/url"
	"strconv"
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
	// not phone numbers (a SIP URI, say).
	From, To string
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
	return Callback{Progress: p, RequestUUID: idOrEmpty(form.Get("RequestUUID")),
		From: e164(clip(form.Get("From"))), To: e164(clip(form.Get("To")))}
}

func clip(s string) string { return voice.Clip(s, maxCallbackField) }

func idOrEmpty(id string) string {
	if validID(id) {
		return id
	}
	return ""
}
