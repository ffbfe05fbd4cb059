package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/testpeer"
)

// privacyRig is serve with caller-hash memory on Hermes (its session key is a header the
// fake records) and a fake of kit's vendor for the calls and callbacks.
func privacyRig(t *testing.T, kit simkit.Kit, extra ...string) (*outRig, *fakehermes.Server) {
	t.Helper()
	h := fakehermes.New(fakehermes.Options{Key: "hermes-key-0123456789"})
	hSrv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); hSrv.Close() })
	o := startServeAPI(t, kit, []string{"what do you remember about me"}, append([]string{
		"HANDSET_AGENT=hermes", "HANDSET_AGENT_URL=" + hSrv.URL + "/v1", "HANDSET_AGENT_KEY=hermes-key-0123456789",
		"HANDSET_SESSION_KEY_FROM=caller_hash",
	}, extra...)...)
	return o, h
}

// oneTurn places a call as opts say, says one line, waits for the reply and hangs up; it
// returns the call's id.
func oneTurn(ctx context.Context, t *testing.T, o *outRig, opts simkit.CallOptions) string {
	t.Helper()
	c := o.call(ctx, opts)
	waitMark(ctx, t, c, "t0-end")
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 81)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, markEnd(1))
	_ = c.Hangup()
	<-c.Done()
	return handsetCallID(t, o.rig, c.Ref())
}

// runStarts are the turns Hermes was asked for, in order.
func runStarts(t *testing.T, h *fakehermes.Server, raw ...string) []fakehermes.Request {
	t.Helper()
	var out []fakehermes.Request
	for _, rq := range h.Requests() {
		for _, n := range raw {
			if strings.Contains(rq.Body, n) || strings.Contains(fmt.Sprint(rq.Header), n) {
				t.Errorf("%s reached Hermes: %s %s", n, rq.Path, rq.Body)
			}
		}
		if rq.Method == "POST" && strings.HasSuffix(rq.Path, "/runs") {
			out = append(out, rq)
		}
	}
	return out
}

// Two callers who withheld their numbers never share a conversation: each call is its own
// session, the journal says the caller was withheld, the runtime is told, and a callback is
// refused without a number; two calls from one real number share their session.
func TestWithheldCallersShareNoMemory(t *testing.T) {
	forEachCarrier(t, testWithheldCallersShareNoMemory)
}

func testWithheldCallersShareNoMemory(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "several calls in real time")
	o, h := privacyRig(t, kit)
	ctx := context.Background()
	anon1 := oneTurn(ctx, t, o, simkit.CallOptions{Withheld: true})
	anon2 := oneTurn(ctx, t, o, simkit.CallOptions{Withheld: true})
	oneTurn(ctx, t, o, simkit.CallOptions{From: alice})
	oneTurn(ctx, t, o, simkit.CallOptions{From: alice})

	starts := runStarts(t, h, "5550102000", "anonymous")
	if len(starts) != 4 {
		t.Fatalf("Hermes runs %d, want 4", len(starts))
	}
	a1, a2, al1, al2 := starts[0], starts[1], starts[2], starts[3]
	if a1.SessionKey != "" || a2.SessionKey != "" || a1.SessionID == a2.SessionID {
		t.Errorf("anonymous callers: keys %q %q, session ids %q %q: want no key and a session each",
			a1.SessionKey, a2.SessionKey, a1.SessionID, a2.SessionID)
	}
	if al1.SessionKey == "" || al1.SessionKey != al2.SessionKey {
		t.Errorf("the same number called twice: keys %q %q, want one key", al1.SessionKey, al2.SessionKey)
	}
	if !strings.Contains(a1.Body, "withheld their number") || strings.Contains(al1.Body, "Note from Handset") {
		t.Errorf("the runtime's note: anonymous %s; alice %s", a1.Body, al1.Body)
	}
	for _, id := range []string{anon1, anon2} {
		start := eventsOf(journalOf(t, o.rig, id), obs.CallStart)
		if len(start) != 1 || start[0].Caller != "withheld" || start[0].CallerHash != "" {
			t.Errorf("call.start of %s: %+v", id, start)
		}
		var e map[string]string
		code := o.api("POST", "/api/deliver", map[string]any{"call_id": id, "message": "Your order shipped."}, &e)
		if code != 422 || !strings.Contains(e["error"], "withheld") || strings.Contains(e["error"], "anonymous") {
			t.Errorf("deliver to withheld caller %s: %d %v", id, code, e)
		}
	}
	if n := len(o.vendor.Calls()); n != 0 {
		t.Errorf("%s was asked to place %d calls", kit.Name(), n)
	}
	if logs := o.logs.String(); strings.Contains(logs, "5550102000") {
		t.Error("a phone number reached the logs")
	}
}

