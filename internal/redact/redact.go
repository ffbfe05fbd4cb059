// Package redact holds the rules for showing calls and jobs without the numbers of the
// people Handset talks to: the API's default view and the dashboard's viewer sign-in both
// name a person only by caller hash, so whoever reads them cannot read a number back.
package redact

import (
	"encoding/json"
	"strings"

	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Person is the number of the person on call c: the caller of an inbound call, whom
// Handset called on an outbound one. Handset's own line is the other number.
func Person(c store.Call) string {
	if c.Direction == voice.Outbound {
		return c.To
	}
	return c.From
}

// Job is j's payload and error without the number an outbound call job dials (a
// delivery's callback number among them): it is replaced by its caller hash (hash may be
// nil, or answer "" for a number it cannot hash), in the payload and in the error, which
// may quote the carrier's words about the number. Other kinds are returned as they are:
// transfer targets are the agent's own choice, bounded by the allow-list. A call job's
// payload that is not JSON is dropped (nil): it may hold anything.
func Job(j store.Job, hash func(number string) string) (payload []byte, errMsg string) {
	payload, errMsg = j.Payload, j.Error
	if j.Kind != jobs.KindCall {
		return payload, errMsg
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(j.Payload, &fields) != nil {
		return nil, errMsg
	}
	var to string
	_ = json.Unmarshal(fields["to"], &to)
	delete(fields, "to")
	stand := "the number"
	if to != "" && hash != nil {
		if h := hash(to); h != "" {
			stand = "caller " + h
			if _, ok := fields["caller_hash"]; !ok {
				fields["caller_hash"], _ = json.Marshal(h)
			}
		}
	}
	payload, _ = json.Marshal(fields)
	if to = strings.TrimSpace(to); to != "" {
		pairs := []string{to, stand}
		if digits := strings.TrimPrefix(to, "+"); digits != to && len(digits) >= 6 {
			pairs = append(pairs, digits, stand)
		}
		errMsg = strings.NewReplacer(pairs...).Replace(errMsg)
	}
	return payload, errMsg
}
