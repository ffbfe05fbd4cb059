package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/gateway"
	"github.com/handset-voice/handset/internal/netfail"
)

// expirySoon is when doctor starts warning that the runtime's certificate runs out.
const expirySoon = 14 * 24 * time.Hour

// agentTLSChecks are doctor's checks of how Handset reaches the agent runtime over TLS: the
// development-only HANDSET_AGENT_TLS_INSECURE (shown even with --no-network), and the
// certificate an https:// runtime presents, checked as every turn's connection checks it.
func (d *doctorRun) agentTLSChecks() []doctor.Check {
	cfg := d.cfg
	switch cfg.Agent.Runtime {
	case "", config.AgentEcho:
		return nil
	}
	u, err := url.Parse(cfg.AgentURL())
	if err != nil || u.Host == "" {
		return nil // the settings check names the URL
	}
	var cs []doctor.Check
	if cfg.Agent.TLSInsecure {
		detail, fix := gateway.InsecureAgentWarning, "remove HANDSET_AGENT_TLS_INSECURE (from "+d.origin("HANDSET_AGENT_TLS_INSECURE")+")"
		if u.Scheme != "https" {
			detail = "HANDSET_AGENT_TLS_INSECURE=true, though the runtime is reached without TLS (" + u.Scheme + "://): it does nothing now, and would skip the certificate check of an https:// runtime"
		} else {
			fix += "; for a private CA set HANDSET_AGENT_CA_FILE to its certificate instead"
		}
		cs = append(cs, doctor.Fixed(secAgent, "tls", doctor.WarnResult(detail, fix)))
	}
	if u.Scheme == "https" {
		cs = append(cs, doctor.Net(secAgent, "certificate", func(ctx context.Context) doctor.Result { return d.agentCertificate(ctx, u) }))
	}
	return cs
}

// agentCertificate connects to the runtime with TLS and checks its certificate the way
// every turn's connection does (the system's authorities plus HANDSET_AGENT_CA_FILE), and
// says which fix applies when it fails. With HANDSET_AGENT_TLS_INSECURE a failure is only a
// warning: calls work, unchecked.
func (d *doctorRun) agentCertificate(ctx context.Context, u *url.URL) doctor.Result {
	cfg := d.cfg
	conf, err := gateway.AgentTLS(cfg)
	if err != nil {
		return doctor.SkipResult("not checked: HANDSET_AGENT_CA_FILE cannot be used (see config)")
	}
	host, addr := u.Hostname(), u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(host, "443")
	}
	dialer := &tls.Dialer{Config: &tls.Config{ServerName: host, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}}
	conn, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		var recErr tls.RecordHeaderError
		if errors.As(err, &recErr) {
			return doctor.FailResult(addr+" does not speak TLS, though HANDSET_AGENT_URL says https://",
				"use http:// in HANDSET_AGENT_URL (now "+cfg.AgentURL()+"), or turn TLS on at the runtime")
		}
		return doctor.SkipResult("not checked: no TLS connection to " + addr + ": " + netfail.Describe(err))
	}
	chain := conn.(*tls.Conn).ConnectionState().PeerCertificates
	_ = conn.Close()
	if len(chain) == 0 {
		return doctor.FailResult(addr+" presented no certificate", "give the runtime a certificate")
	}
	leaf := chain[0]
	about := fmt.Sprintf("certificate for %s, issued by %s", certNames(leaf), issuerName(leaf))
	verr := verifyChain(chain, host, conf.RootCAs)
	r := d.certificateResult(leaf, about, host, verr)
	if r.Status == doctor.OK && cfg.Agent.CAFile != "" && verifyChain(chain, host, nil) != nil {
		r.Detail += " (trusted through HANDSET_AGENT_CA_FILE)"
	}
	if cfg.Agent.TLSInsecure {
		switch r.Status {
		case doctor.Fail:
			return doctor.WarnResult(r.Detail+"; calls work only because HANDSET_AGENT_TLS_INSECURE skips the check", r.Fix+", then remove HANDSET_AGENT_TLS_INSECURE")
		case doctor.OK:
			return doctor.WarnResult(r.Detail+": it passes the check, which HANDSET_AGENT_TLS_INSECURE skips", "remove HANDSET_AGENT_TLS_INSECURE: it is not needed")
		}
	}
	return r
}

