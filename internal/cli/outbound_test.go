package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
)

// Numbers of the outbound tests: Handset's own line (on the fake account) and people.
const (
	ourNumber   = "+15550009999"
	alice       = "+15550102000"
	bob         = "+15550103000"
	transferOK  = "+15550001111"
	transferBad = "+19005550000"
)

// outRig is serve with a fake carrier placing its outbound calls: a carrier kit's vendor
// (startOutboundWith: rig.kit and rig.vendor), or the fake Twilio REST API itself
// (startOutbound, for the tests not yet run per carrier).
type outRig struct {
	*rig
	tw    *faketwilio.Server // startOutbound's; nil on a kit's rig
	token string             // the API token
	// inbound records the vendor's requests to Handset and outbound Handset's to the
	// vendor's API (a kit's rig only).
	inbound, outbound *tap
}

func startOutbound(t *testing.T, answer func(to string) faketwilio.Answer, transcripts []string, extra ...string) *outRig {
	t.Helper()
	tw := faketwilio.New(faketwilio.Options{
		AccountSID: "AC00000000000000000000000000000000", AuthToken: "test-auth-token",
		Numbers: []faketwilio.Number{{PhoneNumber: ourNumber}}, Answer: answer, InsecureStreamURL: true,
	})
	twSrv := httptest.NewServer(tw)
	t.Cleanup(func() { tw.Close(); twSrv.Close() })
	addr, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	settings := append([]string{
		"HANDSET_LISTEN=" + addr, "HANDSET_PUBLIC_URL=http://" + addr,
		"HANDSET_TWILIO_API_URL=" + twSrv.URL, "HANDSET_PHONE_NUMBER=" + ourNumber,
		"HANDSET_SESSION_KEY_FROM=caller_hash", "HANDSET_TRANSFER_ALLOW=" + transferOK,
	}, extra...)
	o := newOutRig(t, startServe(t, transcripts, settings...))
	o.tw = tw
	return o
}

