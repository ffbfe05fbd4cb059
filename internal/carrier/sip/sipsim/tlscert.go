package sipsim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// TestCert is a self-signed certificate for SIP over TLS in tests: its PEM files, and a
// pool that trusts it (for CallerOptions.TLS).
type TestCert struct {
	CertFile, KeyFile string
	Pool              *x509.CertPool
	NotAfter          time.Time
}

// NewTestCert writes a self-signed ECDSA certificate for ip, valid from notBefore to
// notAfter, and its key into dir.
func NewTestCert(dir string, ip netip.Addr, notBefore, notAfter time.Time) (TestCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return TestCert{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "handset test trunk", Organization: []string{"Handset tests"}},
		NotBefore:    notBefore, NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{ip.AsSlice()},
		DNSNames:    []string{"localhost"},
		IsCA:        true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return TestCert{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return TestCert{}, err
	}
	c := TestCert{CertFile: filepath.Join(dir, "sip-cert.pem"), KeyFile: filepath.Join(dir, "sip-key.pem"),
		Pool: x509.NewCertPool(), NotAfter: notAfter}
	if err := os.WriteFile(c.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return TestCert{}, err
	}
	if err := os.WriteFile(c.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return TestCert{}, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return TestCert{}, fmt.Errorf("sipsim: the test certificate: %w", err)
	}
	c.Pool.AddCert(cert)
	return c, nil
}
