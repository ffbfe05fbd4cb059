package plivo_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
)

// TestConformance runs the carrier suite against Plivo's control API, talking to the fake
// Plivo over HTTP; the fake's callbacks reach a small Handset side that checks their
// signatures and records them in the memory Control reads.
func TestConformance(t *testing.T) {
	carriertest.Run(t, func(t *testing.T, a carriertest.Account, f carriertest.Fault) carriertest.Env {
		return newEnv(t, a, f, plivosim.Options{}).Env
	})
}

// env is a Control against a fake Plivo, with the fake and the ledger at hand.
type env struct {
	carriertest.Env
	fake    *plivosim.Server
	memory  *carriertest.Memory
	control *plivo.Control
	handset *handset
}

func newEnv(t *testing.T, a carriertest.Account, f carriertest.Fault, o plivosim.Options) env {
	transport := &http.Transport{}
	client := &http.Client{Transport: transport}
	for _, n := range a.Numbers {
		o.Numbers = append(o.Numbers, plivosim.Number{Number: n})
	}
	o.HTTPClient = client
	if o.Callee == nil {
		o.Callee = func(to string) plivosim.Callee { return fakeCallee(a.Callees[to]) }
	}
	fake := plivosim.New(o)
	m := carriertest.NewMemory()
	h := &handset{t: t, token: fake.AuthToken(), memory: m}
	hs := httptest.NewServer(h)
	h.base = hs.URL
	h.transfer = plivo.ServeTransfer(plivo.Verifier{AuthToken: fake.AuthToken(), PublicURL: hs.URL, Memory: m})
	api := httptest.NewServer(fake)
	ro := plivo.RESTOptions{BaseURL: api.URL, AuthID: fake.AuthID(), AuthToken: fake.AuthToken(), HTTPClient: client}
	switch f {
	case carriertest.FaultAuth:
		ro.AuthToken = "WrongTokenWrongTokenWrongToken"
	case carriertest.FaultServer:
		fake.AddFault(plivosim.Fault{Status: http.StatusServiceUnavailable})
	case carriertest.FaultUnreachable:
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		ro.BaseURL = closed.URL
	}
	c, err := plivo.NewControl(plivo.ControlOptions{REST: ro, PublicURL: hs.URL, AppID: plivosim.DefaultAppID, Ledger: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fake.Close()
		api.Close()
		hs.Close()
		transport.CloseIdleConnections()
	})
	return env{fake: fake, memory: m, control: c, handset: h, Env: carriertest.Env{
		Carrier:   c,
		PublicURL: hs.URL,
		WaitFor: func(ctx context.Context, ref string, want carrier.Status) error {
			_, err := fake.WaitCall(ctx, ref, func(c plivosim.Call) bool {
				if plivosim.Ended(c.Status) {
					return true
				}
				verdictIn := c.Detection == "" || c.Verdict != ""
				return plivo.StatusOf(c.Status) == want && (want != carrier.StatusInProgress || verdictIn)
			})
			return err
		},
		TransferredTo: func(ref string) string {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, _ := fake.WaitCall(ctx, ref, func(c plivosim.Call) bool { return c.TransferredTo != "" || plivosim.Ended(c.Status) })
			if c.TransferredTo == "" {
				return ""
			}
			return "+" + strings.TrimPrefix(c.TransferredTo, "+")
		},
		Requests: func() int { return len(fake.Requests()) },
	}}
}

// fakeCallee is a suite callee as the fake's.
func fakeCallee(c carriertest.Callee) plivosim.Callee {
	out := plivosim.Callee{RingFor: c.RingFor, Hold: time.Hour}
	switch c.Answer {
	case carriertest.AnswerMachine:
		out.Machine = true
	case carriertest.AnswerBusy:
		out.Outcome = plivosim.OutcomeBusy
	case carriertest.AnswerNobody:
		out.Outcome = plivosim.OutcomeNoAnswer
	case carriertest.AnswerFailed:
		out.Outcome = plivosim.OutcomeFailed
	}
	return out
}