// api sends a request to /api with the token and decodes the JSON answer into out.
func (o *outRig) api(method, path string, body any, out any) int {
	o.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, o.baseURL()+path, rd)
	req.Header.Set("Authorization", "Bearer "+o.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		o.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && json.Unmarshal(data, out) != nil {
		o.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return resp.StatusCode
}

type apiJob struct {
	ID     int64           `json:"id"`
	State  string          `json:"state"`
	Error  string          `json:"error"`
	Result json.RawMessage `json:"result"`
}

type apiCall struct {
	ID         string                 `json:"id"`
	Direction  string                 `json:"direction"`
	From       string                 `json:"from"`
	To         string                 `json:"to"`
	CallerHash string                 `json:"caller_hash"`
	Outcome    string                 `json:"outcome"`
	Live       bool                   `json:"live"`
	JobID      int64                  `json:"job_id"`
	Transcript []store.TranscriptLine `json:"transcript"`
	Journal    []obs.Event            `json:"journal"`
}

// waitJob follows a job through the API until it ends.
func (o *outRig) waitJob(id int64) apiJob {
	o.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var j apiJob
		o.api("GET", "/api/jobs/"+itoa(id), nil, &j)
		if j.State == "completed" || j.State == "failed" {
			return j
		}
		if time.Now().After(deadline) {
			o.t.Fatalf("job %d still %s\n%s", id, j.State, o.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The API places a call as a job: the carrier is asked with machine detection and its
// webhooks are answered, the callee hears the message, the store keeps the call and its
// transcript. `handset call --wait` does the same from the command line; bad input is
// refused.
func TestOutboundCalls(t *testing.T) { forEachCarrier(t, testOutboundCalls) }

func testOutboundCalls(t *testing.T, kit simkit.Kit) {
	o := startOutboundWith(t, kit, nil, nil)
	var queued apiJob
	if code := o.api("POST", "/api/calls?wait=60s", map[string]any{"to": "+1 (555) 010-2000", "message": "Hi, this is your reminder."}, &queued); code != 200 {
		t.Fatalf("POST /api/calls = %d %+v\n%s", code, queued, o.logs.String())
	}
	var res jobs.CallResult
	if err := json.Unmarshal(queued.Result, &res); err != nil || queued.State != "completed" {
		t.Fatalf("job %s %s %q", queued.State, queued.Result, queued.Error)
	}
	calls := o.vendor.Calls()
	if len(calls) != 1 || calls[0].To != alice || calls[0].From != ourNumber {
		t.Fatalf("%s saw %+v", kit.Name(), calls)
	}
	if res.Outcome != "caller_hangup" || res.AnsweredBy != "human" || res.CallSID != calls[0].Ref {
		t.Errorf("result = %+v: want the callee to hang up after a human answered, on call %s", res, calls[0].Ref)
	}
	o.detectionAsked(t, "hangup")
	o.webhooksAnswered(t)
	var c apiCall
	o.api("GET", "/api/calls/"+string(res.CallID)+"?view=admin", nil, &c)
	if c.Direction != "outbound" || c.To != alice || c.Outcome != "caller_hangup" || c.JobID != queued.ID || c.CallerHash == "" {
		t.Errorf("stored call = %+v", c)
	}
	if len(c.Transcript) == 0 || c.Transcript[0].Text != "Hi, this is your reminder." || c.Transcript[0].Interrupted {
		t.Errorf("transcript = %+v: want the message heard whole", c.Transcript)
	}
	if len(c.Journal) == 0 || c.Journal[0].Direction != "outbound" {
		t.Errorf("journal start = %+v", c.Journal[:min(1, len(c.Journal))])
	}

	// From the command line, against the same store.
	env := append(o.env(), "HANDSET_LISTEN=127.0.0.1:0")
	code, out := runCmd(t, env, "call", bob, "--wait", "--json")
	if code != 0 || !strings.Contains(out, `"completed"`) || !strings.Contains(out, bob) {
		t.Errorf("handset call --wait = %d:\n%s", code, out)
	}
	if n := len(o.vendor.Calls()); n != 2 {
		t.Errorf("%s saw %d calls, want 2", kit.Name(), n)
	}
	if code, out := runCmd(t, env, "call", "555-0100"); code != 2 || !strings.Contains(out, "country code") {
		t.Errorf("a number without a country code: %d %s", code, out)
	}
	var e map[string]string
	if code := o.api("POST", "/api/calls", map[string]any{"to": alice, "on_machine": "maybe"}, &e); code != 400 || !strings.Contains(e["error"], "on_machine") {
		t.Errorf("bad on_machine: %d %v", code, e)
	}
	if code := o.api("POST", "/api/calls", map[string]any{"to": alice, "colour": "red"}, &e); code != 400 || !strings.Contains(e["error"], "colour") {
		t.Errorf("an unknown field: %d %v", code, e)
	}
	o.token = "wrong"
	if code := o.api("GET", "/api/calls", nil, &e); code != 401 {
		t.Errorf("wrong token: %d", code)
	}
}

// env is the settings serve was started with.
func (o *outRig) env() []string { return o.environ }

// A busy callee is called again later; a machine is hung up on (the default policy).
func TestOutboundBusyAndMachine(t *testing.T) { forEachCarrier(t, testOutboundBusyAndMachine) }

func testOutboundBusyAndMachine(t *testing.T, kit simkit.Kit) {
	o := startOutboundWith(t, kit, func(to string) simkit.Callee {
		if to == bob {
			return simkit.Callee{Outcome: simkit.Machine}
		}
		return simkit.Callee{Outcome: simkit.Busy}
	}, nil)
	var busy, machine apiJob
	o.api("POST", "/api/calls", map[string]any{"to": alice, "attempts": 2}, &busy)
	o.api("POST", "/api/calls?wait=60s", map[string]any{"to": bob}, &machine)
	var res jobs.CallResult
	_ = json.Unmarshal(machine.Result, &res)
	if machine.State != "completed" || res.Outcome != "machine" || res.AnsweredBy != "machine_start" {
		t.Errorf("machine: %s %+v %q", machine.State, res, machine.Error)
	}
	// the busy job waits for its redial, minutes away
	deadline := time.Now().Add(30 * time.Second)
	for {
		var j apiJob
		o.api("GET", "/api/jobs/"+itoa(busy.ID), nil, &j)
		if j.State == "pending" && strings.Contains(j.Error, "busy") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("busy job: %+v", j)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A transfer to a number off the allow-list is refused and journaled; one on it has
// the carrier dial it and the call ends as transferred.
func TestTransferAllowList(t *testing.T) { forEachCarrier(t, testTransferAllowList) }

func testTransferAllowList(t *testing.T, kit simkit.Kit) {
	onLine := make(chan struct{})
	o := startOutboundWith(t, kit, func(string) simkit.Callee {
		return simkit.Callee{Talk: func(ctx context.Context, c phone.Phone) error {
			_ = c.WaitFor(ctx, func(s phone.Snapshot) bool { return hasPlayedMark(s, "t0-end") })
			close(onLine)
			<-ctx.Done() // stays until Handset moves the call
			return nil
		}}
	}, nil)
	var queued apiJob
	o.api("POST", "/api/calls", map[string]any{"to": alice}, &queued)
	<-onLine
	var calls struct{ Calls []apiCall }
	o.api("GET", "/api/calls", nil, &calls)
	if len(calls.Calls) != 1 || !calls.Calls[0].Live {
		t.Fatalf("calls = %+v", calls)
	}
	id := calls.Calls[0].ID
	var refused map[string]any
	if code := o.api("POST", "/api/calls/"+id+"/transfer", map[string]any{"to": "the billing desk"}, &refused); code != 400 ||
		!strings.Contains(refused["error"].(string), "not a phone number") {
		t.Errorf("transfer to something that is not a number: %d %v", code, refused)
	}
	if code := o.api("POST", "/api/calls/"+id+"/transfer", map[string]any{"to": transferBad, "reason": "caller asked for billing"}, &refused); code != 403 ||
		!strings.Contains(refused["error"].(string), "allow-list") {
		t.Fatalf("transfer off the list: %d %v", code, refused)
	}
	if code := o.api("POST", "/api/calls/"+id+"/transfer", map[string]any{"to": transferOK}, &refused); code != 200 {
		t.Fatalf("transfer on the list: %d %v\n%s", code, refused, o.logs.String())
	}
	j := o.waitJob(queued.ID)
	var res jobs.CallResult
	_ = json.Unmarshal(j.Result, &res)
	if res.Outcome != "transferred" {
		t.Errorf("call ended %q, want transferred", res.Outcome)
	}
	if got := o.outboundCall(1).TransferredTo; got != transferOK {
		t.Errorf("%s dialled %q, want %s", kit.Name(), got, transferOK)
	}
	events := journalOf(t, o.rig, id)
	for _, want := range []string{obs.TransferRequested, obs.TransferRefused, obs.TransferStarted} {
		if len(eventsOf(events, want)) == 0 {
			t.Errorf("journal has no %s:\n%s", want, dumpEvents(events))
		}
	}
	if r := eventsOf(events, obs.TransferRefused); len(r) != 1 || r[0].Name != transferBad || !strings.Contains(r[0].Message, "HANDSET_TRANSFER_ALLOW") {
		t.Errorf("refusal journaled as %+v", r)
	}
	if eventsOf(events, obs.CallEnd)[0].Reason != "transferred" {
		t.Errorf("call.end = %+v", eventsOf(events, obs.CallEnd))
	}
}

// A delivery for nobody Handset knows is refused with the reason; for a caller who called
// before, Handset calls them back on their number and speaks the message.
func TestDeliver(t *testing.T) { forEachCarrier(t, testDeliver) }

func testDeliver(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "outbound calls held for seconds")
	o := startOutboundWith(t, kit, func(string) simkit.Callee { return simkit.Callee{Hold: 3 * time.Second} }, []string{"remind me later"})
	var e map[string]string
	if code := o.api("POST", "/api/deliver", map[string]any{"session_key": "handset:ch_nobody", "message": "Your order shipped."}, &e); code != 404 ||
		!strings.Contains(e["error"], "no caller is known") {
		t.Errorf("unknown session: %d %v", code, e)
	}
	if code := o.api("POST", "/api/deliver", map[string]any{"caller_hash": "x", "session_key": "y", "message": "m"}, &e); code != 400 {
		t.Errorf("two recipients: %d %v", code, e)
	}
	// Alice calls in and talks.
	ctx := context.Background()
	callerTurns(ctx, t, o.rig, alice, 1, 0)
	var list struct{ Calls []apiCall }
	o.api("GET", "/api/calls", nil, &list)
	hash := list.Calls[0].CallerHash
	var queued apiJob
	if code := o.api("POST", "/api/deliver?wait=60s", map[string]any{"session_key": "handset:" + hash, "message": "Your order has shipped."}, &queued); code != 200 {
		t.Fatalf("deliver: %d %+v\n%s", code, queued, o.logs.String())
	}
	var res jobs.CallResult
	_ = json.Unmarshal(queued.Result, &res)
	if res.Delivered != "spoken" {
		t.Errorf("delivery result %+v %q, want spoken", res, queued.Error)
	}
	calls := o.vendor.Calls()
	if len(calls) != 1 || calls[0].To != alice {
		t.Fatalf("%s calls: %+v", kit.Name(), calls)
	}
	o.detectionAsked(t, "message")
	var c apiCall
	o.api("GET", "/api/calls/"+string(res.CallID), nil, &c)
	if len(c.Transcript) == 0 || c.Transcript[0].Text != "Your order has shipped." || c.CallerHash != hash {
		t.Errorf("the callback: %+v", c)
	}
}

// A delivery that reaches an answering machine leaves the message after the beep and
// hangs up once it has played.
func TestDeliverToVoicemail(t *testing.T) { forEachCarrier(t, testDeliverToVoicemail) }

func testDeliverToVoicemail(t *testing.T, kit simkit.Kit) {
	o := startOutboundWith(t, kit, func(string) simkit.Callee {
		return simkit.Callee{Outcome: simkit.Voicemail, Hold: 20 * time.Second}
	}, []string{"hello"})
	callerTurns(context.Background(), t, o.rig, alice, 1, 0)
	var list struct{ Calls []apiCall }
	o.api("GET", "/api/calls", nil, &list)
	var queued apiJob
	o.api("POST", "/api/deliver?wait=60s", map[string]any{"caller_hash": list.Calls[0].CallerHash, "message": "Call us back about your order."}, &queued)
	var res jobs.CallResult
	_ = json.Unmarshal(queued.Result, &res)
	if res.Delivered != "voicemail" || res.Outcome != "agent_hangup" {
		t.Errorf("voicemail delivery: %+v %q", res, queued.Error)
	}
}

// A live call's conversation is handed to the runtime's webhook with its transcript and
// session key, and the call ends when asked.
func TestHandoffToAnotherChannel(t *testing.T) { forEachCarrier(t, testHandoffToAnotherChannel) }

func testHandoffToAnotherChannel(t *testing.T, kit simkit.Kit) {
	var mu sync.Mutex
	var got []jobs.Handoff
	var auth, idem string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var h jobs.Handoff
		_ = json.NewDecoder(r.Body).Decode(&h)
		mu.Lock()
		got = append(got, h)
		auth, idem = r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key")
		mu.Unlock()
	}))
	defer hook.Close()
	o := startOutboundWith(t, kit, nil, []string{"send me the details on telegram"},
		"HANDSET_HANDOFF_URL="+hook.URL, "HANDSET_HANDOFF_KEY=hook-key")
	ctx := context.Background()
	c := o.placeFrom(ctx, alice)
	waitMark(ctx, t, c, "t0-end")
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 7)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, markEnd(1))
	var list struct{ Calls []apiCall }
	o.api("GET", "/api/calls", nil, &list)
	id := list.Calls[0].ID
	var j map[string]any
	if code := o.api("POST", "/api/sessions/handset:"+list.Calls[0].CallerHash+"/handoff",
		map[string]any{"channel": "telegram", "note": "wants the details in writing", "hangup": true}, &j); code != 200 {
		t.Fatalf("handoff: %d %v", code, j)
	}
	<-c.Done() // Handset hung up
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("webhook got %d handoffs", len(got))
	}
	h := got[0]
	if h.CallID != voice.CallID(id) || h.Channel != "telegram" || h.SessionKey != "handset:"+list.Calls[0].CallerHash || !h.Call.Live {
		t.Errorf("handoff = %+v", h)
	}
	var said []string
	for _, l := range h.Transcript {
		said = append(said, l.Role+": "+l.Text)
	}
	joined := strings.Join(said, " | ")
	if !strings.Contains(joined, "user: send me the details on telegram") || !strings.Contains(joined, "assistant: "+greeting) {
		t.Errorf("transcript handed off: %s", joined)
	}
	if auth != "Bearer hook-key" || !strings.HasPrefix(idem, "handset-handoff-") {
		t.Errorf("headers: auth %q idempotency %q", auth, idem)
	}
	if strings.Contains(joined, "5550102000") {
		t.Error("the caller's number was handed off")
	}
	events := journalOf(t, o.rig, id)
	if len(eventsOf(events, obs.HandoffDone)) != 1 || eventsOf(events, obs.CallEnd)[0].Reason != "agent_hangup" {
		t.Errorf("journal:\n%s", dumpEvents(events))
	}
}

