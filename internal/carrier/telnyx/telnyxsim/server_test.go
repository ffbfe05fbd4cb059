package telnyxsim

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	ours   = "+14155550100"
	callee = "+15550102000"
)

// taker is a webhook receiver that verifies signatures and keeps the events.
type taker struct {
	t      *testing.T
	pub    ed25519.PublicKey
	mu     sync.Mutex
	events []received
	fail   func(attempt int) int // status to answer; nil: 200
	onCall func(e received)
	srv    *httptest.Server
	got    chan struct{}
}

type received struct {
	Type, ID, CCID, State, ClientState, Result, Cause, Source string
	Attempt                                                   int
	DeliveredTo                                               string
}

func newTaker(t *testing.T, pubB64 string) *taker {
	key, err := base64.StdEncoding.DecodeString(pubB64)
	if err != nil || len(key) != ed25519.PublicKeySize {
		t.Fatalf("public key %q does not decode to 32 bytes: %v", pubB64, err)
	}
	k := &taker{t: t, pub: key, got: make(chan struct{}, 1000)}
	k.srv = httptest.NewServer(http.HandlerFunc(k.serve))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *taker) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ts, sig := r.Header.Get("telnyx-timestamp"), r.Header.Get("telnyx-signature-ed25519")
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil || !ed25519.Verify(k.pub, []byte(ts+"|"+string(body)), raw) {
		k.t.Errorf("bad signature on %s", body)
	}
	var env struct {
		Data struct {
			RecordType string         `json:"record_type"`
			EventType  string         `json:"event_type"`
			ID         string         `json:"id"`
			OccurredAt string         `json:"occurred_at"`
			Payload    map[string]any `json:"payload"`
		} `json:"data"`
		Meta struct {
			Attempt     int    `json:"attempt"`
			DeliveredTo string `json:"delivered_to"`
		} `json:"meta"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Data.RecordType != "event" || env.Data.OccurredAt == "" {
		k.t.Errorf("not Telnyx's envelope: %s (%v)", body, err)
	}
	p := env.Data.Payload
	str := func(k string) string { s, _ := p[k].(string); return s }
	e := received{Type: env.Data.EventType, ID: env.Data.ID, CCID: str("call_control_id"), State: str("state"),
		ClientState: str("client_state"), Result: str("result"), Cause: str("hangup_cause"), Source: str("hangup_source"),
		Attempt: env.Meta.Attempt, DeliveredTo: env.Meta.DeliveredTo}
	for _, f := range []string{"call_control_id", "call_leg_id", "call_session_id", "connection_id", "from", "to", "direction"} {
		if str(f) == "" {
			k.t.Errorf("%s without %s: %s", e.Type, f, body)
		}
	}
	status := http.StatusOK
	if k.fail != nil {
		status = k.fail(e.Attempt)
	}
	k.mu.Lock()
	k.events = append(k.events, e)
	k.mu.Unlock()
	if k.onCall != nil && status == http.StatusOK {
		k.onCall(e)
	}
	w.WriteHeader(status)
	k.got <- struct{}{}
}

// waitEvent waits until an event of type typ has arrived and returns the events so far.
func (k *taker) waitEvent(typ string) []received {
	k.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		k.mu.Lock()
		evs := slices.Clone(k.events)
		k.mu.Unlock()
		if slices.ContainsFunc(evs, func(e received) bool { return e.Type == typ }) {
			return evs
		}
		select {
		case <-k.got:
		case <-deadline:
			k.t.Fatalf("no %s; got %+v", typ, evs)
		}
	}
}

func types(evs []received) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// fakeOn is a fake serving over HTTP whose application's webhooks go to a taker.
func fakeOn(t *testing.T, o Options) (*Server, *httptest.Server, *taker) {
	t.Helper()
	o.Numbers = append(o.Numbers, Number{PhoneNumber: ours, ConnectionID: o.ConnectionID})
	s := New(o)
	k := newTaker(t, s.PublicKeyBase64())
	if o.WebhookURL == "" {
		s.app.webhookURL = k.srv.URL + "/telnyx/webhook"
	}
	if o.ConnectionID == "" {
		s.numbers[len(s.numbers)-1].ConnectionID = s.ConnectionID()
	}
	api := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); api.Close() })
	return s, api, k
}

// request sends one API request with the fake's key (key "" for none).
func request(t *testing.T, api *httptest.Server, key, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, api.URL+path, strings.NewReader(body))
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// errorCode is the first errors[].code of an answer, which must be a string.
func errorCode(t *testing.T, out map[string]any) string {
	t.Helper()
	errs, _ := out["errors"].([]any)
	if len(errs) == 0 {
		t.Fatalf("no errors[] in %v", out)
	}
	code, ok := errs[0].(map[string]any)["code"].(string)
	if !ok {
		t.Fatalf("errors[0].code is not a string: %v", out)
	}
	return code
}

func TestKeyIsRequired(t *testing.T) {
	s, api, _ := fakeOn(t, Options{})
	for _, key := range []string{"", "wrong", s.APIKey() + "x"} {
		status, out := request(t, api, key, "GET", "/v2/balance", "")
		if status != http.StatusUnauthorized || errorCode(t, out) == "" {
			t.Errorf("key %q: %d %v", key, status, out)
		}
	}
	if status, _ := request(t, api, s.APIKey(), "GET", "/v2/balance", ""); status != http.StatusOK {
		t.Errorf("the right key: %d", status)
	}
}

func TestDialRefusesBadBodies(t *testing.T) {
	s, api, _ := fakeOn(t, Options{})
	conn := s.ConnectionID()
	for name, body := range map[string]string{
		"not JSON":         `{`,
		"no connection":    `{"to":"+15550102000","from":"+14155550100"}`,
		"other connection": `{"connection_id":"1","to":"+15550102000","from":"+14155550100"}`,
		"bad to":           `{"connection_id":"` + conn + `","to":"5550102000","from":"+14155550100"}`,
		"from not ours":    `{"connection_id":"` + conn + `","to":"+15550102000","from":"+14155550199"}`,
		"bad AMD":          `{"connection_id":"` + conn + `","to":"+15550102000","from":"+14155550100","answering_machine_detection":"guess"}`,
		"bad state":        `{"connection_id":"` + conn + `","to":"+15550102000","from":"+14155550100","client_state":"%%%"}`,
		"zero timeout":     `{"connection_id":"` + conn + `","to":"+15550102000","from":"+14155550100","timeout_secs":0}`,
	} {
		if status, out := request(t, api, s.APIKey(), "POST", "/v2/calls", body); status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %v, want 422", name, status, out)
		}
	}
	if n := len(s.Calls()); n != 0 {
		t.Errorf("%d calls placed by bad bodies", n)
	}
}

func TestCommandsToEndedAndUnknownCalls(t *testing.T) {
	s, api, k := fakeOn(t, Options{})
	c, err := s.Ring(context.Background(), callee, ours, RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := "/v2/calls/" + c.CallControlID + "/actions/"
	if status, out := request(t, api, s.APIKey(), "POST", path+"answer", `{"command_id":"a1"}`); status != 200 {
		t.Fatalf("answer: %d %v", status, out)
	}
	// The same command_id again: the same answer, no second effect.
	if status, _ := request(t, api, s.APIKey(), "POST", path+"answer", `{"command_id":"a1"}`); status != 200 {
		t.Errorf("repeated answer: %d", status)
	}
	// Another answer is refused: the call is not parked any more.
	if status, _ := request(t, api, s.APIKey(), "POST", path+"answer", `{"command_id":"a2"}`); status != http.StatusUnprocessableEntity {
		t.Errorf("second answer: %d", status)
	}
	s.Hangup(c.CallControlID, "caller")
	evs := k.waitEvent("call.hangup")
	if got := types(evs); !slices.Equal(got, []string{"call.initiated", "call.answered", "call.hangup"}) {
		t.Errorf("events %v", got)
	}
	if last := evs[len(evs)-1]; last.Cause != "normal_clearing" || last.Source != "caller" {
		t.Errorf("hangup %+v", last)
	}
	status, out := request(t, api, s.APIKey(), "POST", path+"hangup", `{"command_id":"h1"}`)
	if status != http.StatusUnprocessableEntity || errorCode(t, out) != "90018" {
		t.Errorf("a command to an ended call: %d %v, want 422 90018", status, out)
	}
	if status, _ := request(t, api, s.APIKey(), "POST", "/v2/calls/v3:nope/actions/hangup", `{}`); status != http.StatusNotFound {
		t.Errorf("unknown call: %d", status)
	}
	if got, _ := s.Call(c.CallControlID); !slices.Equal(got.Commands, []string{"answer"}) {
		t.Errorf("commands that took effect: %v", got.Commands)
	}
}

func TestWebhooksAreSignedAndRetriedWithTheSameID(t *testing.T) {
	s, _, k := fakeOn(t, Options{WebhookRetries: 2, RetryDelay: time.Millisecond})
	failover := newTaker(t, s.PublicKeyBase64())
	s.app.failoverURL = failover.srv.URL + "/failover"
	k.fail = func(int) int { return http.StatusInternalServerError } // every attempt fails
	if _, err := s.Ring(context.Background(), callee, ours, RingOptions{}); err != nil {
		t.Fatal(err)
	}
	failover.waitEvent("call.initiated")
	k.mu.Lock()
	evs := slices.Clone(k.events)
	k.mu.Unlock()
	if len(evs) != 3 {
		t.Fatalf("%d attempts at the primary URL, want 3: %+v", len(evs), evs)
	}
	for i, e := range evs {
		if e.ID != evs[0].ID || e.Attempt != i+1 || e.DeliveredTo != k.srv.URL+"/telnyx/webhook" {
			t.Errorf("attempt %d: %+v; want data.id %s and attempt %d", i+1, e, evs[0].ID, i+1)
		}
	}
	if f := failover.events[0]; f.ID != evs[0].ID || f.Attempt != 4 {
		t.Errorf("failover delivery %+v", f)
	}
}

func TestSignatureIsOverTimestampAndRawBody(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	pub, _ := base64.StdEncoding.DecodeString(s.PublicKeyBase64())
	body := []byte(`{"data":{"id":"1"}}`)
	ts, sig := s.Sign(body, time.Unix(1700000000, 0))
	raw, _ := base64.StdEncoding.DecodeString(sig)
	if ts != "1700000000" || !ed25519.Verify(pub, []byte("1700000000|"+string(body)), raw) {
		t.Errorf("signature %s at %s does not verify over ts|body", sig, ts)
	}
	if ed25519.Verify(pub, []byte("1700000000|"+`{"data": {"id": "1"}}`), raw) {
		t.Error("the signature verifies over re-serialised JSON")
	}
}

func TestParkedCallIsDroppedAfterFirstCommandTimeout(t *testing.T) {
	s, _, k := fakeOn(t, Options{FirstCommandTimeout: 50 * time.Millisecond})
	c, err := s.Ring(context.Background(), callee, ours, RingOptions{Attestation: "A"})
	if err != nil || c.State != "parked" || c.Direction != "incoming" {
		t.Fatalf("Ring: %+v, %v", c, err)
	}
	evs := k.waitEvent("call.hangup")
	if evs[0].Type != "call.initiated" || evs[0].State != "parked" || evs[0].ClientState != "" {
		t.Errorf("first event %+v, want call.initiated parked without client state", evs[0])
	}
	got, _ := s.Call(c.CallControlID)
	if got.Alive || got.Answered || len(got.Streams) != 0 || got.HangupCause != "timeout" {
		t.Errorf("an unanswered parked call: %+v", got)
	}
	if _, err := s.Ring(context.Background(), callee, "+14155550999", RingOptions{}); err == nil {
		t.Error("rang a number the account does not have")
	}
}

func TestAnswerWithStreamFieldsOpensTheStream(t *testing.T) {
	orders := make(chan StreamOrder, 1)
	s, api, k := fakeOn(t, Options{OpenStream: func(ctx context.Context, o StreamOrder) error {
		orders <- o
		<-ctx.Done() // the stream lasts as long as the call
		return nil
	}})
	c, err := s.Ring(context.Background(), callee, ours, RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	state := base64.StdEncoding.EncodeToString([]byte(`{"call":"c_1"}`))
	body := `{"client_state":"` + state + `","command_id":"answer:` + c.CallControlID + `","stream_url":"wss://h.example/telnyx/stream?handset_token=t",
		"stream_track":"inbound_track","stream_codec":"PCMU","stream_bidirectional_mode":"rtp","stream_bidirectional_codec":"PCMU",
		"stream_bidirectional_sampling_rate":8000,"stream_bidirectional_target_legs":"self","stream_auth_token":"t"}`
	if status, out := request(t, api, s.APIKey(), "POST", "/v2/calls/"+c.CallControlID+"/actions/answer", body); status != 200 {
		t.Fatalf("answer: %d %v", status, out)
	}
	o := <-orders
	want := StreamOrder{CallControlID: c.CallControlID, CallLegID: c.CallLegID, CallSessionID: c.CallSessionID, From: callee, To: ours,
		Direction: "incoming", StreamURL: "wss://h.example/telnyx/stream?handset_token=t", Track: "inbound_track", Codec: "PCMU",
		BidirectionalMode: "rtp", BidirectionalCodec: "PCMU", SampleRate: 8000, TargetLegs: "self", AuthToken: "t", ClientState: state}
	if o != want {
		t.Errorf("stream order\n%+v\nwant\n%+v", o, want)
	}
	evs := k.waitEvent("call.answered")
	if last := evs[len(evs)-1]; last.ClientState != state {
		t.Errorf("call.answered carries client state %q, want %q", last.ClientState, state)
	}
	bad := `{"stream_url":"https://not-a-socket.example"}`
	if status, _ := request(t, api, s.APIKey(), "POST", "/v2/calls/"+c.CallControlID+"/actions/streaming_start", bad); status != http.StatusUnprocessableEntity {
		t.Errorf("streaming_start to an https URL: %d", status)
	}
}

func TestOutboundMachineWithBeep(t *testing.T) {
	s, api, k := fakeOn(t, Options{Callee: func(string) Callee { return Callee{Machine: true, Greeting: 10 * time.Millisecond} }})
	body := `{"connection_id":"` + s.ConnectionID() + `","to":"` + callee + `","from":"` + ours + `","answering_machine_detection":"detect_beep","webhook_url":"` + k.srv.URL + `/telnyx/webhook"}`
	status, out := request(t, api, s.APIKey(), "POST", "/v2/calls", body)
	data, _ := out["data"].(map[string]any)
	if status != 200 || data["call_control_id"] == "" || data["is_alive"] != true || data["record_type"] != "call" {
		t.Fatalf("dial: %d %v", status, out)
	}
	evs := k.waitEvent("call.machine.greeting.ended")
	want := []string{"call.initiated", "call.answered", "call.machine.detection.ended", "call.machine.greeting.ended"}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if evs[2].Result != "machine" || evs[3].Result != "beep_detected" {
		t.Errorf("results %q, %q", evs[2].Result, evs[3].Result)
	}
}

func TestOutcomesEndWithTheirCauses(t *testing.T) {
	for outcome, cause := range map[Outcome]string{OutcomeBusy: "user_busy", OutcomeFailed: "call_rejected", OutcomeNoAnswer: "timeout"} {
		s, api, k := fakeOn(t, Options{Callee: func(string) Callee { return Callee{Outcome: outcome} }})
		body := `{"connection_id":"` + s.ConnectionID() + `","to":"` + callee + `","from":"` + ours + `","timeout_secs":1}`
		if status, out := request(t, api, s.APIKey(), "POST", "/v2/calls", body); status != 200 {
			t.Fatalf("dial: %d %v", status, out)
		}
		evs := k.waitEvent("call.hangup")
		if last := evs[len(evs)-1]; last.Cause != cause || slices.Contains(types(evs), "call.answered") {
			t.Errorf("%s: events %v ending %+v, want hangup_cause %s and no answer", outcome, types(evs), last, cause)
		}
	}
}

func TestFaultsApplyAfterAndTimes(t *testing.T) {
	s, api, _ := fakeOn(t, Options{})
	s.AddFault(Fault{Path: "/balance", Status: http.StatusServiceUnavailable, After: 1, Times: 1})
	var got []int
	for range 3 {
		status, _ := request(t, api, s.APIKey(), "GET", "/v2/balance", "")
		got = append(got, status)
	}
	if !slices.Equal(got, []int{200, 503, 200}) {
		t.Errorf("statuses %v, want 200 503 200", got)
	}
}

// TestRingTakesAWithheldCallerAndAChosenID: a withheld caller rings as Withheld, a call
// can be given its call_control_id (a kit sets up its line first), and an id in use or a
// from that is neither a number nor withheld is refused.
func TestRingTakesAWithheldCallerAndAChosenID(t *testing.T) {
	s, _, k := fakeOn(t, Options{FirstCommandTimeout: time.Minute})
	c, err := s.Ring(context.Background(), Withheld, ours, RingOptions{CallControlID: "v3:chosen"})
	if err != nil || c.From != Withheld || c.CallControlID != "v3:chosen" {
		t.Fatalf("Ring: %+v, %v", c, err)
	}
	if evs := k.waitEvent("call.initiated"); evs[0].CCID != "v3:chosen" {
		t.Errorf("call.initiated for %q, want v3:chosen", evs[0].CCID)
	}
	if _, err := s.Ring(context.Background(), callee, ours, RingOptions{CallControlID: "v3:chosen"}); err == nil {
		t.Error("rang a second call with an id in use")
	}
	if _, err := s.Ring(context.Background(), "nobody", ours, RingOptions{}); err == nil {
		t.Error("rang from something that is neither a number nor withheld")
	}
}
