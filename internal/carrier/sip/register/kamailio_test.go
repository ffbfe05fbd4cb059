package register

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/dial/uatest"
	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// Against a real registrar: kamailio with digest authentication, over UDP and TCP.
// Registered, Handset is where kamailio sends the AOR's calls; un-registered, kamailio no
// longer knows it; a wrong password is ErrCredentials.
func TestKamailioRegistrar(t *testing.T) {
	testpeer.Slow(t, "starts kamailio")
	k, err := sippeer.StartKamailio(t, sippeer.KamailioOptions{Users: map[string]string{"handset": "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, transport := range []string{"udp", "tcp"} {
		t.Run(transport, func(t *testing.T) { registerWithKamailio(t, k, transport) })
	}
}

func registerWithKamailio(t *testing.T, k *sippeer.Kamailio, transport string) {
	invites := make(chan *sip.Request, 4)
	handset := uatest.New(t, func(srv *sipgo.Server) {
		srv.OnInvite(func(req *sip.Request, tx sip.ServerTransaction) {
			invites <- req
			_ = tx.Respond(sip.NewResponseFromRequest(req, 486, "Busy Here", nil))
		})
		srv.OnAck(func(*sip.Request, sip.ServerTransaction) {})
	})
	caller := uatest.New(t, nil)
	registrar := sip.Uri{Scheme: "sip", Host: "127.0.0.1", Port: portOf(t, k.Addr()),
		UriParams: sip.HeaderParams{{K: "transport", V: transport}}}
	aor := sip.Uri{Scheme: "sip", User: "handset", Host: k.Realm()}

	register := func(password string) (*Registration, context.CancelFunc, chan error, Status) {
		changes := make(chan Status, 16)
		reg := New(handset.Client, Options{
			Registrar: registrar, AOR: aor, Contact: sip.ContactHeader{Address: handset.URI("handset")},
			Password: password, Expires: 120 * time.Second, OnChange: func(s Status) { changes <- s },
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- reg.Run(ctx) }()
		select {
		case s := <-changes:
			return reg, cancel, done, s
		case <-time.After(waitBound):
			cancel()
			t.Fatalf("no answer from kamailio\n%s", k.Log())
			return nil, nil, nil, Status{}
		}
	}
	call := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), waitBound)
		defer cancel()
		req := sip.NewRequest(sip.INVITE, *aor.Clone())
		req.SetDestination(k.Addr())
		req.AppendHeader(&sip.ContactHeader{Address: caller.URI("caller")})
		res, err := caller.Client.Do(ctx, req)
		if err != nil {
			t.Fatalf("calling the AOR through kamailio: %v", err)
		}
		return res.StatusCode
	}

	_, cancel, done, s := register("s3cret")
	if !s.Registered || s.Err != nil || s.Granted <= 0 || s.Granted > 120*time.Second {
		t.Fatalf("status %+v: want registered for at most 120 s\n%s", s, k.Log())
	}
	if code := call(); code != 486 {
		t.Errorf("a call to the registered AOR was answered %d, want Handset's 486", code)
	}
	select {
	case req := <-invites:
		if req.Recipient.Port != handset.Addr.Port {
			t.Errorf("the INVITE came for %s, want Handset's contact", req.Recipient.String())
		}
	case <-time.After(waitBound):
		t.Error("Handset's contact received no INVITE")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("un-registering: %v\n%s", err, k.Log())
	}
	if code := call(); code != 404 {
		t.Errorf("a call after un-registering was answered %d, want kamailio's 404", code)
	}

	_, cancel, done, s = register("guess")
	cancel()
	<-done
	if s.Registered || !errors.Is(s.Err, ErrCredentials) {
		t.Errorf("with a wrong password: %+v, want ErrCredentials", s)
	}
}

func portOf(t *testing.T, hostport string) int {
	t.Helper()
	addr, err := netip.ParseAddrPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	return int(addr.Port())
}
