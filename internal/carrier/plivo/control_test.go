package plivo_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
	"github.com/handset-voice/handset/internal/voice"
)

const (
	ours   = "+14155550100"
	callee = "+15550102000"
)

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func account() carriertest.Account { return carriertest.Account{Numbers: []string{ours}} }

// TestRequestUUIDBeforeCallUUID: a call placed a moment ago is only a request; Call and
// Hangup work on it (the request is cancelled), and once the first callback brought the
// CallUUID they work through the request id Dial returned.
func TestRequestUUIDBeforeCallUUID(t *testing.T) {
	t.Run("queued", func(t *testing.T) {
		e := newEnv(t, account(), carriertest.FaultNone, plivosim.Options{QueuedFor: time.Hour})
		ctx := ctxOf(t)
		placed, err := e.control.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: callee, From: ours, PublicURL: e.PublicURL})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.control.Call(ctx, placed.Ref)
		if err != nil || c.Status != carrier.StatusQueued || c.To != callee || c.From != ours {
			t.Fatalf("Call on a queued request: %+v, %v", c, err)
		}
		if err := e.control.Hangup(ctx, placed.Ref); err != nil {
			t.Fatalf("Hangup of a queued request: %v", err)
		}
		got, err := e.fake.WaitCall(ctx, placed.Ref, func(c plivosim.Call) bool { return plivosim.Ended(c.Status) })
		if err != nil || got.Status != plivosim.StatusCancel || got.CallUUID != "" {
			t.Fatalf("the request: %+v, %v; want cancelled before it was dialled", got, err)
		}
		if c, err := e.control.Call(ctx, placed.Ref); err != nil || c.Status != carrier.StatusCanceled {
			t.Errorf("Call after cancelling: %+v, %v", c, err)
		}
		if !slices.ContainsFunc(e.fake.Requests(), func(r plivosim.Request) bool {
			return r.Method == http.MethodDelete && r.Path == "/v1/Account/"+e.fake.AuthID()+"/Request/"+placed.Ref+"/"
		}) {
			t.Error("no DELETE Request/{id}/ reached the fake")
		}
	})
	t.Run("ringing", func(t *testing.T) {
		e := newEnv(t, account(), carriertest.FaultNone, plivosim.Options{
			Callee: func(string) plivosim.Callee { return plivosim.Callee{RingFor: 50 * time.Second} }})
		ctx := ctxOf(t)
		placed, err := e.control.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: callee, From: ours, PublicURL: e.PublicURL})
		if err != nil {
			t.Fatal(err)
		}
		ringing, err := e.fake.WaitCall(ctx, placed.Ref, func(c plivosim.Call) bool { return c.Status == plivosim.StatusRinging })
		if err != nil {
			t.Fatal(err)
		}
		if ringing.CallUUID == "" || ringing.CallUUID == placed.Ref {
			t.Fatalf("the call's CallUUID %q is not a second id", ringing.CallUUID)
		}
		if c, err := e.control.Call(ctx, placed.Ref); err != nil || c.Status != carrier.StatusRinging || c.Ref != placed.Ref {
			t.Fatalf("Call on a ringing call by its request id: %+v, %v", c, err)
		}
		if err := e.control.Hangup(ctx, placed.Ref); err != nil {
			t.Fatalf("Hangup of a ringing call by its request id: %v", err)
		}
		got, err := e.fake.WaitCall(ctx, placed.Ref, func(c plivosim.Call) bool { return plivosim.Ended(c.Status) })
		if err != nil || got.Status != plivosim.StatusCancel {
			t.Fatalf("the call: %+v, %v; want cancelled while ringing", got, err)
		}
	})
}

// staleLedger knows a call's CallUUID but missed its end.
type staleLedger struct{ uuid string }

func (l staleLedger) Progress(context.Context, string) (carrier.Progress, bool, error) {
	return carrier.Progress{Ref: l.uuid, Status: carrier.StatusInProgress}, true, nil
}

