package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// caPEM is a self-signed CA certificate in PEM form, made for the test.
func caPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Test Private CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestCAFileIsChecked: HANDSET_AGENT_CA_FILE must name a readable file of one or more PEM
// certificates and nothing else; anything else is a configuration error naming the
// setting, saying what is wrong and what to set.
func TestCAFileIsChecked(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ca := caPEM(t)
	good := write("ca.pem", ca)
	bundle := write("bundle.pem", append(append([]byte("# our CAs\n"), ca...), caPEM(t)...))
	cases := []struct {
		name, path, reason string
	}{
		{"missing", filepath.Join(dir, "nope.pem"), "names no file"},
		{"a folder", dir, "is a folder, not a file"},
		{"empty", write("empty.pem", nil), "holds no certificate"},
		{"DER, not PEM", write("ca.der", []byte{0x30, 0x82, 0x01, 0x0a}), "holds no certificate"},
		{"a key among the certificates", write("key.pem", append(append([]byte{}, ca...),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1, 2, 3}})...)), `holds a "PRIVATE KEY" block (number 2)`},
		{"a broken certificate", write("broken.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")})), "holds a certificate that cannot be parsed (block 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_AGENT_CA_FILE=" + tc.path}})
			fe := errorFor(t, c.Validate(ValidateOptions{}), "HANDSET_AGENT_CA_FILE")
			msg := fe.Error()
			if !strings.HasPrefix(msg, `HANDSET_AGENT_CA_FILE (agent.ca_file): "`+tc.path+`" `+tc.reason) {
				t.Errorf("error %q, want it to say %q", msg, tc.reason)
			}
			problem, fix, ok := strings.Cut(fe.Reason, ": ")
			if !ok || strings.Contains(problem, ": ") || fix == "" {
				t.Errorf("reason %q: want a problem, then after the first colon the fix", fe.Reason)
			}
		})
	}
	for _, p := range []string{good, bundle} {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_AGENT_CA_FILE=" + p, "HANDSET_AGENT_TLS_INSECURE=true"}})
		if err := c.Validate(ValidateOptions{}); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if c.Agent.CAFile != p || !c.Agent.TLSInsecure {
			t.Errorf("agent settings %+v", c.Agent)
		}
	}
	if certs, err := ReadCAFile(bundle); err != nil || len(certs) != 2 || certs[0].Subject.CommonName != "Test Private CA" {
		t.Errorf("ReadCAFile(bundle) = %d certificates, %v; want both", len(certs), err)
	}
}
