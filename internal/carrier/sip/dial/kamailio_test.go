package dial

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// Through a real proxy: kamailio challenges the INVITE (407) as a trunk does and
// record-routes the dialog to the callee. The call is answered, the ACK, a transfer's
// REFER and NOTIFYs and the callee's BYE all cross the proxy; a wrong password is
// ErrCredentials.
func TestThroughKamailio(t *testing.T) {
	testpeer.Slow(t, "starts kamailio")
	u, h := newFakeUAS(t), newHandset(t)
	u.set(func(u *fakeUAS) { u.answer = pickUp(u) })
	accept := u.acceptRefer(t, []string{"SIP/2.0 200 OK\r\n"}, nil)
	u.set(func(u *fakeUAS) { u.refer = accept })
	k, err := sippeer.StartKamailio(t, sippeer.KamailioOptions{
		Users: map[string]string{"trunkuser": "s3cret"}, Target: u.Addr.String(), AuthInvites: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := netip.ParseAddrPort(k.Addr())
	if err != nil {
		t.Fatal(err)
	}
	options := func(password string) Options {
		o := h.options(u, "+15551234567")
		o.Target = sip.Uri{Scheme: "sip", User: "+15551234567", Host: proxy.Addr().String(), Port: int(proxy.Port())}
		o.Username, o.Password = "trunkuser", password
		return o
	}

	if _, err := invite(t, h, options("guess")); !errors.Is(err, ErrCredentials) {
		t.Errorf("with a wrong password: %v, want ErrCredentials\n%s", err, k.Log())
	}

	d, err := invite(t, h, options("s3cret"))
	if err != nil {
		t.Fatalf("%v\n%s", err, k.Log())
	}
	invites := u.invitesSeen()
	if len(invites) != 1 || invites[0].GetHeader("Record-Route") == nil {
		t.Fatalf("the callee got %d INVITEs (want 1, authenticated at the proxy), record-routed: %v",
			len(invites), len(invites) == 1 && invites[0].GetHeader("Record-Route") != nil)
	}
	receive(t, u.acked, "ACK through the proxy")
	ctx, cancel := context.WithTimeout(context.Background(), waitBound)
	defer cancel()
	if err := d.Refer(ctx, sip.Uri{Scheme: "sip", User: "+15550001111", Host: "pbx.example.com"}); err != nil {
		t.Errorf("transfer through the proxy: %v\n%s", err, k.Log())
	}
	dlg := receive(t, u.answered, "answered dialog")
	if err := dlg.Bye(ctx); err != nil {
		t.Fatalf("the callee's BYE through the proxy: %v\n%s", err, k.Log())
	}
	receive(t, d.Done(), "end of the dialog")
	if !d.HungUpByCallee() {
		t.Error("the dialog did not end by the callee's BYE")
	}
}