// TestHangupAlreadyEnded404: Plivo answers 404 to hanging up a call that has ended; that
// counts as hung up.
func TestHangupAlreadyEnded404(t *testing.T) {
	e, ctx, placed, over := endedCall(t)
	stale := controlWith(t, e, staleLedger{over.CallUUID})
	before := len(e.fake.Requests())
	if err := stale.Hangup(ctx, placed.Ref); err != nil {
		t.Errorf("Hangup of an ended call: %v", err)
	}
	reqs := e.fake.Requests()[before:]
	if len(reqs) != 1 || reqs[0].Method != http.MethodDelete || reqs[0].Status != http.StatusNotFound {
		t.Errorf("requests %+v, want one DELETE answered 404", reqs)
	}
	if err := e.control.REST().HangupCall(ctx, over.CallUUID); err == nil {
		t.Error("the REST client hid the 404")
	}
}

// TestNumbersWithoutPlus: Plivo writes numbers without "+"; Handset sends and reads them
// so and shows them in E.164.
func TestNumbersWithoutPlus(t *testing.T) {
	e := newEnv(t, account(), carriertest.FaultNone, plivosim.Options{})
	ctx := ctxOf(t)
	if _, err := e.control.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: callee, From: ours, PublicURL: e.PublicURL}); err != nil {
		t.Fatal(err)
	}
	var form url.Values
	for _, r := range e.fake.Requests() {
		if r.Method == http.MethodPost && r.Path == "/v1/Account/"+e.fake.AuthID()+"/Call/" {
			form = r.Form
		}
	}
	if form.Get("to") != "15550102000" || form.Get("from") != "14155550100" {
		t.Errorf("make call sent to=%q from=%q, want digits without +", form.Get("to"), form.Get("from"))
	}
	cb := plivo.ReadCallback(url.Values{}, url.Values{"From": {"14155550100"}, "To": {"15550102000"}, "CallStatus": {"timeout"}})
	if cb.From != ours || cb.To != callee || cb.Progress.Status != carrier.StatusNoAnswer {
		t.Errorf("callback read as %+v", cb)
	}
	n, err := e.control.Number(ctx, ours)
	if err != nil || n.PhoneNumber != ours {
		t.Errorf("Number: %+v, %v", n, err)
	}
}

// TestDialForm: what Dial asks of Plivo for each machine policy.
func TestDialForm(t *testing.T) {
	e := newEnv(t, account(), carriertest.FaultNone, plivosim.Options{})
	ctx := ctxOf(t)
	id := voice.NewCallID()
	for _, policy := range []carrier.MachinePolicy{carrier.MachineTalk, carrier.MachineHangup, carrier.MachineMessage} {
		before := len(e.fake.Requests())
		if _, err := e.control.Dial(ctx, carrier.Dial{CallID: id, To: callee, From: ours, PublicURL: e.PublicURL + "/",
			OnMachine: policy, RingTimeout: 1500 * time.Millisecond, MaxDuration: time.Minute}); err != nil {
			t.Fatal(err)
		}
		f := e.fake.Requests()[before].Form
		answer, hangup, machine := plivo.OutboundURLs(e.PublicURL, id, policy)
		want := url.Values{"to": {"15550102000"}, "from": {"14155550100"}, "answer_url": {answer}, "answer_method": {"POST"},
			"hangup_url": {hangup}, "hangup_method": {"POST"}, "ring_url": {hangup}, "ring_method": {"POST"},
			"ring_timeout": {"2"}, "time_limit": {"60"}}
		if policy != carrier.MachineTalk {
			want.Set("machine_detection", "true")
			want.Set("machine_detection_url", machine)
			want.Set("machine_detection_method", "POST")
		}
		if fmt.Sprint(f) != fmt.Sprint(want) {
			t.Errorf("%s: sent %v\nwant %v", policy, f, want)
		}
		u, _ := url.Parse(answer)
		if u.Path != plivo.AnswerPath || u.Query().Get(plivo.CallParam) != string(id) || u.Query().Get(plivo.MachineParam) != string(policy) {
			t.Errorf("answer URL %s", answer)
		}
	}
}