// With HANDSET_CALLER_MEMORY_ATTESTATION=A a caller showing alice's number with weaker
// attestation (a possible spoofer) gets a fresh session and the runtime hears the number is
// unverified; alice's own attested calls keep her memory, and the API names her by hash.
func TestUnverifiedCallerGetsAFreshSession(t *testing.T) {
	forEachCarrier(t, testUnverifiedCallerGetsAFreshSession)
}

func testUnverifiedCallerGetsAFreshSession(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "several calls in real time")
	o, h := privacyRig(t, kit, "HANDSET_CALLER_MEMORY_ATTESTATION=A")
	ctx := context.Background()
	passedA := simkit.CallOptions{From: alice, Attestation: "A"}
	first := oneTurn(ctx, t, o, passedA)
	spoof := oneTurn(ctx, t, o, simkit.CallOptions{From: alice, Attestation: "B"})
	oneTurn(ctx, t, o, passedA)

	starts := runStarts(t, h, "5550102000")
	if len(starts) != 3 {
		t.Fatalf("Hermes runs %d, want 3", len(starts))
	}
	if key := starts[0].SessionKey; key == "" || starts[2].SessionKey != key || starts[1].SessionKey != "" {
		t.Errorf("session keys %q %q %q: want alice's twice and none for the unverified call",
			starts[0].SessionKey, starts[1].SessionKey, starts[2].SessionKey)
	}
	if !strings.Contains(starts[1].Body, "unverified") || strings.Contains(starts[0].Body, "Note from Handset") {
		t.Errorf("the runtime's note: unverified %s; verified %s", starts[1].Body, starts[0].Body)
	}
	for id, want := range map[string][2]string{first: {"A", ""}, spoof: {"B", "unverified"}} {
		start := eventsOf(journalOf(t, o.rig, id), obs.CallStart)
		if len(start) != 1 || start[0].Attestation != want[0] || start[0].Caller != want[1] || (want[1] == "") == (start[0].CallerHash == "") {
			t.Errorf("call.start of %s: %+v, want attestation %s caller %q", id, start, want[0], want[1])
		}
	}

	// The unverified call is not called back; alice's session holds only her own two calls.
	var e map[string]string
	if code := o.api("POST", "/api/deliver", map[string]any{"call_id": spoof, "message": "Your order shipped."}, &e); code != 422 ||
		!strings.Contains(e["error"], "HANDSET_CALLER_MEMORY_ATTESTATION") || strings.Contains(e["error"], "5550102000") {
		t.Errorf("deliver to the unverified call: %d %v", code, e)
	}
	var ss struct {
		Count int `json:"calls_count"`
	}
	if code := o.api("GET", "/api/sessions/"+starts[0].SessionKey, nil, &ss); code != 200 || ss.Count != 2 {
		t.Errorf("alice's session: %d %+v, want her two attested calls", code, ss)
	}

	// A callback to alice: every answer an agent tool reads names her by hash only.
	var raw json.RawMessage
	if code := o.api("POST", "/api/deliver?wait=60s", map[string]any{"session_key": starts[0].SessionKey, "message": "Your order shipped."}, &raw); code != 200 {
		t.Fatalf("deliver to alice: %d %s\n%s", code, raw, o.logs.String())
	}
	var job apiJob
	_ = json.Unmarshal(raw, &job)
	if calls := o.vendor.Calls(); len(calls) != 1 || calls[0].To != alice {
		t.Fatalf("%s calls %+v", kit.Name(), calls)
	}
	for _, path := range []string{"/api/jobs/" + itoa(job.ID), "/api/jobs", "/api/sessions/" + starts[0].SessionKey, "/api/calls"} {
		o.api("GET", path, nil, &raw)
		if strings.Contains(string(raw), "5550102000") {
			t.Errorf("GET %s names alice by number: %s", path, raw)
		}
	}
	if strings.Contains(string(raw), "5550102000") || !strings.Contains(string(raw), ourNumber) {
		t.Errorf("calls list: %s", raw)
	}
	o.api("GET", "/api/jobs/"+itoa(job.ID)+"?view=admin", nil, &raw)
	if !strings.Contains(string(raw), alice) {
		t.Errorf("the admin view has no number: %s", raw)
	}
}
