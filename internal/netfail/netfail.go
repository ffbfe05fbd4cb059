// Package netfail says in words why a server did not answer: refused, an unknown host, a
// certificate, no answer in time. Doctor's checks and the gateway's start-up advice share it,
// so they describe a failure the same way.
package netfail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"syscall"
)

// Describe says why a server did not answer: refused, unknown host, TLS, timeout.
func Describe(err error) string {
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens there"
	case errors.As(err, &dnsErr):
		return "the host name does not resolve (" + dnsErr.Name + ")"
	case IsCertificate(err):
		return "its TLS certificate is not valid: " + RootCause(err)
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	}
	return RootCause(err)
}

// IsCertificate reports whether err is a certificate problem (a server answered, badly).
func IsCertificate(err error) bool {
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	return errors.As(err, &certErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr)
}

// RootCause is the innermost message of a url.Error chain, which repeats the URL otherwise.
func RootCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