// TestNumbersPaged: more numbers than a page holds are all listed, by offset.
func TestNumbersPaged(t *testing.T) {
	var a carriertest.Account
	for i := range 45 {
		a.Numbers = append(a.Numbers, fmt.Sprintf("+1415555%04d", i))
	}
	e := newEnv(t, a, carriertest.FaultNone, plivosim.Options{})
	ns, err := e.control.Numbers(ctxOf(t))
	if err != nil || len(ns) != 45 {
		t.Fatalf("Numbers: %d, %v", len(ns), err)
	}
	for i, n := range ns {
		if n.PhoneNumber != a.Numbers[i] {
			t.Errorf("number %d is %s, want %s", i, n.PhoneNumber, a.Numbers[i])
		}
	}
}

// TestAttachMovesTheApplication: Attach sets the application's URLs, which every number
// linked to it follows.
func TestAttachMovesTheApplication(t *testing.T) {
	e := newEnv(t, carriertest.Account{Numbers: []string{ours, "+14155550111"}}, carriertest.FaultNone, plivosim.Options{})
	ctx := ctxOf(t)
	for _, n := range []string{ours, "+14155550111"} {
		num, err := e.control.Number(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.control.Attach(ctx, num, "https://a.example.com/plivo/answer", "https://a.example.com/plivo/hangup"); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := e.control.Number(ctx, ours)
	if _, err := e.control.Attach(ctx, first, "https://b.example.com/plivo/answer", ""); err != nil {
		t.Fatal(err)
	}
	other, err := e.control.Number(ctx, "+14155550111")
	if err != nil || other.VoiceURL != "https://b.example.com/plivo/answer" || other.StatusCallback != "https://a.example.com/plivo/hangup" {
		t.Errorf("the other number on the application: %+v, %v", other, err)
	}
	if app, _ := e.fake.Application(plivosim.DefaultAppID); app.AnswerMethod != http.MethodPost {
		t.Errorf("application %+v", app)
	}
	c, err := plivo.NewControl(plivo.ControlOptions{REST: plivo.RESTOptions{AuthID: e.fake.AuthID(), AuthToken: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Attach(ctx, first, "https://b.example.com/plivo/answer", ""); !errors.Is(err, carrier.ErrInvalid) {
		t.Errorf("Attach without PLIVO_APP_ID: %v", err)
	}
}

// TestErrorBodies: Plivo's {"api_id","error"} with a string or an object, and bodies
// that are not Plivo's, are classified by status and keep their text.
func TestErrorBodies(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		class  error
		text   string
	}{
		{401, `{"api_id":"a1","error":"Authentication credentials invalid"}`, carrier.ErrAuth, "Authentication credentials invalid"},
		{404, `{"api_id":"a2","error":"not found"}`, carrier.ErrNotFound, "not found"},
		{400, `{"api_id":"a3","error":{"to":["invalid"]}}`, carrier.ErrRejected, `{"to":["invalid"]}`},
		{500, `<html>oops</html>`, carrier.ErrUnreachable, "oops"},
		{429, `{"api_id":"a4","error":"too many requests"}`, carrier.ErrUnreachable, "too many"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		}))
		c, err := plivo.NewControl(plivo.ControlOptions{REST: plivo.RESTOptions{BaseURL: srv.URL, AuthID: plivosim.DefaultAuthID, AuthToken: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Account(ctxOf(t))
		var ae *plivo.APIError
		if !errors.Is(err, tc.class) || !errors.As(err, &ae) || ae.Status != tc.status || !contains(ae.Message, tc.text) {
			t.Errorf("HTTP %d %s: %v, want %v with %q", tc.status, tc.body, err, tc.class, tc.text)
		}
		srv.Close()
	}
}

func TestRequestUUIDAsList(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"api_id":"x","message":"call fired","request_uuid":["9b1f2a44-0000-4000-8000-000000000001"]}`))
	}))
	defer srv.Close()
	r, err := plivo.NewREST(plivo.RESTOptions{BaseURL: srv.URL, AuthID: plivosim.DefaultAuthID, AuthToken: "t"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := r.CreateCall(ctxOf(t), plivo.CallRequest{To: callee, From: ours, AnswerURL: "https://h.example.com/a"})
	if err != nil || id != "9b1f2a44-0000-4000-8000-000000000001" {
		t.Errorf("CreateCall: %q, %v", id, err)
	}
}

func TestNewRESTRefusesBadSettings(t *testing.T) {
	for name, o := range map[string]plivo.RESTOptions{
		"no auth id":        {AuthToken: "t"},
		"short auth id":     {AuthID: "MA123", AuthToken: "t"},
		"auth id with dots": {AuthID: "MA.DQ1ZJIYMDZKMTAYN", AuthToken: "t"},
		"no token":          {AuthID: plivosim.DefaultAuthID},
		"token with space":  {AuthID: plivosim.DefaultAuthID, AuthToken: "t "},
		"base with creds":   {AuthID: plivosim.DefaultAuthID, AuthToken: "t", BaseURL: "https://u:p@api.example.com"},
		"base not http":     {AuthID: plivosim.DefaultAuthID, AuthToken: "t", BaseURL: "ftp://api.example.com"},
	} {
		if _, err := plivo.NewREST(o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	r, err := plivo.NewREST(plivo.RESTOptions{AuthID: plivosim.DefaultAuthID, AuthToken: "secret-token", BaseURL: "http://127.0.0.1:9/v1/"})
	if err != nil || r.BaseURL() != "http://127.0.0.1:9" {
		t.Fatalf("NewREST: %v, %v", r, err)
	}
	if s := fmt.Sprintf("%v %#v %s", r, r, r); contains(s, "secret-token") {
		t.Errorf("printing the client shows the token: %s", s)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestStartStreamByREST: after an asynchronous verdict, the stream starts by REST with
// the same fields the answer document's <Stream> has.
func TestStartStreamByREST(t *testing.T) {
	e := newEnv(t, account(), carriertest.FaultNone, plivosim.Options{})
	ctx := ctxOf(t)
	placed, err := e.control.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: callee, From: ours, PublicURL: e.PublicURL, OnMachine: carrier.MachineHangup})
	if err != nil {
		t.Fatal(err)
	}
	held, err := e.fake.WaitCall(ctx, placed.Ref, func(c plivosim.Call) bool { return c.Verdict != "" })
	if err != nil || len(held.Streams) != 0 {
		t.Fatalf("held call: %+v, %v", held, err)
	}
	s := plivo.Stream{URL: "wss://h.example.com/plivo/stream", Token: "tok1", ContentType: plivo.ContentL16_16k, StatusURL: "https://h.example.com/plivo/stream-status"}
	if err := e.control.REST().StartStream(ctx, held.CallUUID, s); err != nil {
		t.Fatal(err)
	}
	c, _ := e.fake.Call(placed.Ref)
	if len(c.Streams) != 1 {
		t.Fatalf("streams %+v", c.Streams)
	}
	o := c.Streams[0]
	if o.URL != s.URL || !o.Bidirectional || o.AudioTrack != "inbound" || o.ContentType != plivo.ContentL16_16k ||
		o.Headers[plivo.TokenHeader] != "tok1" || o.StatusURL != s.StatusURL || o.StreamTimeout != plivo.StreamTimeout {
		t.Errorf("stream order %+v", o)
	}
	before := len(e.fake.Requests())
	if err := e.control.REST().StartStream(ctx, held.CallUUID, plivo.Stream{URL: s.URL, Token: "a-b"}); err == nil {
		t.Error("a token Plivo refuses was sent")
	}
	if len(e.fake.Requests()) != before {
		t.Error("a refused stream reached the fake")
	}
	if err := e.control.Hangup(ctx, placed.Ref); err != nil {
		t.Fatal(err)
	}
	if _, err := e.fake.WaitCall(ctx, placed.Ref, func(c plivosim.Call) bool { return plivosim.Ended(c.Status) }); err != nil {
		t.Fatal(err)
	}
	var pe *voice.ProviderError
	if err := e.control.REST().StartStream(ctx, held.CallUUID, s); !errors.As(err, &pe) || pe.Status != http.StatusNotFound {
		t.Errorf("streaming an ended call: %v, want Plivo's 404", err)
	}
}

// TestCallFromTheRecordWhenCallbacksWereMissed: a ledger that knows the CallUUID but
// missed the end still gets the final status, from the ended call's record and its
// hang-up cause (the cause names are the fake's, unconfirmed).
func TestCallFromTheRecordWhenCallbacksWereMissed(t *testing.T) {
	callees := map[string]plivosim.Callee{
		"+15550102001": {Outcome: plivosim.OutcomeBusy},
		"+15550102002": {Outcome: plivosim.OutcomeFailed},
		"+15550102003": {Outcome: plivosim.OutcomeNoAnswer},
		"+15550102004": {Hold: time.Millisecond},
	}
	want := map[string]carrier.Status{"+15550102001": carrier.StatusBusy, "+15550102002": carrier.StatusFailed,
		"+15550102003": carrier.StatusNoAnswer, "+15550102004": carrier.StatusCompleted}
	e := newEnv(t, account(), carriertest.FaultNone, plivosim.Options{Callee: func(to string) plivosim.Callee { return callees[to] }})
	ctx := ctxOf(t)
	for to, status := range want {
		d := carrier.Dial{CallID: voice.NewCallID(), To: to, From: ours, PublicURL: e.PublicURL}
		if to == "+15550102003" {
			d.RingTimeout = time.Second
		}
		placed, err := e.control.Dial(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		over, err := e.fake.WaitCall(ctx, placed.Ref, func(c plivosim.Call) bool { return plivosim.Ended(c.Status) })
		if err != nil {
			t.Fatal(err)
		}
		c, err := controlWith(t, e, staleLedger{over.CallUUID}).Call(ctx, placed.Ref)
		if err != nil || c.Status != status || c.To != to || c.From != ours {
			t.Errorf("%s: %+v, %v; want %s", to, c, err, status)
		}
	}
}

// lateLedger misses a call's end on its first read and has it, with the machine verdict
// its callbacks brought, from the second on: the call ended between the two.
type lateLedger struct {
	uuid  string
	reads *int
}

func (l lateLedger) Progress(context.Context, string) (carrier.Progress, bool, error) {
	*l.reads++
	if *l.reads == 1 {
		return carrier.Progress{Ref: l.uuid, Status: carrier.StatusInProgress}, true, nil
	}
	return carrier.Progress{Ref: l.uuid, AnsweredBy: carrier.AnsweredMachine, Declined: true}, true, nil
}

// TestCallEndedWhileAskedKeepsItsVerdict: a call that ends while Call asks Plivo about
// it (a machine hung up on, under policy hangup) is reported with the verdict its
// callbacks recorded, which Plivo's record of the call does not hold.
func TestCallEndedWhileAskedKeepsItsVerdict(t *testing.T) {
	e, ctx, placed, over := endedCall(t)
	reads := 0
	late := controlWith(t, e, lateLedger{over.CallUUID, &reads})
	c, err := late.Call(ctx, placed.Ref)
	if err != nil || c.Status != carrier.StatusCompleted || !c.AnsweredBy.Machine() || c.To != callee {
		t.Errorf("%+v, %v; want completed, answered by a machine", c, err)
	}
}

// endedCall dials a callee who hangs up at once and waits until the fake has ended the call.
func endedCall(t *testing.T) (env, context.Context, carrier.Call, plivosim.Call) {
	t.Helper()
	e := newEnv(t, account(), carriertest.FaultNone, plivosim.Options{
		Callee: func(string) plivosim.Callee { return plivosim.Callee{Hold: time.Millisecond} }})
	ctx := ctxOf(t)
	placed, err := e.control.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: callee, From: ours, PublicURL: e.PublicURL})
	if err != nil {
		t.Fatal(err)
	}
	over, err := e.fake.WaitCall(ctx, placed.Ref, func(c plivosim.Call) bool { return plivosim.Ended(c.Status) })
	if err != nil || over.Status != plivosim.StatusCompleted {
		t.Fatalf("the call: %+v, %v", over, err)
	}
	return e, ctx, placed, over
}

// controlWith is a control of e's fake account that reads ledger.
func controlWith(t *testing.T, e env, ledger plivo.Ledger) *plivo.Control {
	t.Helper()
	c, err := plivo.NewControl(plivo.ControlOptions{REST: plivo.RESTOptions{BaseURL: e.control.REST().BaseURL(),
		AuthID: e.fake.AuthID(), AuthToken: e.fake.AuthToken()}, Ledger: ledger})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
