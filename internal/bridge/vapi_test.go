package bridge_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/fakevapi"
)

// Vapi's custom LLM (internal/sim/fakevapi) in front of the bridge, in front of the Hermes
// adapter and the fake Hermes: Vapi's requests as it documents them, with its call object.

const (
	vapiCaller = "+15551234567" // the customer's number
	vapiLine   = "+15557654321" // the Vapi phone number the call came in on
	vapiPrompt = "You are the front desk of the Grand Hotel."
)

// vapiCall is a call whose assistant's custom LLM is the rig's bridge, with the bridge's
// token as its credential. Options given win.
func vapiCall(r *rig, opts fakevapi.Options) *fakevapi.Call {
	opts.URL = r.url
	if opts.APIKey == "" {
		opts.APIKey = token
	}
	if opts.SystemPrompt == "" {
		opts.SystemPrompt = vapiPrompt
	}
	if opts.PhoneNumber == nil {
		opts.PhoneNumber = &fakevapi.PhoneNumber{ID: "5d3f1b7e-0d3c-4c8e-9a53-0b0c2b7f4a11", Number: vapiLine, Provider: "twilio"}
	}
	return fakevapi.New(opts)
}

func vapiCustomer(number string) fakevapi.CallInfo {
	return fakevapi.CallInfo{Customer: &fakevapi.Customer{Number: number}}
}

// vapiRuns are the runs the fake Hermes was asked to start, in order.
func vapiRuns(r *rig) []fakehermes.Request {
	var runs []fakehermes.Request
	for _, q := range r.hermes.Requests() {
		if q.Method == http.MethodPost && q.Path == "/v1/runs" {
			runs = append(runs, q)
		}
	}
	return runs
}

// vapiSession is the Hermes session the bridge files a Vapi call under.
func vapiSession(call *fakevapi.Call) string { return "handset-bridge-" + call.ID() }

// A Vapi turn streams the runtime's reply back in pieces, and the runtime is given the
// assistant's prompt after its own, the first message Vapi spoke, and the caller's words.
func TestVapiRepliesStreamThrough(t *testing.T) {
	r := newRig(t, fakehermes.Options{SlowEvery: 20 * time.Millisecond}, hermes.TransportRuns, nil)
	call := vapiCall(r, fakevapi.Options{FirstMessage: "Grand Hotel, how can I help?", Call: vapiCustomer(vapiCaller)})
	const said = "When does the pool open SLOW"
	reply, err := call.Say(context.Background(), said)
	if err != nil {
		t.Fatal(err)
	}
	want := fakehermes.ReplyText([]fakehermes.Message{{Role: "user", Content: said}})
	if reply.Text != want || len(reply.Deltas) < 2 || !reply.Done || reply.FinishReason != "stop" {
		t.Errorf("reply %+v, want %q in pieces, finished and [DONE]", reply, want)
	}
	runs := vapiRuns(r)
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	wantMsgs := []fakehermes.Message{{Role: "system", Content: "Speak briefly.\n\n" + vapiPrompt},
		{Role: "assistant", Content: "Grand Hotel, how can I help?"}, {Role: "user", Content: said}}
	if !slices.Equal(runs[0].Messages, wantMsgs) {
		t.Errorf("the runtime was given %+v, want %+v", runs[0].Messages, wantMsgs)
	}
}

