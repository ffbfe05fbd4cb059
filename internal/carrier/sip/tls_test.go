package sip

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
	"github.com/handset-voice/handset/internal/doctor"
)

// testCert is a certificate for 127.0.0.1 valid for a year from an hour ago.
func testCert(t *testing.T) sipsim.TestCert {
	t.Helper()
	c, err := sipsim.NewTestCert(t.TempDir(), netip.MustParseAddr("127.0.0.1"), time.Now().Add(-time.Hour), time.Now().Add(365*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startTLSTrunk starts a trunk serving UDP and TLS on loopback, read from its settings as
// serve would.
func startTLSTrunk(t *testing.T, allowSpec string, a *answering, cert sipsim.TestCert, srtp string) *Trunk {
	t.Helper()
	opts, err := ReadOptions(checkSettings{
		SettingAllow: allowSpec, SettingListen: "127.0.0.1:0", SettingTransports: "udp,tls",
		SettingTLSListen: "127.0.0.1:0", SettingTLSCert: cert.CertFile, SettingTLSKey: cert.KeyFile,
		SettingRTPPorts: "31000-31999", SettingSRTP: srtp,
	})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Start(opts, carrier.Inbound{Admit: a.admit, Draining: func() bool { return false },
		Memory: carriertest.NewMemory(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

// A call over TLS with SRTP required: the dialog's Contact says transport=tls on the TLS
// port, media flows both ways sealed, and the caller's BYE comes over TLS.
func TestInboundCallOverTLSWithSRTP(t *testing.T) {
	cert := testCert(t)
	a := newAnswering(25)
	tr := startTLSTrunk(t, "127.0.0.1", a, cert, SRTPRequired)
	if !tr.TLSAddr().IsValid() || tr.TLSAddr().Port() == tr.Addr().Port() {
		t.Fatalf("TLS at %v, UDP at %v", tr.TLSAddr(), tr.Addr())
	}
	caller, err := sipsim.NewCaller(sipsim.CallerOptions{Transport: "tls", TLS: &tls.Config{RootCAs: cert.Pool}})
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.TLSAddr(), sipsim.CallOptions{SRTP: sipsim.SRTP80})
	if err != nil {
		t.Fatal(err)
	}
	r := <-a.got
	if contact := call.Contact(); !strings.Contains(contact, ";transport=tls") || !strings.Contains(contact, tr.TLSAddr().String()) {
		t.Errorf("the 200 OK's Contact %q is not Handset's TLS address with transport=tls", contact)
	}
	waitLoudPackets(ctx, t, call, 5)
	if err := call.Play(ctx, callerFrames(25)); err != nil {
		t.Fatal(err)
	}
	r.sink.waitFor(t, "the caller's frames", func(s *recordingSink) bool { return s.heard >= 20 })
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.runErr:
		if err != nil {
			t.Errorf("Run after the caller's BYE over TLS: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the BYE over TLS did not end the call")
	}
}

// A stranger's TLS connection is closed unanswered: it never gets a handshake.
func TestTLSStrangersGetNoHandshake(t *testing.T) {
	cert := testCert(t)
	tr := startTLSTrunk(t, "192.0.2.1", newAnswering(0), cert, "")
	raw, err := net.DialTimeout("tcp", tr.TLSAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	conn := tls.Client(raw, &tls.Config{RootCAs: cert.Pool, ServerName: "127.0.0.1"})
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	err = conn.Handshake()
	var alert tls.AlertError
	if err == nil || errors.As(err, &alert) || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a stranger's handshake: %v, want the connection closed before any TLS answer", err)
	}
	if conn.ConnectionState().HandshakeComplete {
		t.Fatal("a stranger completed a TLS handshake")
	}
}

// Missing, unreadable and mismatched certificate files are refused naming the setting.
func TestTLSSettingsAreChecked(t *testing.T) {
	cert, other := testCert(t), testCert(t)
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		cert, key, listen string
		want              []string
	}{
		"no certificate": {"", cert.KeyFile, "", []string{SettingTLSCert, "is needed"}},
		"no key":         {cert.CertFile, "", "", []string{SettingTLSKey, "is needed"}},
		"missing file":   {filepath.Join(dir, "absent.pem"), cert.KeyFile, "", []string{SettingTLSCert, "absent.pem"}},
		"not PEM":        {junk, cert.KeyFile, "", []string{SettingTLSCert, "junk.pem"}},
		"another's key":  {cert.CertFile, other.KeyFile, "", []string{SettingTLSCert, "private key does not match"}},
		"a bad address":  {cert.CertFile, cert.KeyFile, "localhost", []string{SettingTLSListen}},
	} {
		_, err := ReadOptions(checkSettings{SettingAllow: "127.0.0.1", SettingTransports: "udp,tls",
			SettingTLSCert: c.cert, SettingTLSKey: c.key, SettingTLSListen: c.listen})
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want an error naming %q", name, err, w)
			}
		}
	}
	o, err := ReadOptions(checkSettings{SettingAllow: "127.0.0.1", SettingTransports: "udp"})
	if err != nil || o.TLSCert != nil {
		t.Errorf("without tls the certificate settings are not needed: %v", err)
	}
}

// doctor says whether the TLS port is free, and warns when something holds it.
func TestDoctorChecksTheTLSPort(t *testing.T) {
	cert := testCert(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()
	for name, c := range map[string]struct {
		listen string
		status doctor.Status
	}{
		"free": {freeAddr, doctor.OK},
		"held": {held.Addr().String(), doctor.Warn},
	} {
		set := checkSettings{SettingAllow: "127.0.0.1", SettingTransports: "udp,tls", SettingTLSListen: c.listen,
			SettingTLSCert: cert.CertFile, SettingTLSKey: cert.KeyFile}
		o, err := ReadOptions(set)
		if err != nil {
			t.Fatal(err)
		}
		ch := &checker{settings: set, opts: o}
		expect(t, map[string]doctor.Result{name: ch.tlsListenPort(context.Background())}, name, c.status, c.listen)
	}
}

// doctor names the certificate's subject and expiry, and fails an expired one.
func TestDoctorChecksTheTLSCertificate(t *testing.T) {
	valid := testCert(t)
	expired, err := sipsim.NewTestCert(t.TempDir(), netip.MustParseAddr("127.0.0.1"), time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	soon, err := sipsim.NewTestCert(t.TempDir(), netip.MustParseAddr("127.0.0.1"), time.Now().Add(-time.Hour), time.Now().Add(72*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		cert   sipsim.TestCert
		status doctor.Status
		words  []string
	}{
		"valid":   {valid, doctor.OK, []string{"CN=handset test trunk", valid.NotAfter.UTC().Format(time.DateOnly)}},
		"expired": {expired, doctor.Fail, []string{"expired", "renew"}},
		"soon":    {soon, doctor.Warn, []string{"expires within"}},
	} {
		t.Run(name, func(t *testing.T) {
			set := checkSettings{SettingAllow: "127.0.0.1", SettingTransports: "udp,tls",
				SettingTLSCert: c.cert.CertFile, SettingTLSKey: c.cert.KeyFile}
			o, err := ReadOptions(set)
			if err != nil {
				t.Fatal(err)
			}
			ch := &checker{settings: set, opts: o}
			expect(t, map[string]doctor.Result{"tls": ch.tlsCertificate(context.Background())}, "tls", c.status, c.words...)
		})
	}
}

// doctor shakes hands with a trunk Handset calls over TLS: trusted through
// HANDSET_SIP_TLS_CA it names the certificate; without that authority it fails and says
// which setting to set; a trunk without ;transport=tls is skipped.
func TestDoctorChecksTheTrunksTLS(t *testing.T) {
	cert := testCert(t)
	pair, err := tls.LoadX509KeyPair(cert.CertFile, cert.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	trunk := "sip:" + ln.Addr().String() + ";transport=tls"
	for name, c := range map[string]struct {
		set    checkSettings
		status doctor.Status
		words  []string
	}{
		"trusted":   {checkSettings{SettingAllow: "127.0.0.1", SettingTrunk: trunk, SettingTLSCA: cert.CertFile}, doctor.OK, []string{"CN=handset test trunk", SettingTLSCA}},
		"untrusted": {checkSettings{SettingAllow: "127.0.0.1", SettingTrunk: trunk}, doctor.Fail, []string{"authority", SettingTLSCA}},
		"udp":       {checkSettings{SettingAllow: "127.0.0.1", SettingTrunk: "sip:" + ln.Addr().String()}, doctor.Skip, nil},
	} {
		t.Run(name, func(t *testing.T) {
			o, err := ReadOptions(c.set)
			if err != nil {
				t.Fatal(err)
			}
			ch := &checker{settings: c.set, opts: o}
			expect(t, map[string]doctor.Result{name: ch.trunkTLS(context.Background())}, name, c.status, c.words...)
		})
	}
}
