package sippeer

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/testpeer"
)

func startKamailio(t *testing.T, opts KamailioOptions) *Kamailio {
	t.Helper()
	testpeer.Slow(t, "starts kamailio and SIP user agents")
	k, err := StartKamailio(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// baresip registers through kamailio with digest authentication: the right password
// is accepted, a wrong one refused.
func TestBaresipRegistersWithKamailio(t *testing.T) {
	k := startKamailio(t, KamailioOptions{Users: map[string]string{"alice": "s3cret"}})
	source := speechSource(t)
	for _, tc := range []struct {
		password string
		ok       bool
	}{{"s3cret", true}, {"guess", false}} {
		t.Run(tc.password, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			b, err := StartBaresip(t, BaresipOptions{Source: source, User: "alice", Password: tc.password,
				Registrar: k.Addr(), Domain: k.Realm()})
			if err != nil {
				t.Fatal(err)
			}
			err = b.WaitRegistered(ctx)
			if tc.ok && err != nil {
				t.Errorf("%v\nbaresip:\n%s\nkamailio:\n%s", err, b.Log(), k.Log())
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "403")) {
				t.Errorf("registering with a wrong password: %v, want it refused 403\nkamailio:\n%s", err, k.Log())
			}
		})
	}
}

// A registered baresip calls a domain user who is not registered: kamailio routes the
// INVITE to its target (a sipp answerer, where Handset would be), record-routing the
// dialog; the call is established both ways and baresip hears the answerer's tone.
func TestCallThroughKamailioReachesTarget(t *testing.T) {
	uas, err := StartSipp(t, UASAnswer, "", SippOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := startKamailio(t, KamailioOptions{Users: map[string]string{"alice": "s3cret"}, Target: uas.Addr()})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := StartBaresip(t, BaresipOptions{Source: speechSource(t), User: "alice", Password: "s3cret",
		Registrar: k.Addr(), Domain: k.Realm()})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Dial("sip:handset@" + k.Realm()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitEstablished(ctx); err != nil {
		t.Fatalf("%v\nbaresip:\n%s\nkamailio:\n%s", err, b.Log(), k.Log())
	}
	time.Sleep(1500 * time.Millisecond) // sipp plays its second of tone
	if err := b.Hangup(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitClosed(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := uas.Wait(ctx)
	if err != nil || r.Successful != 1 {
		t.Fatalf("target: %d successful calls (%v)\n%s\nkamailio:\n%s", r.Successful, err, r.Errors, k.Log())
	}
	if !strings.Contains(r.Messages, "Record-Route: <sip:127.0.0.1:") {
		t.Errorf("the INVITE reached the target without kamailio's Record-Route:\n%s", r.Messages)
	}
	rec, err := b.Recording()
	if err != nil {
		t.Fatal(err)
	}
	if pcm, rate := readPCM(t, rec); toneShare(pcm, rate, 440) < 0.3 {
		t.Errorf("baresip did not hear the target's tone through the proxied call")
	}
}

// A caller reaches a registered user through kamailio, and with AuthInvites must
// answer a 407 challenge first: with the right password the call goes through, with a
// wrong one it is refused 403.
func TestKamailioRoutesToRegisteredUserAndChallengesInvites(t *testing.T) {
	k := startKamailio(t, KamailioOptions{Users: map[string]string{"alice": "s3cret", "trunk": "t0ken"}, AuthInvites: true})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := StartBaresip(t, BaresipOptions{Source: speechSource(t), User: "alice", Password: "s3cret",
		Registrar: k.Addr(), Domain: k.Realm(), AutoAnswer: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.WaitRegistered(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := RunSipp(ctx, t, UACCall, k.Addr(), SippOptions{Service: "alice", Username: "trunk", Password: "t0ken", Hold: time.Second})
	if err != nil || r.Successful != 1 {
		t.Fatalf("caller: %d successful calls (%v)\n%s\nkamailio:\n%s", r.Successful, err, r.Errors, k.Log())
	}
	if !strings.Contains(r.Messages, "SIP/2.0 407") || !strings.Contains(r.Messages, "Proxy-Authorization: Digest") {
		t.Errorf("the caller was not challenged 407:\n%s", r.Messages)
	}
	if _, err := b.WaitEstablished(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitClosed(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := b.Recording()
	if err != nil {
		t.Fatal(err)
	}
	if pcm, rate := readPCM(t, rec); toneShare(pcm, rate, 440) < 0.3 {
		t.Errorf("the registered user did not hear the caller's tone")
	}
	r, err = RunSipp(ctx, t, UACRefused, k.Addr(), SippOptions{Service: "alice", Username: "trunk", Password: "guess"})
	if err != nil || r.Successful != 1 {
		t.Errorf("a wrong password: %d calls refused 403 (%v)\n%s", r.Successful, err, r.Messages)
	}
}

// Every malformed message goes to a real SIP server (kamailio) over UDP; none may bring
// a 2xx, and the server answers OPTIONS afterwards: the messages are hostile, not fatal
// to a sound stack, and Exchange reads what comes back.
func TestMalformedMessagesAgainstKamailio(t *testing.T) {
	k := startKamailio(t, KamailioOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	answered := 0
	for _, j := range MalformedMessages(k.Addr()) {
		reply, err := Exchange(ctx, "udp", k.Addr(), j.Packet, 200*time.Millisecond)
		if reply != nil {
			answered++
		}
		if err != nil {
			t.Errorf("%s: %v", j.Name, err)
			continue
		}
		t.Logf("%-40s -> %q", j.Name, firstLine(reply))
		if strings.HasPrefix(string(reply), "SIP/2.0 2") {
			t.Errorf("%s: answered %q", j.Name, firstLine(reply))
		}
	}
	// kamailio refuses many with a 4xx (483 for Max-Forwards zero, 400 for a bad CSeq):
	// replies must come back through Exchange
	if answered < 5 {
		t.Errorf("only %d messages answered, want kamailio's refusals read back", answered)
	}
	reply, err := Exchange(ctx, "udp", k.Addr(), optionsPing(k.Addr(), 1), 5*time.Second)
	if err != nil || !strings.HasPrefix(string(reply), "SIP/2.0 200") {
		t.Fatalf("kamailio no longer answers OPTIONS: %q, %v\n%s", firstLine(reply), err, k.Log())
	}
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\r\n")
	return line
}

// holdUDPPort binds a loopback UDP port for the rest of the test: a port some other
// process took after freePort chose it.
func holdUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.LocalAddr().(*net.UDPAddr).Port
}

// A port taken between choosing and binding is recognised from kamailio's own output,
// so StartKamailio tries new ports rather than failing the test that wanted it.
func TestKamailioOnATakenPortIsToldApart(t *testing.T) {
	testpeer.Slow(t, "starts kamailio")
	opts, err := KamailioOptions{Dir: t.TempDir()}.checked()
	if err != nil {
		t.Fatal(err)
	}
	_, err = startKamailioOn(t, testpeer.Program(t, "kamailio", testpeer.Kamailio), opts, holdUDPPort(t))
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("kamailio on a taken port: %v, want errPortTaken", err)
	}
}
