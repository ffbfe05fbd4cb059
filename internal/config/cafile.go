package config

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// maxCAFile bounds a CA file: a bundle of a few hundred certificates is under 1 MiB.
const maxCAFile = 4 << 20

// ReadCAFile reads the certificates of HANDSET_AGENT_CA_FILE: PEM "CERTIFICATE" blocks, at
// least one, every one of them a certificate (other blocks, a key say, are refused: they do
// not belong in a file of trusted authorities). Validation and the agent runtime's TLS set-up
// both read it here. An error reads on after the file's name, fix included.
func ReadCAFile(path string) ([]*x509.Certificate, error) {
	const fix = "set it to the PEM file of the certificate authority that signed the runtime's certificate"
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("names no file: " + fix)
	case errors.Is(err, fs.ErrPermission):
		return nil, errors.New("cannot be read by Handset (permission denied): make it readable by the user Handset runs as")
	case err != nil:
		return nil, fmt.Errorf("cannot be read (%s): %s", plain(err), fix)
	case st.IsDir():
		return nil, errors.New("is a folder, not a file: " + fix)
	case st.Size() > maxCAFile:
		return nil, fmt.Errorf("is %d bytes, more than a file of certificates (at most %d): %s", st.Size(), maxCAFile, fix)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrPermission) {
		return nil, errors.New("cannot be read by Handset (permission denied): make it readable by the user Handset runs as")
	}
	if err != nil {
		return nil, fmt.Errorf("cannot be read (%s): %s", plain(err), fix)
	}
	var certs []*x509.Certificate
	for n := 1; ; n++ {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("holds a %q block (number %d), not only certificates: %s", block.Type, n, fix)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("holds a certificate that cannot be parsed (block %d, %s): %s", n, plain(err), fix)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New(`holds no certificate (no "-----BEGIN CERTIFICATE-----" block; a DER file converts with ` +
			"openssl x509 -inform der -in ca.crt -out ca.pem): " + fix)
	}
	return certs, nil
}

// checkCAFile validates HANDSET_AGENT_CA_FILE by reading it.
func checkCAFile(v string) string {
	if _, err := ReadCAFile(v); err != nil {
		return err.Error()
	}
	return ""
}

// plain is an error's text without ": ", which in a reason separates the problem from its fix.
func plain(err error) string { return strings.ReplaceAll(err.Error(), ": ", " - ") }
