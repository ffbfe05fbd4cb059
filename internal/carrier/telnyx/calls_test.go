package telnyx_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/telnyx"
	"github.com/handset-voice/handset/internal/carrier/telnyx/telnyxsim"
	"github.com/handset-voice/handset/internal/voice"
)

const (
	ours   = "+14155550100"
	person = "+15550102000"
)

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func quietRig(t *testing.T, o telnyxsim.Options) *rig {
	return newRig(t, carriertest.Account{Numbers: []string{ours}}, carriertest.FaultNone, o)
}

// dialBodies are the JSON bodies of every POST /v2/calls the fake received.
func dialBodies(t *testing.T, fake *telnyxsim.Server) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range fake.Requests() {
		if r.Method == "POST" && r.Path == "/v2/calls" {
			var b map[string]any
			if err := json.Unmarshal(r.Body, &b); err != nil {
				t.Fatalf("dial body %s: %v", r.Body, err)
			}
			out = append(out, b)
		}
	}
	return out
}

// TestHangupRacingOurs: the far end hangs up while Handset's hangup is in flight; Telnyx
// answers 422/90018, which is a call hung up, not an error.
func TestHangupRacingOurs(t *testing.T) {
	r := quietRig(t, telnyxsim.Options{HangupRace: true})
	ctx := ctxOf(t)
	placed := dialAnswered(ctx, t, r)
	if err := r.control.Hangup(ctx, placed.Ref); err != nil {
		t.Fatalf("Hangup that lost the race: %v, want nil", err)
	}
	var codes []string
	for _, q := range r.fake.Requests() {
		if strings.HasSuffix(q.Path, "/actions/hangup") {
			codes = append(codes, q.Code)
		}
	}
	if len(codes) != 1 || codes[0] != telnyxsim.CodeCallEnded {
		t.Errorf("hangup answers: %v, want one 90018 (the race did not happen)", codes)
	}
	c, _ := r.fake.Call(placed.Ref)
	if c.HangupSource != "callee" {
		t.Errorf("hangup_source %q, want callee: the far end ended it", c.HangupSource)
	}
	// Unknown to Telnyx counts as hung up too.
	if err := r.control.Hangup(ctx, "v3:unknown"); err != nil {
		t.Errorf("Hangup of a call Telnyx does not know: %v", err)
	}
}

// TestOutboundDataIsInClientState: Handset's call id and machine policy ride in the dial's
// client_state (covered by the webhook signature), never in the webhook URL's query.
func TestOutboundDataIsInClientState(t *testing.T) {
	r := quietRig(t, telnyxsim.Options{})
	ctx := ctxOf(t)
	id := voice.NewCallID()
	placed, err := r.control.Dial(ctx, carrier.Dial{CallID: id, To: person, From: ours, PublicURL: r.env.PublicURL + "/",
		OnMachine: carrier.MachineMessage})
	if err != nil {
		t.Fatal(err)
	}
	bodies := dialBodies(t, r.fake)
	if len(bodies) != 1 {
		t.Fatalf("%d dials", len(bodies))
	}
	b := bodies[0]
	hook, _ := b["webhook_url"].(string)
	u, err := url.Parse(hook)
	if err != nil || u.RawQuery != "" || u.Path != telnyx.WebhookPath || hook != r.env.PublicURL+telnyx.WebhookPath {
		t.Errorf("webhook_url %q, want %s%s without a query", hook, r.env.PublicURL, telnyx.WebhookPath)
	}
	raw, _ := b["client_state"].(string)
	data, err := base64.StdEncoding.DecodeString(raw)
	if err != nil || !strings.Contains(string(data), string(id)) {
		t.Fatalf("client_state %q (%s): %v, want base64 JSON naming %s", raw, data, err, id)
	}
	state, err := telnyx.DecodeClientState(raw)
	if err != nil || state.CallID != id || state.Machine != carrier.MachineMessage {
		t.Errorf("client_state decodes to %+v, %v", state, err)
	}
	for k := range b {
		if strings.HasPrefix(k, "stream_") {
			t.Errorf("the dial carries %s: the stream starts after the answer and verdict", k)
		}
	}
	// The fake echoes it in the call's events: the ledger learnt the call id from them.
	if err := r.env.WaitFor(ctx, placed.Ref, carrier.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	if p, ok, err := r.ledger.Progress(ctx, placed.Ref); err != nil || !ok || p.CallID != id {
		t.Errorf("ledger %+v %v %v: the events did not carry the call id", p, ok, err)
	}
	r.control.Hangup(ctx, placed.Ref)
}

// TestMachinePolicyToAMD pins the policy → answering_machine_detection mapping, in the
// function and in what a dial sends.
func TestMachinePolicyToAMD(t *testing.T) {
	want := map[carrier.MachinePolicy]string{"": "disabled", carrier.MachineTalk: "disabled",
		carrier.MachineHangup: "detect", carrier.MachineMessage: "detect_beep"}
	r := quietRig(t, telnyxsim.Options{})
	ctx := ctxOf(t)
	for policy, mode := range want {
		if got := telnyx.AMDMode(policy); got != mode {
			t.Errorf("AMDMode(%q) = %q, want %q", policy, got, mode)
		}
		placed, err := r.control.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: person, From: ours,
			PublicURL: r.env.PublicURL, OnMachine: policy})
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := r.fake.Call(placed.Ref); c.AMD != mode {
			t.Errorf("policy %q: the fake saw detection %q, want %q", policy, c.AMD, mode)
		}
		r.control.Hangup(ctx, placed.Ref)
	}
}

