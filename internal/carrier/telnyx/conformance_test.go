package telnyx_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/telnyx"
	"github.com/handset-voice/handset/internal/carrier/telnyx/telnyxsim"
)

// TestConformance runs the carrier suite against Telnyx's control API talking to the fake
// over HTTP, the fake's signed webhooks feeding the call ledger Control.Call reads.
func TestConformance(t *testing.T) {
	carriertest.Run(t, func(t *testing.T, a carriertest.Account, f carriertest.Fault) carriertest.Env {
		return newRig(t, a, f, telnyxsim.Options{}).env
	})
}

// rig is the control under test, the fake, and Handset's side of the webhooks.
type rig struct {
	env     carriertest.Env
	fake    *telnyxsim.Server
	control *telnyx.Control
	ledger  *carriertest.Memory
}

func newRig(t *testing.T, a carriertest.Account, f carriertest.Fault, o telnyxsim.Options) *rig {
	t.Helper()
	transport := &http.Transport{}
	client := &http.Client{Transport: transport}
	for _, n := range a.Numbers {
		o.Numbers = append(o.Numbers, telnyxsim.Number{PhoneNumber: n})
	}
	o.HTTP = client
	o.Callee = func(to string) telnyxsim.Callee { return callee(a.Callees[to]) }
	fake := telnyxsim.New(o)
	ledger := carriertest.NewMemory()
	handset := httptest.NewServer(webhookTaker(t, fake.PublicKeyBase64(), ledger))
	api := httptest.NewServer(fake)
	ro := telnyx.RESTOptions{BaseURL: api.URL + "/v2", APIKey: fake.APIKey(), ConnectionID: fake.ConnectionID(), HTTP: client}
	switch f {
	case carriertest.FaultAuth:
		ro.APIKey = "KEYwrong"
	case carriertest.FaultServer:
		fake.AddFault(telnyxsim.Fault{Status: http.StatusServiceUnavailable})
	case carriertest.FaultUnreachable:
		closed := httptest.NewServer(http.NotFoundHandler())
		closed.Close()
		ro.BaseURL = closed.URL + "/v2"
	}
	c, err := telnyx.NewControl(ro, ledger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		fake.Close()
		api.Close()
		handset.Close()
		transport.CloseIdleConnections()
	})
	r := &rig{fake: fake, control: c, ledger: ledger}
	r.env = carriertest.Env{
		Carrier:   c,
		PublicURL: handset.URL,
		WaitFor: func(ctx context.Context, ref string, want carrier.Status) error {
			_, err := fake.WaitCall(ctx, ref, func(c telnyxsim.Call) bool {
				if c.Pending > 0 { // Handset has not heard everything yet
					return false
				}
				answered := want == carrier.StatusInProgress && c.Answered && (c.AMD == "disabled" || c.Verdict != "")
				return !c.Alive || answered || want == carrier.StatusRinging
			})
			return err
		},
		TransferredTo: fake.TransferredTo,
		Requests:      func() int { return len(fake.Requests()) },
		OneWebhook:    true,
	}
	return r
}

// callee is a suite callee as the fake's.
func callee(c carriertest.Callee) telnyxsim.Callee {
	out := telnyxsim.Callee{RingFor: c.RingFor}
	switch c.Answer {
	case carriertest.AnswerMachine:
		out.Machine = true
	case carriertest.AnswerBusy:
		out.Outcome = telnyxsim.OutcomeBusy
	case carriertest.AnswerNobody:
		out.Outcome = telnyxsim.OutcomeNoAnswer
	case carriertest.AnswerFailed:
		out.Outcome = telnyxsim.OutcomeFailed
	}
	return out
}

// webhookTaker is Handset's webhook route as far as the ledger needs it: it checks the
// Ed25519 signature over "timestamp|body" itself and records what each event says.
func webhookTaker(t *testing.T, publicKey string, ledger carrier.Memory) http.Handler {
	key, err := base64.StdEncoding.DecodeString(publicKey)
	if err != nil || len(key) != ed25519.PublicKeySize {
		t.Fatalf("public key %q: %v", publicKey, err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		ts := r.Header.Get("telnyx-timestamp")
		sig, err := base64.StdEncoding.DecodeString(r.Header.Get("telnyx-signature-ed25519"))
		sec, terr := strconv.ParseInt(ts, 10, 64)
		if err != nil || terr != nil || !ed25519.Verify(ed25519.PublicKey(key), []byte(ts+"|"+string(body)), sig) ||
			time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
			t.Errorf("webhook with a bad signature: %s", body)
			http.Error(w, "bad signature", http.StatusForbidden)
			return
		}
		var e struct {
			Data struct {
				EventType string `json:"event_type"`
				ID        string `json:"id"`
				Payload   struct {
					CallControlID string `json:"call_control_id"`
					ClientState   string `json:"client_state"`
					HangupCause   string `json:"hangup_cause"`
					Result        string `json:"result"`
				} `json:"payload"`
			} `json:"data"`
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("webhook is not JSON: %v", err)
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		p := e.Data.Payload
		state, err := telnyx.DecodeClientState(p.ClientState)
		if err != nil {
			t.Errorf("%s of %s: client state: %v", e.Data.EventType, p.CallControlID, err)
		}
		progress := carrier.Progress{CallID: state.CallID, Ref: p.CallControlID}
		switch e.Data.EventType {
		case "call.initiated":
			progress.Status = carrier.StatusRinging
		case "call.answered":
			progress.Status = carrier.StatusInProgress
		case "call.hangup":
			before, _, _ := ledger.Progress(r.Context(), p.CallControlID)
			progress.Status = telnyx.HangupCause(p.HangupCause, before.Status == carrier.StatusInProgress)
		default:
			progress.AnsweredBy = telnyx.MachineVerdict(e.Data.EventType, p.Result)
		}
		if err := ledger.Progressed(r.Context(), progress, time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// newControlWithout is a control of r's fake without TELNYX_CONNECTION_ID.
func newControlWithout(r *rig) (*telnyx.Control, error) {
	return telnyx.NewControl(telnyx.RESTOptions{BaseURL: r.control.REST().BaseURL(), APIKey: r.fake.APIKey()}, nil)
}
