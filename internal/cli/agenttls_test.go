package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/sim/fakewebhook"
)

// testCA is a private certificate authority made for a test, as an operator's own CA is.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // its certificate as PEM, for HANDSET_AGENT_CA_FILE
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, file: file}
}

// issue makes a server certificate for names (host names or IP addresses), valid from
// notBefore to notAfter, signed by the CA.
func (ca *testCA) issue(t *testing.T, names []string, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key}
}

// serveTLS serves h over TLS with cert, until the test ends.
func serveTLS(t *testing.T, h http.Handler, cert tls.Certificate) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are what some cases test
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// a day either side of now, for certificates that are valid now.
func validNow() (time.Time, time.Time) {
	return time.Now().Add(-24 * time.Hour), time.Now().Add(90 * 24 * time.Hour)
}

// TestAgentRuntimesOverTLS: every runtime reaches a server whose certificate a private CA
// issued once HANDSET_AGENT_CA_FILE names that CA (the OpenClaw gateway over wss:// too),
// and none does without it; HANDSET_AGENT_TLS_INSECURE gets through unchecked, with a
// warning in the log.
func TestAgentRuntimesOverTLS(t *testing.T) {
	ca := newTestCA(t, "Handset Test Private CA")
	from, until := validNow()
	cert := ca.issue(t, []string{"127.0.0.1", "localhost"}, from, until)
	const hermesKey = "hermes-key-0123456789abcdef"

	oai := fakeopenai.New(fakeopenai.Options{})
	herm := fakehermes.New(fakehermes.Options{Key: hermesKey})
	hook := fakewebhook.New(fakewebhook.Options{})
	claw := fakeopenclaw.New(fakeopenclaw.Options{Token: "gw-token"})
	t.Cleanup(func() { oai.Close(); herm.Close(); hook.Close(); claw.Close() })
	runtimes := []struct {
		name string
		env  []string
	}{
		{"openai", []string{"HANDSET_AGENT=openai", "HANDSET_AGENT_URL=" + serveTLS(t, oai, cert).URL + "/v1", "HANDSET_AGENT_KEY=sk-test", "HANDSET_AGENT_MODEL=m"}},
		{"hermes", []string{"HANDSET_AGENT=hermes", "HANDSET_AGENT_URL=" + serveTLS(t, herm, cert).URL + "/v1", "HANDSET_AGENT_KEY=" + hermesKey}},
		{"webhook", []string{"HANDSET_AGENT=webhook", "HANDSET_AGENT_URL=" + serveTLS(t, hook, cert).URL + "/turn"}},
		{"openclaw ws", []string{"HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL=" + serveTLS(t, claw, cert).URL, "HANDSET_AGENT_KEY=gw-token"}},
	}
	for _, rt := range runtimes {
		t.Run(rt.name, func(t *testing.T) {
			turn := func(extra ...string) (probeResult, string) {
				cfg, err := config.Load(config.LoadOptions{WorkDir: t.TempDir(), Environ: append(append([]string{}, rt.env...), extra...)})
				if err != nil {
					t.Fatal(err)
				}
				if err := cfg.Validate(config.ValidateOptions{RequireAgent: true}); err != nil {
					t.Fatal(err)
				}
				var logs syncBuffer
				log := slog.New(slog.NewTextHandler(&logs, nil))
				r := probeAgent(context.Background(), cfg, log, session.Context{CallID: "c_tls"}, "hello over tls", 30*time.Second)
				return r, logs.String()
			}
			if r, _ := turn(); r.OK || !strings.Contains(r.Error, "certificate signed by unknown authority") {
				t.Errorf("without the CA: ok %v, error %q; want the certificate refused", r.OK, r.Error)
			}
			if r, _ := turn("HANDSET_AGENT_CA_FILE=" + ca.file); !r.OK {
				t.Errorf("with HANDSET_AGENT_CA_FILE: %s", r.Error)
			}
			r, logs := turn("HANDSET_AGENT_TLS_INSECURE=true")
			if !r.OK {
				t.Errorf("with HANDSET_AGENT_TLS_INSECURE: %s", r.Error)
			}
			if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "HANDSET_AGENT_TLS_INSECURE=true: the agent runtime's certificate is not checked") {
				t.Errorf("no warning about the unchecked certificate in the log:\n%s", logs)
			}
		})
	}
}

