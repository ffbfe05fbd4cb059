package sip

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
)

// authTrunk is a trunk whose allow-list names allowSpec and that takes callers from
// anywhere else with the digest credentials pbx / s3cret.
func authTrunk(t *testing.T, allowSpec string, a *answering) *Trunk {
	t.Helper()
	return startTrunkWith(t, allowSpec, a, func(o *Options) { o.InboundUsername, o.InboundPassword = "pbx", "s3cret" })
}

func statuses(rs []sipsim.Response) []int {
	var out []int
	for _, r := range rs {
		out = append(out, r.Status)
	}
	return out
}

// A caller outside the allow-list with the right credentials is challenged, then
// admitted; its re-INVITE, UPDATE and BYE in the call are taken from its address.
func TestDigestCallerIsAdmitted(t *testing.T) {
	a := newAnswering(0)
	tr := authTrunk(t, "192.0.2.0/24", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{Username: "pbx", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	if codes := statuses(call.Responses); !slices.Contains(codes, 401) {
		t.Errorf("responses %v: no challenge (401)", codes)
	}
	r := <-a.got
	if _, err := call.WaitReceived(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if status, _, err := call.Reinvite(ctx, call.OfferSDP("sendrecv", 2)); err != nil || status != 200 {
		t.Fatalf("re-INVITE: %d %v", status, err)
	}
	if res, err := call.Update(ctx, nil, nil); err != nil || res.StatusCode != 200 {
		t.Fatalf("UPDATE: %v %v", res, err)
	}
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.runErr:
		if err != nil {
			t.Errorf("Run after the caller's BYE: %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("the caller's BYE did not end the call")
	}
	if tr.auth.inCall(netip.MustParseAddr("127.0.0.1")) {
		t.Error("the caller's address stays open to the gate after its call")
	}
}

// Wrong credentials get 403 and no call; none at all get 401; a source the allow-list
// names is never challenged.
func TestDigestRefusals(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := newAnswering(0)
	tr := authTrunk(t, "192.0.2.0/24", a)
	caller := newCaller(t)
	for _, tc := range []struct {
		name, user, password string
		want                 int
	}{
		{"wrong password", "pbx", "guess", 403},
		{"wrong user", "admin", "s3cret", 403},
		{"no credentials", "", "", 401},
	} {
		_, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{Username: tc.user, Password: tc.password})
		var refused *sipsim.Refused
		if !errors.As(err, &refused) || refused.Status != tc.want {
			t.Errorf("%s: %v, want %d", tc.name, err, tc.want)
		}
	}
	a.mu.Lock()
	admitted := len(a.legs)
	a.mu.Unlock()
	if admitted != 0 || tr.dialogs.count() != 0 {
		t.Errorf("a refused INVITE reached the call engine")
	}

	b := newAnswering(0)
	allowed := authTrunk(t, "127.0.0.1", b)
	call, err := caller.Call(ctx, allowed.Addr(), sipsim.CallOptions{})
	if err != nil {
		t.Fatalf("an allowed source without credentials: %v", err)
	}
	if codes := statuses(call.Responses); slices.Contains(codes, 401) {
		t.Errorf("an allowed source was challenged: %v", codes)
	}
	<-b.got
	_ = call.Hangup(ctx)
}

// A caller admitted by digest acts in its own call only, from its own address.
func TestDigestPeerActsInItsCallOnly(t *testing.T) {
	tr := authTrunk(t, "192.0.2.0/24", newAnswering(0))
	own := &inboundCall{authPeer: netip.MustParseAddr("198.51.100.7")}
	other := &inboundCall{}
	req := func(src string) *sip.Request {
		r := sip.NewRequest(sip.BYE, sip.Uri{Scheme: "sip", Host: "handset"})
		r.SetSource(src)
		return r
	}
	for _, tc := range []struct {
		c    *inboundCall
		src  string
		want bool
	}{
		{own, "198.51.100.7:5060", true},
		{own, "198.51.100.7:40000", true}, // another port of the same host
		{own, "198.51.100.8:5060", false},
		{other, "198.51.100.7:5060", false},
		{nil, "198.51.100.7:5060", false},
		{other, "192.0.2.9:5060", true}, // the allow-list
	} {
		if got := tr.admits(tc.c, req(tc.src)); got != tc.want {
			t.Errorf("admits(%+v, %s) = %v, want %v", tc.c, tc.src, got, tc.want)
		}
	}
}