// The runtime files every turn of a Vapi call under one session derived from the call's
// id, and another call under another; each turn carries the conversation so far.
func TestVapiCallIsOneSessionAcrossItsTurns(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	first := vapiCall(r, fakevapi.Options{Call: vapiCustomer(vapiCaller)})
	second := vapiCall(r, fakevapi.Options{Call: vapiCustomer("+15550001111")})
	if first.ID() == second.ID() {
		t.Fatal("two calls with one id")
	}
	ctx := context.Background()
	for _, said := range []string{"Hello", "Do you have a room tonight?", "For two, please"} {
		if _, err := first.Say(ctx, said); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := second.Say(ctx, "Hi there"); err != nil {
		t.Fatal(err)
	}
	runs := vapiRuns(r)
	if len(runs) != 4 {
		t.Fatalf("%d runs, want 4", len(runs))
	}
	for i, q := range runs {
		want := vapiSession(first)
		if i == 3 {
			want = vapiSession(second)
		}
		if q.SessionID != want || !strings.Contains(q.Body, `"session_id":"`+want+`"`) {
			t.Errorf("run %d: session %q (body %s), want %q", i+1, q.SessionID, q.Body, want)
		}
	}
	// the third turn's run holds the conversation as Vapi sent it: two turns and the new words
	var roles []string
	for _, m := range runs[2].Messages[1:] {
		roles = append(roles, m.Role)
	}
	if want := []string{"user", "assistant", "user", "assistant", "user"}; !slices.Equal(roles, want) ||
		runs[2].Messages[len(runs[2].Messages)-1].Content != "For two, please" {
		t.Errorf("the third run was given %+v", runs[2].Messages)
	}
}

// The caller hash comes from call.customer.number, the same on every turn and every call
// from that number; no request the runtime received holds the number, or the line's.
func TestVapiCallerHashFromTheCustomersNumber(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	ctx := context.Background()
	call := vapiCall(r, fakevapi.Options{Call: vapiCustomer(vapiCaller)})
	for _, said := range []string{"Hello", "Is breakfast included?"} {
		if _, err := call.Say(ctx, said); err != nil {
			t.Fatal(err)
		}
	}
	again := vapiCall(r, fakevapi.Options{Call: vapiCustomer(vapiCaller)})
	if _, err := again.Say(ctx, "It's me again"); err != nil {
		t.Fatal(err)
	}
	key := "handset:" + session.CallerHash(secret, vapiCaller)
	runs := vapiRuns(r)
	if len(runs) != 3 {
		t.Fatalf("%d runs", len(runs))
	}
	for i, q := range runs {
		if q.SessionKey != key {
			t.Errorf("run %d: session key %q, want %q", i+1, q.SessionKey, key)
		}
	}
	if runs[2].SessionID != vapiSession(again) || runs[2].SessionID == runs[0].SessionID {
		t.Errorf("the second call's session %q, the first's %q: want one each", runs[2].SessionID, runs[0].SessionID)
	}
	reqs := r.hermes.Requests()
	if len(reqs) < 6 { // each turn starts a run and reads its events
		t.Fatalf("the runtime saw %d requests", len(reqs))
	}
	for _, q := range reqs {
		seen := []string{q.Path, q.Body, q.SessionID, q.SessionKey}
		for name, values := range q.Header {
			seen = append(seen, name+": "+strings.Join(values, ", "))
		}
		for _, m := range append(q.Messages, q.Prompt...) {
			seen = append(seen, m.Content)
		}
		all := strings.Join(seen, "\n")
		for _, raw := range []string{"5551234567", "555-123-4567", "555) 123", "5557654321"} {
			if strings.Contains(all, raw) {
				t.Errorf("%s %s: the runtime saw a raw number (%s):\n%s", q.Method, q.Path, raw, all)
			}
		}
	}
}

// A call without the customer's number (a web call, a customer with none, a withheld
// caller ID) gives no caller hash: the call has its session, and no memory is keyed.
// What Vapi puts in customer.number for a withheld caller ID is not documented, so both
// the word carriers use and Twilio's placeholder number are tried.
func TestVapiWithoutTheCustomersNumberThereIsNoCallerHash(t *testing.T) {
	for _, tc := range []struct {
		name     string
		call     fakevapi.CallInfo
		withheld bool // the runtime is told the caller withheld their number
	}{
		{name: "web call", call: fakevapi.CallInfo{Type: fakevapi.TypeWeb}},
		{name: "customer without a number", call: fakevapi.CallInfo{Customer: &fakevapi.Customer{Name: "Ada"}}},
		{name: "anonymous", call: vapiCustomer("anonymous"), withheld: true},
		{name: "placeholder number", call: vapiCustomer("+266696687"), withheld: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
			call := vapiCall(r, fakevapi.Options{Call: tc.call})
			for _, said := range []string{"Hello", "What time is checkout?"} {
				if _, err := call.Say(context.Background(), said); err != nil {
					t.Fatal(err)
				}
			}
			runs := vapiRuns(r)
			if len(runs) != 2 {
				t.Fatalf("%d runs", len(runs))
			}
			for i, q := range runs {
				if q.SessionKey != "" || q.SessionID != vapiSession(call) {
					t.Errorf("run %d: session key %q, session %q; want no key and %q", i+1, q.SessionKey, q.SessionID, vapiSession(call))
				}
				if told := strings.Contains(q.Messages[0].Content, "withheld their number"); told != tc.withheld {
					t.Errorf("run %d: instructions %q, want the withheld note %v", i+1, q.Messages[0].Content, tc.withheld)
				}
			}
		})
	}
}