// TestDoctorAgentCertificate: doctor connects to an https:// runtime and checks its
// certificate as calls do, and says which fix applies: a private CA to trust, a name the
// certificate lacks, an expired or expiring certificate, no TLS at all; the insecure mode
// is a warning, even without the network.
func TestDoctorAgentCertificate(t *testing.T) {
	r := newDocRig(t)
	ca := newTestCA(t, "Handset Test Private CA")
	from, until := validNow()
	oai := fakeopenai.New(fakeopenai.Options{Key: docOAIKey, Models: []string{"model-a"}})
	t.Cleanup(oai.Close)
	runtime := func(cert tls.Certificate) []string {
		return []string{"HANDSET_AGENT=openai", "HANDSET_AGENT_URL=" + serveTLS(t, oai, cert).URL + "/v1", "HANDSET_AGENT_KEY=" + docOAIKey, "HANDSET_AGENT_MODEL=model-a"}
	}
	good := runtime(ca.issue(t, []string{"127.0.0.1"}, from, until))
	withCA := append(append([]string{}, good...), "HANDSET_AGENT_CA_FILE="+ca.file)

	code, rep := r.report(withCA)
	res := findResult(t, rep, "agent", "certificate")
	if code != 0 || res.Status != doctor.OK || !strings.Contains(res.Detail, "issued by Handset Test Private CA") ||
		!strings.Contains(res.Detail, "trusted through HANDSET_AGENT_CA_FILE") || findResult(t, rep, "agent", "api").Status != doctor.OK {
		t.Errorf("a certificate from the CA in HANDSET_AGENT_CA_FILE: exit %d\n%s", code, dumpResults(rep.Results))
	}
	res = r.expect(good, 1, "agent", "certificate", doctor.Fail, "set HANDSET_AGENT_CA_FILE to the PEM certificate of the authority that signed it (Handset Test Private CA)")
	if !strings.Contains(res.Detail, "an authority this machine does not trust") {
		t.Errorf("unknown authority: %q", res.Detail)
	}
	other := newTestCA(t, "Some Other CA")
	r.expect(append(append([]string{}, good...), "HANDSET_AGENT_CA_FILE="+other.file), 1, "agent", "certificate", doctor.Fail,
		"does not hold the authority that signed it")
	res = r.expect(append(runtime(ca.issue(t, []string{"voice.internal"}, from, until)), "HANDSET_AGENT_CA_FILE="+ca.file), 1,
		"agent", "certificate", doctor.Fail, "give the runtime a certificate that names 127.0.0.1")
	if !strings.Contains(res.Detail, "certificate for voice.internal") || !strings.Contains(res.Detail, "not for 127.0.0.1") {
		t.Errorf("name mismatch: %q", res.Detail)
	}
	res = r.expect(append(runtime(ca.issue(t, []string{"127.0.0.1"}, from, time.Now().Add(-time.Hour))), "HANDSET_AGENT_CA_FILE="+ca.file), 1,
		"agent", "certificate", doctor.Fail, "renew the runtime's certificate")
	if !strings.Contains(res.Detail, "expired on") {
		t.Errorf("expired: %q", res.Detail)
	}
	res = r.expect(append(runtime(ca.issue(t, []string{"127.0.0.1"}, from, time.Now().Add(3*24*time.Hour+time.Hour))), "HANDSET_AGENT_CA_FILE="+ca.file), 0,
		"agent", "certificate", doctor.Warn, "renew the runtime's certificate before then")
	if !strings.Contains(res.Detail, "expires in 3 day(s)") {
		t.Errorf("expiring: %q", res.Detail)
	}

	insecure := append(append([]string{}, good...), "HANDSET_AGENT_TLS_INSECURE=true")
	r.expect(insecure, 0, "agent", "tls", doctor.Warn, "remove HANDSET_AGENT_TLS_INSECURE")
	res = r.expect(insecure, 0, "agent", "certificate", doctor.Warn, "set HANDSET_AGENT_CA_FILE")
	if !strings.Contains(res.Detail, "calls work only because HANDSET_AGENT_TLS_INSECURE skips the check") {
		t.Errorf("insecure, unknown authority: %q", res.Detail)
	}
	_, rep = r.report(insecure, "--no-network")
	if res := findResult(t, rep, "agent", "tls"); res.Status != doctor.Warn || !strings.Contains(res.Detail, "not checked") {
		t.Errorf("--no-network: the insecure mode is not shown: %+v", res)
	}

	plain := httptest.NewServer(oai)
	t.Cleanup(plain.Close)
	r.expect([]string{"HANDSET_AGENT=openai", "HANDSET_AGENT_URL=" + strings.Replace(plain.URL, "http://", "https://", 1) + "/v1",
		"HANDSET_AGENT_KEY=" + docOAIKey, "HANDSET_AGENT_MODEL=model-a"}, 1, "agent", "certificate", doctor.Fail, "use http:// in HANDSET_AGENT_URL")

	r.expect(append(append([]string{}, good...), "HANDSET_AGENT_CA_FILE="+filepath.Join(t.TempDir(), "missing.pem")), 1,
		"config", "HANDSET_AGENT_CA_FILE", doctor.Fail, "PEM file of the certificate authority")
}