// certificateResult says what a verification error of leaf means, and its fix.
func (d *doctorRun) certificateResult(leaf *x509.Certificate, about, host string, verr error) doctor.Result {
	cfg := d.cfg
	var unknown x509.UnknownAuthorityError
	var name x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case verr == nil:
		if left := time.Until(leaf.NotAfter); left < expirySoon {
			return doctor.WarnResult(fmt.Sprintf("%s, expires in %d day(s) (%s)", about, int(left.Hours()/24), leaf.NotAfter.UTC().Format(time.DateOnly)),
				"renew the runtime's certificate before then: once it expires every turn fails")
		}
		return doctor.OKResult(fmt.Sprintf("%s, valid until %s", about, leaf.NotAfter.UTC().Format(time.DateOnly)))
	case errors.As(verr, &unknown):
		fix := "set HANDSET_AGENT_CA_FILE to the PEM certificate of the authority that signed it (" + issuerName(leaf) + ")"
		if cfg.Agent.CAFile != "" {
			fix = "HANDSET_AGENT_CA_FILE (" + cfg.Agent.CAFile + ", from " + d.origin("HANDSET_AGENT_CA_FILE") +
				") does not hold the authority that signed it: set it to the PEM certificate of " + issuerName(leaf)
		}
		what := "an authority this machine does not trust"
		if leaf.Subject.String() == leaf.Issuer.String() {
			what = "itself (a self-signed certificate), which this machine does not trust"
		}
		return doctor.FailResult(about+": it is signed by "+what, fix)
	case errors.As(verr, &name):
		return doctor.FailResult(fmt.Sprintf("%s: not for %s, the host HANDSET_AGENT_URL names", about, host),
			"reach the runtime by a name its certificate holds (set HANDSET_AGENT_URL to it), or give the runtime a certificate that names "+host)
	case errors.As(verr, &invalid) && invalid.Reason == x509.Expired:
		when := "expired on " + leaf.NotAfter.UTC().Format(time.DateOnly)
		if time.Now().Before(leaf.NotBefore) {
			when = "is not valid before " + leaf.NotBefore.UTC().Format(time.DateOnly)
		}
		return doctor.FailResult(about+": it "+when, "renew the runtime's certificate (or, if it is new, check this machine's clock)")
	}
	return doctor.FailResult(about+": it is not valid: "+verr.Error(), "give the runtime a certificate that a trusted authority issued for "+host)
}

// verifyChain checks chain for host as a TLS client does: roots nil means the system's.
func verifyChain(chain []*x509.Certificate, host string, roots *x509.CertPool) error {
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter})
	return err
}

// certNames lists the names a certificate is for, its subject alternative names first.
func certNames(c *x509.Certificate) string {
	names := append([]string{}, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 && c.Subject.CommonName != "" {
		names = append(names, c.Subject.CommonName)
	}
	if len(names) == 0 {
		return "no name"
	}
	return doctor.FirstFew(names, 4)
}

// issuerName is how a certificate's issuer is known: its common name, or the whole name.
func issuerName(c *x509.Certificate) string {
	if cn := c.Issuer.CommonName; cn != "" {
		return strings.TrimSpace(cn)
	}
	return c.Issuer.String()
}

// doctorAgentClient is the HTTP client of doctor's probes of the agent runtime, built as
// every turn's is (see agentTLS); other probes keep doctor's own. With settings it cannot
// use (the config section says why) it is doctor's own.
func doctorAgentClient(cfg *config.Config, own *http.Client) *http.Client {
	if cfg.Agent.CAFile == "" && !cfg.Agent.TLSInsecure {
		return own
	}
	c, err := gateway.AgentClient(cfg)
	if err != nil {
		return own
	}
	return c
}

// clientFor is the client of a probe of rawURL: the agent runtime's (its TLS settings) for
// the runtime's own address, doctor's for everything else.
func (d *doctorRun) clientFor(rawURL string) *http.Client {
	if d.agentHTTP == nil {
		return d.client
	}
	u, err1 := url.Parse(rawURL)
	a, err2 := url.Parse(d.cfg.AgentURL())
	if err1 != nil || err2 != nil || !strings.EqualFold(u.Scheme, a.Scheme) || !strings.EqualFold(u.Host, a.Host) {
		return d.client
	}
	return d.agentHTTP
}