// The caller barging in aborts Vapi's request, which stops the Hermes run within a
// second; the next turn gives the runtime the reply as far as the caller heard it.
func TestVapiBargeInStopsTheRun(t *testing.T) {
	r := newRig(t, fakehermes.Options{SlowEvery: 150 * time.Millisecond}, hermes.TransportRuns, nil)
	call := vapiCall(r, fakevapi.Options{Call: vapiCustomer(vapiCaller)})
	ctx := context.Background()
	reply, err := call.BargeIn(ctx, "Tell me all about the spa SLOW", len("I heard you "))
	if err != nil {
		t.Fatal(err)
	}
	if !reply.Interrupted || reply.Text != "I heard you" || reply.Done {
		t.Fatalf("the caller did not barge in after three words: %+v", reply)
	}
	runs := r.hermes.Runs()
	if len(runs) != 1 {
		t.Fatalf("runs %q", runs)
	}
	for !r.hermes.Stopped(runs[0]) && time.Since(reply.AbortedAt) < 3*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	if !r.hermes.Stopped(runs[0]) {
		t.Fatalf("the run was not stopped (status %q)", r.hermes.Status(runs[0]))
	}
	if d := time.Since(reply.AbortedAt); d > time.Second {
		t.Errorf("the run stopped %v after the barge-in, want under a second", d)
	}
	next, err := call.Say(ctx, "And the gym?")
	if err != nil || !next.Done {
		t.Fatalf("the next turn: %+v, %v", next, err)
	}
	started := vapiRuns(r)
	if len(started) != 2 {
		t.Fatalf("%d runs", len(started))
	}
	msgs := started[1].Messages
	if n := len(msgs); n < 2 || msgs[n-2] != (fakehermes.Message{Role: "assistant", Content: "I heard you"}) ||
		msgs[n-1] != (fakehermes.Message{Role: "user", Content: "And the gym?"}) {
		t.Errorf("the next run was given %+v, want what was heard, then the new words", msgs)
	}
}

// A credential other than the bridge's token is refused with 401 before the runtime hears
// of the turn.
func TestVapiWithTheWrongCredentialGets401(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	for _, key := range []string{"", "wrong", token + "x"} {
		call := fakevapi.New(fakevapi.Options{URL: r.url, APIKey: key, Call: vapiCustomer(vapiCaller)})
		reply, err := call.Say(context.Background(), "Hello")
		var e *fakevapi.Error
		if !errors.As(err, &e) || e.Status != http.StatusUnauthorized || e.Code != "invalid_api_key" || reply.Text != "" {
			t.Errorf("credential %q: %+v, %v; want 401 invalid_api_key", key, reply, err)
		}
	}
	if n := len(r.hermes.Requests()); n != 0 {
		t.Errorf("the runtime saw %d requests", n)
	}
	// and the right one is let through
	if _, err := vapiCall(r, fakevapi.Options{Call: vapiCustomer(vapiCaller)}).Say(context.Background(), "Hello"); err != nil {
		t.Errorf("the bridge's token: %v", err)
	}
}

// Vapi sends its assistant's metadata with every call to the assistant: a session or a
// caller number in it must not put every caller into one session, or one memory.
func TestVapiAssistantMetadataNamesNoSessionAndNoCaller(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	shared := map[string]any{"session": "front-desk", "caller_number": "+15557654321"}
	calls := []*fakevapi.Call{
		vapiCall(r, fakevapi.Options{Metadata: shared, Call: fakevapi.CallInfo{Type: fakevapi.TypeWeb}}),
		vapiCall(r, fakevapi.Options{Metadata: shared, Call: fakevapi.CallInfo{Type: fakevapi.TypeWeb}}),
	}
	for _, c := range calls {
		if _, err := c.Say(context.Background(), "Hello"); err != nil {
			t.Fatal(err)
		}
	}
	runs := vapiRuns(r)
	if len(runs) != 2 {
		t.Fatalf("%d runs", len(runs))
	}
	for i, q := range runs {
		if q.SessionID != vapiSession(calls[i]) || q.SessionKey != "" {
			t.Errorf("call %d: session %q, key %q; want %q and no key", i+1, q.SessionID, q.SessionKey, vapiSession(calls[i]))
		}
	}
}