// TestCommandIDIsDeterministic: a dial repeated for the same call id (another node, a
// retry) is one call; a repeated hangup has the same command_id.
func TestCommandIDIsDeterministic(t *testing.T) {
	r := quietRig(t, telnyxsim.Options{})
	ctx := ctxOf(t)
	d := carrier.Dial{CallID: voice.NewCallID(), To: person, From: ours, PublicURL: r.env.PublicURL}
	first, err := r.control.Dial(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	again, err := r.control.Dial(ctx, d)
	if err != nil || again.Ref != first.Ref || len(r.fake.Calls()) != 1 {
		t.Errorf("a repeated dial: %+v (%v), %d calls; want the same call", again, err, len(r.fake.Calls()))
	}
	bodies := dialBodies(t, r.fake)
	if bodies[0]["command_id"] != "dial:"+string(d.CallID) || bodies[1]["command_id"] != bodies[0]["command_id"] {
		t.Errorf("command ids %v and %v, want dial:%s both", bodies[0]["command_id"], bodies[1]["command_id"], d.CallID)
	}
	if err := r.env.WaitFor(ctx, first.Ref, carrier.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.control.Hangup(ctx, first.Ref); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for _, q := range r.fake.Requests() {
		if strings.HasSuffix(q.Path, "/actions/hangup") {
			var b struct {
				CommandID string `json:"command_id"`
			}
			_ = json.Unmarshal(q.Body, &b)
			ids = append(ids, b.CommandID)
		}
	}
	if len(ids) != 2 || ids[0] != "hangup:"+first.Ref || ids[1] != ids[0] {
		t.Errorf("hangup command ids %v, want hangup:%s twice", ids, first.Ref)
	}
}

func TestHangupCause(t *testing.T) {
	for _, tc := range []struct {
		cause    string
		answered bool
		want     carrier.Status
	}{
		{"normal_clearing", true, carrier.StatusCompleted},
		{"normal_clearing", false, carrier.StatusCanceled},
		{"time_limit", true, carrier.StatusCompleted},
		{"time_limit", false, carrier.StatusCanceled},
		{"user_busy", false, carrier.StatusBusy},
		{"timeout", false, carrier.StatusNoAnswer},
		{"no_answer", false, carrier.StatusNoAnswer},
		{"originator_cancel", false, carrier.StatusCanceled},
		{"call_rejected", false, carrier.StatusFailed},
		{"not_found", false, carrier.StatusFailed},
		{"unspecified", true, carrier.StatusCompleted},
		{"unspecified", false, carrier.StatusFailed},
		{"something_new", false, carrier.StatusFailed},
		// Answered, then ended for a reason Handset does not know: the call connected, so
		// it is completed (failed means it never connected, and ends a job for good).
		{"something_new", true, carrier.StatusCompleted},
		{"destination_out_of_order", true, carrier.StatusCompleted},
		{"", true, carrier.StatusCompleted},
	} {
		if got := telnyx.HangupCause(tc.cause, tc.answered); got != tc.want {
			t.Errorf("HangupCause(%q, answered %v) = %q, want %q", tc.cause, tc.answered, got, tc.want)
		}
	}
}

func TestMachineVerdict(t *testing.T) {
	for _, tc := range []struct {
		event, result string
		want          carrier.AnsweredBy
	}{
		{telnyx.EventMachineDetectionEnded, "human", carrier.AnsweredHuman},
		{telnyx.EventMachineDetectionEnded, "machine", carrier.AnsweredMachine},
		{telnyx.EventMachineDetectionEnded, "not_sure", carrier.AnsweredUnknown},
		{telnyx.EventMachinePremiumDetectionEnded, "human_residence", carrier.AnsweredHuman},
		{telnyx.EventMachinePremiumDetectionEnded, "human_business", carrier.AnsweredHuman},
		{telnyx.EventMachinePremiumDetectionEnded, "machine", carrier.AnsweredMachine},
		{telnyx.EventMachinePremiumDetectionEnded, "silence", carrier.AnsweredSilence},
		{telnyx.EventMachinePremiumDetectionEnded, "fax_detected", carrier.AnsweredFax},
		{telnyx.EventMachineGreetingEnded, "beep_detected", carrier.AnsweredBeep},
		{telnyx.EventMachineGreetingEnded, "ended", carrier.AnsweredOther},
		{telnyx.EventMachinePremiumGreetingEnded, "beep_detected", carrier.AnsweredBeep},
		{telnyx.EventMachineDetectionEnded, "beep_detected", ""},
		{"call.answered", "human", ""},
		{telnyx.EventMachineDetectionEnded, "", ""},
	} {
		if got := telnyx.MachineVerdict(tc.event, tc.result); got != tc.want {
			t.Errorf("MachineVerdict(%q, %q) = %q, want %q", tc.event, tc.result, got, tc.want)
		}
	}
}

func TestClientStateRefusesHostileInput(t *testing.T) {
	good := telnyx.ClientState{CallID: "c_0123456789abcdef0123", Machine: carrier.MachineHangup}
	enc, err := telnyx.EncodeClientState(good)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := telnyx.DecodeClientState(enc); err != nil || back != good {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for name, in := range map[string]string{
		"empty":          "",
		"not base64":     "!!!",
		"not JSON":       b64("hello"),
		"no call id":     b64(`{"machine":"hangup"}`),
		"unknown field":  b64(`{"call":"c_1","admin":true}`),
		"bad policy":     b64(`{"call":"c_1","machine":"sing"}`),
		"control chars":  b64(`{"call":"c_1\n"}`),
		"long call id":   b64(`{"call":"` + strings.Repeat("a", 200) + `"}`),
		"trailing data":  b64(`{"call":"c_1"}{"call":"c_2"}`),
		"too long":       strings.Repeat("A", 5000),
		"not an object":  b64(`["c_1"]`),
		"wrong type":     b64(`{"call":1}`),
		"another vendor": b64(`{"call_id":"c_1"}`),
	} {
		if s, err := telnyx.DecodeClientState(in); err == nil {
			t.Errorf("%s: accepted as %+v", name, s)
		}
	}
	if _, err := telnyx.EncodeClientState(telnyx.ClientState{}); err == nil {
		t.Error("encoded a state without a call id")
	}
}

// TestCallReadsTheLedger: a call over per its webhooks is reported from the ledger
// without asking Telnyx; a live one asks Telnyx whether it is alive.
func TestCallReadsTheLedger(t *testing.T) {
	r := quietRig(t, telnyxsim.Options{})
	ctx := ctxOf(t)
	placed := dialAnswered(ctx, t, r)
	before := len(r.fake.Requests())
	if c, err := r.control.Call(ctx, placed.Ref); err != nil || c.Status != carrier.StatusInProgress {
		t.Errorf("live call: %+v, %v", c, err)
	}
	if n := len(r.fake.Requests()) - before; n != 1 {
		t.Errorf("a live call took %d requests, want 1 (liveness)", n)
	}
	r.fake.Hangup(placed.Ref, "callee")
	if err := r.env.WaitFor(ctx, placed.Ref, carrier.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	before = len(r.fake.Requests())
	if c, err := r.control.Call(ctx, placed.Ref); err != nil || c.Status != carrier.StatusCompleted {
		t.Errorf("ended call: %+v, %v", c, err)
	}
	if n := len(r.fake.Requests()) - before; n != 0 {
		t.Errorf("an ended call took %d requests, want none", n)
	}
	if _, err := r.control.Call(ctx, "v3:nobody-knows"); !errors.Is(err, carrier.ErrNotFound) {
		t.Errorf("an unknown call: %v, want not found", err)
	}
}

// TestCallEndedBeforeItsHangupEvent: Telnyx says the call is over (is_alive false, or 404:
// which one is unconfirmed) before its call.hangup reached the ledger; an answered call
// is then completed, with the duration Telnyx gives.
func TestCallEndedBeforeItsHangupEvent(t *testing.T) {
	for _, notFound := range []bool{false, true} {
		r := quietRig(t, telnyxsim.Options{EndedCallsNotFound: notFound, WebhookRetries: -1})
		ctx := ctxOf(t)
		placed := dialAnswered(ctx, t, r)
		r.ledger.Fail(errors.New("the store is down")) // the hangup event cannot be recorded
		r.fake.Hangup(placed.Ref, "callee")
		if err := r.env.WaitFor(ctx, placed.Ref, carrier.StatusCompleted); err != nil {
			t.Fatal(err)
		}
		r.ledger.Fail(nil)
		c, err := r.control.Call(ctx, placed.Ref)
		if err != nil || c.Status != carrier.StatusCompleted {
			t.Errorf("404 for ended calls %v: %+v, %v; want completed", notFound, c, err)
		}
	}
}

// lateMemory misses a call's end on its first read of the ledger: the call ends while
// Call asks about it.
type lateMemory struct {
	carrier.Memory
	reads int
}

func (m *lateMemory) Progress(ctx context.Context, ref string) (carrier.Progress, bool, error) {
	m.reads++
	if m.reads == 1 {
		return carrier.Progress{Ref: ref, Status: carrier.StatusInProgress}, true, nil
	}
	return m.Memory.Progress(ctx, ref)
}

// TestCallEndedWhileAskedKeepsItsVerdict: a call that ends while Call asks Telnyx about
// it is reported with what its webhooks recorded before that end (here a machine's
// verdict), not only with what Telnyx's REST says.
func TestCallEndedWhileAskedKeepsItsVerdict(t *testing.T) {
	r := quietRig(t, telnyxsim.Options{})
	ctx := ctxOf(t)
	placed := dialAnswered(ctx, t, r)
	if err := r.ledger.Progressed(ctx, carrier.Progress{Ref: placed.Ref, AnsweredBy: carrier.AnsweredMachine}, time.Now()); err != nil {
		t.Fatal(err)
	}
	r.fake.Hangup(placed.Ref, "callee")
	if err := r.env.WaitFor(ctx, placed.Ref, carrier.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	late, err := telnyx.NewControl(telnyx.RESTOptions{BaseURL: r.control.REST().BaseURL(), APIKey: r.fake.APIKey()}, &lateMemory{Memory: r.ledger})
	if err != nil {
		t.Fatal(err)
	}
	c, err := late.Call(ctx, placed.Ref)
	if err != nil || c.Status != carrier.StatusCompleted || !c.AnsweredBy.Machine() {
		t.Errorf("%+v, %v; want completed, answered by a machine", c, err)
	}
}

// dialAnswered dials the person through r and waits for the answer Handset hears.
func dialAnswered(ctx context.Context, t *testing.T, r *rig) carrier.Call {
	t.Helper()
	placed, err := r.control.Dial(ctx, carrier.Dial{CallID: voice.NewCallID(), To: person, From: ours, PublicURL: r.env.PublicURL})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.env.WaitFor(ctx, placed.Ref, carrier.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	return placed
}
