package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier/telnyx/telnyxsim"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

// Whole calls through the fake Telnyx that only Telnyx has: an answer by REST command
// that can fail and be retried, and a call that lives on after its stream closes.

// startTelnyx is startServeWith Telnyx's kit, with the fake behind it. Like the tests run
// per carrier, these skip under -short and when HANDSET_TEST_CARRIER names another.
func startTelnyx(t *testing.T, transcripts []string, extra ...string) (*rig, *telnyxsim.Server) {
	t.Helper()
	if only := os.Getenv(testCarrierEnv); testing.Short() || (only != "" && only != telnyxsim.Kit.Name()) {
		t.Skip("a Telnyx call: runs without -short, for every carrier or HANDSET_TEST_CARRIER=telnyx")
	}
	r := startServeWith(t, telnyxsim.Kit, transcripts, extra...)
	fake, ok := telnyxsim.FakeOf(r.vendor)
	if !ok {
		t.Fatal("the Telnyx kit's vendor has no fake behind it")
	}
	return r, fake
}

// commandsTo are the requests for action on any call, oldest first.
func commandsTo(fake *telnyxsim.Server, action string) []telnyxsim.Request {
	var out []telnyxsim.Request
	for _, q := range fake.Requests() {
		if q.Method == http.MethodPost && strings.HasSuffix(q.Path, "/actions/"+action) {
			out = append(out, q)
		}
	}
	return out
}

// commandID is a command request's command_id.
func commandID(t *testing.T, q telnyxsim.Request) string {
	t.Helper()
	var b struct {
		CommandID string `json:"command_id"`
	}
	if err := json.Unmarshal(q.Body, &b); err != nil {
		t.Fatalf("%s %s: %v", q.Method, q.Path, err)
	}
	return b.CommandID
}

// TestTelnyxAnswerFailureIsRetriedWithTheSameCommandID: Telnyx refuses Handset's first
// answer command with a 5xx; Handset answers the webhook with a 5xx so Telnyx sends the
// event again, and the retry's answer carries the same command_id. The caller hears the
// greeting of one call, answered once.
func TestTelnyxAnswerFailureIsRetriedWithTheSameCommandID(t *testing.T) {
	r, fake := startTelnyx(t, []string{"hello"})
	fake.AddFault(telnyxsim.Fault{Method: http.MethodPost, Path: "/actions/answer", Status: http.StatusInternalServerError, Times: 1})
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})
	waitMark(ctx, t, c, "t0-end")
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}
	<-c.Done()

	answers := commandsTo(fake, "answer")
	if len(answers) != 2 || answers[0].Status != http.StatusInternalServerError || answers[1].Status != http.StatusOK {
		t.Fatalf("answer commands %+v, want a refused one then an accepted one", answers)
	}
	if first, second := commandID(t, answers[0]), commandID(t, answers[1]); first == "" || first != second {
		t.Errorf("the retry's command_id %q differs from the first's %q", second, first)
	}
	var initiated []telnyxsim.Webhook
	for _, w := range fake.Webhooks() {
		if w.EventType == "call.initiated" {
			initiated = append(initiated, w)
		}
	}
	if len(initiated) != 2 || initiated[0].Status < 500 || initiated[1].Status != http.StatusOK ||
		initiated[0].ID != initiated[1].ID || initiated[1].Attempt != initiated[0].Attempt+1 {
		t.Errorf("call.initiated deliveries %+v, want a 5xx then a 200 for the same event", initiated)
	}
	calls := fake.Calls()
	if len(calls) != 1 || strings.Count(strings.Join(calls[0].Commands, " "), "answer") != 1 {
		t.Errorf("calls %+v, want one answered once", calls)
	}
	if events := r.journal(); events[len(events)-1].Reason != "caller_hangup" {
		t.Errorf("the call ended %q, want caller_hangup", events[len(events)-1].Reason)
	}
}

// TestTelnyxHandsetEndingACallHangsItUp: closing a Telnyx media stream does not end the
// call (it would stay up in silence), so when Handset ends a call it sends the hangup
// command; and when the caller hangs up while that command is in flight (Telnyx answers
// 90018), the call still ends cleanly, with no error logged or journaled.
func TestTelnyxHandsetEndingACallHangsItUp(t *testing.T) {
	for _, race := range []bool{false, true} {
		name := map[bool]string{false: "alone", true: "racing the caller"}[race]
		t.Run(name, func(t *testing.T) {
			r, fake := startTelnyx(t, nil, "HANDSET_SILENCE_REPROMPT=0", "HANDSET_SILENCE_HANGUP=2s")
			fake.SetHangupRace(race)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c := r.call(ctx, simkit.CallOptions{})
			waitMark(ctx, t, c, "t0-end")
			select { // the caller says nothing: Handset hangs up for silence
			case <-c.Done():
			case <-ctx.Done():
				t.Fatal("Handset never ended the silent call")
			}
			events := r.journal()
			if end := events[len(events)-1]; end.Reason != "silence" {
				t.Errorf("the call ended %q, want silence", end.Reason)
			}
			for _, e := range events {
				if strings.HasSuffix(e.Type, ".error") {
					t.Errorf("journal error: %+v", e)
				}
			}
			ccid := fake.Calls()[0].CallControlID
			ended, err := fake.WaitCall(ctx, ccid, func(c telnyxsim.Call) bool { return !c.Alive })
			if err != nil {
				t.Fatalf("the call is still up at Telnyx after Handset ended it: %v", err)
			}
			// Handset may hang up twice (its own end, and the stream it closed reported failed):
			// the command is idempotent, so count what Telnyx accepted.
			accepted, lost := 0, 0
			for _, q := range commandsTo(fake, "hangup") {
				switch {
				case q.Status == http.StatusOK:
					accepted++
				case q.Code == telnyxsim.CodeCallEnded:
					lost++
				default:
					t.Errorf("hangup answered %d %s", q.Status, q.Code)
				}
			}
			wantSource := "callee" // Handset, which answered the call, hung up
			if race {
				wantSource = "caller"
				if accepted != 0 || lost == 0 {
					t.Errorf("%d hangups accepted, %d lost the race; want every one lost", accepted, lost)
				}
			} else if accepted != 1 {
				t.Errorf("%d hangups accepted, want 1", accepted)
			}
			if ended.HangupSource != wantSource {
				t.Errorf("hangup_source %q, want %s", ended.HangupSource, wantSource)
			}
			if logs := r.logs.String(); strings.Contains(logs, "level=ERROR") || strings.Contains(logs, "could not hang up") {
				t.Errorf("the hangup left an error or warning in the log:\n%s", logs)
			}
		})
	}
}