// A caller who calls twice reaches the same session on the runtime, and the store keeps it
// (GET /api/sessions/{key}); another caller has their own.
func TestCallersKeepTheirSession(t *testing.T) { forEachCarrier(t, testCallersKeepTheirSession) }

func testCallersKeepTheirSession(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "several calls in real time")
	h := fakehermes.New(fakehermes.Options{Key: "hermes-key-0123456789"})
	hSrv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); hSrv.Close() })
	o := startOutboundWith(t, kit, nil, []string{"hello again"},
		"HANDSET_AGENT=hermes", "HANDSET_AGENT_URL="+hSrv.URL+"/v1", "HANDSET_AGENT_KEY=hermes-key-0123456789")
	ctx := context.Background()
	callerTurns(ctx, t, o.rig, alice, 1, 0)
	callerTurns(ctx, t, o.rig, alice, 1, 0)
	callerTurns(ctx, t, o.rig, bob, 1, 0)
	var keys []string
	for _, rq := range h.Requests() {
		if rq.Method == "POST" && strings.HasSuffix(rq.Path, "/runs") {
			keys = append(keys, rq.SessionKey)
		}
	}
	if len(keys) != 3 || keys[0] == "" || keys[0] != keys[1] || keys[2] == keys[0] {
		t.Fatalf("Hermes saw session keys %q: want alice's twice, bob's different", keys)
	}
	var ss struct {
		CallerHash string `json:"caller_hash"`
		Count      int    `json:"calls_count"`
		Calls      []apiCall
	}
	if code := o.api("GET", "/api/sessions/"+keys[0]+"?view=admin", nil, &ss); code != 200 || ss.Count != 2 || len(ss.Calls) != 2 || ss.Calls[0].From != alice {
		t.Errorf("alice's session in the store: %d %+v", code, ss)
	}
	if code := o.api("GET", "/api/sessions/"+keys[2]+"?view=admin", nil, &ss); code != 200 || ss.Count != 1 || ss.Calls[0].From != bob {
		t.Errorf("bob's session: %d %+v", code, ss)
	}
}
