package twilio_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/twilio"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
)

// TestConformance runs the carrier suite against Twilio's control API, talking to the
// fake Twilio REST API over HTTP.
func TestConformance(t *testing.T) {
	carriertest.Run(t, newTwilio)
}

// hold is how long a person who answers stays: longer than any test.
const hold = time.Hour

func newTwilio(t *testing.T, a carriertest.Account, f carriertest.Fault) carriertest.Env {
	var numbers []faketwilio.Number
	for _, n := range a.Numbers {
		numbers = append(numbers, faketwilio.Number{PhoneNumber: n})
	}
	transport := &http.Transport{}
	client := &http.Client{Transport: transport}
	fake := faketwilio.New(faketwilio.Options{Numbers: numbers, HTTPClient: client, Answer: func(to string) faketwilio.Answer {
		return answer(a.Callees[to])
	}})

	// Handset's side: an answered call is kept on the line; status callbacks are taken.
	handset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/twilio/voice" {
			w.Header().Set("Content-Type", "text/xml")
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Response><Pause length="3600"/></Response>`))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	api := httptest.NewServer(fake)
	o := twilio.RESTOptions{BaseURL: api.URL, AccountSID: fake.AccountSID(), AuthToken: fake.AuthToken(), HTTPClient: client}
	switch f {
	case carriertest.FaultAuth:
		o.AuthToken = "0000000000000000000000000000000a"
	case carriertest.FaultServer:
		fake.AddFault(faketwilio.Fault{Status: http.StatusServiceUnavailable})
	case carriertest.FaultUnreachable:
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		o.BaseURL = closed.URL
	}
	c, err := twilio.NewControl(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fake.Close() // ends every call still going
		api.Close()
		handset.Close()
		transport.CloseIdleConnections()
	})
	return carriertest.Env{
		Carrier:   c,
		PublicURL: handset.URL,
		WaitFor: func(ctx context.Context, ref string, want carrier.Status) error {
			_, err := fake.WaitCall(ctx, ref, func(c faketwilio.Call) bool {
				return c.Status == string(want) || faketwilio.Ended(c.Status)
			})
			return err
		},
		// The fake follows a redirect as Twilio does, after answering it: wait for the
		// <Dial> (or the call's end) rather than read at once.
		TransferredTo: func(ref string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, _ := fake.WaitCall(ctx, ref, func(c faketwilio.Call) bool { return c.TransferredTo != "" || faketwilio.Ended(c.Status) })
			return c.TransferredTo
		},
		Requests: func() int { return len(fake.Requests()) },
	}
}

// answer is a suite callee as the fake's Answer.
func answer(c carriertest.Callee) faketwilio.Answer {
	a := faketwilio.Answer{RingFor: c.RingFor, Hold: hold}
	switch c.Answer {
	case carriertest.AnswerMachine:
		a.AnsweredBy = "machine_end_beep"
	case carriertest.AnswerBusy:
		a.Outcome = faketwilio.OutcomeBusy
	case carriertest.AnswerNobody: // rings on: the call's Timeout makes it no-answer
		a.RingFor = max(a.RingFor, hold)
	case carriertest.AnswerFailed:
		a.Outcome = faketwilio.OutcomeFailed
	}
	return a
}
