package twiliocaller

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

func TestPostWebhookSignatureOverrides(t *testing.T) {
	f := newFakeHandset(t)
	ctx := testCtx(t)
	o := f.options()
	o.CallSid = NewSid("CA")
	res, err := PostWebhook(ctx, o, nil)
	if err != nil || res.Status != http.StatusOK || !strings.Contains(string(res.Body), "<Stream") || res.Params.Get("CallSid") != o.CallSid {
		t.Fatalf("signed webhook: %+v, %v", res, err)
	}
	if _, err := ParseTwiML(res.Body); err != nil {
		t.Fatalf("TwiML answer: %v", err)
	}
	for name, sig := range map[string]string{"forged": "0/KCTR6DLpKmkAf8muzZqo1nDgQ=", "missing": ""} {
		res, err := PostWebhook(ctx, o, &sig)
		if err != nil || res.Status != http.StatusForbidden {
			t.Errorf("%s signature: status %d, %v; want 403", name, res.Status, err)
		}
	}
}

func TestDialStreamProbesTokenAndSignatureChecks(t *testing.T) {
	f := newFakeHandset(t)
	ctx := testCtx(t)
	local := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/twilio/stream"
	probe := func(mutate func(*StreamProbe)) ProbeResult {
		t.Helper()
		p := StreamProbe{URL: local, SignURL: publicStream, AuthToken: testAuthToken, HTTPClient: f.srv.Client(), Wait: 300 * time.Millisecond}
		mutate(&p)
		res, err := DialStream(ctx, p)
		if err != nil {
			t.Fatalf("DialStream: %v", err)
		}
		return res
	}
	forged := "AAAAAAAAAAAAAAAAAAAAAAAAAAA="
	if res := probe(func(p *StreamProbe) { p.Signature = &forged }); res.Status != http.StatusForbidden || res.Accepted() {
		t.Errorf("forged signature: %+v", res)
	}
	if res := probe(func(p *StreamProbe) { p.Signature = new("") }); res.Status != http.StatusForbidden {
		t.Errorf("missing signature: %+v", res)
	}
	if res := probe(func(p *StreamProbe) { p.SignURL = local }); res.Status != http.StatusForbidden {
		t.Errorf("signed over the dialled URL instead of the TwiML one: %+v", res)
	}
	if res := probe(func(p *StreamProbe) {}); !res.Closed || res.Code != websocket.StatusPolicyViolation || res.Reason != "bad token" {
		t.Errorf("no token: %+v", res)
	}

	// A token already used by a live call is refused when replayed.
	c, _ := dial(t, f, nil)
	used := c.TwiML().Parameters
	if res := probe(func(p *StreamProbe) { p.Parameters = used; p.CallSid = c.CallSid() }); !res.Closed || res.Code != websocket.StatusPolicyViolation {
		t.Errorf("replayed token: %+v", res)
	}

	// A fresh token from a signed webhook is accepted; the probe then hangs up itself.
	o := f.options()
	o.CallSid = NewSid("CA")
	hook, err := PostWebhook(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	tw, err := ParseTwiML(hook.Body)
	if err != nil {
		t.Fatal(err)
	}
	res := probe(func(p *StreamProbe) { p.Parameters = tw.Parameters; p.CallSid = o.CallSid })
	if !res.Accepted() || res.Status != http.StatusSwitchingProtocols {
		t.Fatalf("fresh token: %+v", res)
	}
	fs := f.nextStream(t) // dial took the live call's stream already
	if fs.start.Start.CallSid != o.CallSid {
		t.Fatalf("accepted stream is for %s, want %s", fs.start.Start.CallSid, o.CallSid)
	}
	msgs := fs.drain()
	if len(msgs) != 1 || msgs[0].Event != "stop" || websocket.CloseStatus(fs.closeErr) != websocket.StatusNormalClosure {
		t.Fatalf("probe ended with %v and %v, want stop then a normal close", msgs, fs.closeErr)
	}
}
