package plivo

import (
	"context"
	"errors"
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
