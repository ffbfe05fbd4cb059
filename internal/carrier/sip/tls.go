package sip

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
)

// SIP over TLS (RFC 3261 26.2, "sips"): the trunk's signalling, and with it the SRTP keys
// its SDP carries, encrypted on the wire. It listens on a port of its own (5061 by
// custom), behind the same allow-list gate as TCP: a stranger's connection is closed
// when it is accepted, before the handshake, so a scanner costs no public-key work.

// The TLS settings.
const (
	SettingTLSListen = "HANDSET_SIP_TLS_LISTEN"
	SettingTLSCert   = "HANDSET_SIP_TLS_CERT"
	SettingTLSKey    = "HANDSET_SIP_TLS_KEY"
	SettingTLSCA     = "HANDSET_SIP_TLS_CA"
)

// DefaultTLSListen is where SIP over TLS listens.
const DefaultTLSListen = "0.0.0.0:5061"

// maxPEM bounds a certificate or key file: a chain of a few certificates is kilobytes.
const maxPEM = 1 << 20

// tlsSettings are the settings SIP over TLS brings to the configuration.
var tlsSettings = []registry.CarrierSetting{
	{Env: SettingTLSListen, YAML: "tls_listen", Default: DefaultTLSListen,
		Help: "The address and port SIP over TLS listens on, when HANDSET_SIP_TRANSPORTS names tls."},
	{Env: SettingTLSCert, YAML: "tls_cert",
		Help: "The PEM file of Handset's TLS certificate (and its chain) for SIP over TLS; needed when HANDSET_SIP_TRANSPORTS names tls."},
	{Env: SettingTLSKey, YAML: "tls_key",
		Help: "The PEM file of the private key of HANDSET_SIP_TLS_CERT."},
	{Env: SettingTLSCA, YAML: "tls_ca",
		Help: "A PEM file of the certificate authorities Handset trusts when it connects to a trunk or registrar over TLS (a URI with ;transport=tls); empty: the system's."},
}

// readTLSRoots reads HANDSET_SIP_TLS_CA into o: the authorities a trunk's certificate must
// chain to when Handset connects to it over TLS. Without it, the system's are trusted.
func readTLSRoots(s registry.Settings, o *Options, bad func(setting string, err error)) {
	path := strings.TrimSpace(s.Value(SettingTLSCA))
	if path == "" {
		return
	}
	pem, err := readPEM(path)
	if err != nil {
		bad(SettingTLSCA, err)
		return
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		bad(SettingTLSCA, fmt.Errorf("%s holds no PEM certificate", path))
		return
	}
	o.TLSRoots = pool
}

// clientTLS is the TLS configuration Handset connects to trunks with: their certificate
// checked against roots (nil: the system's) and the host it was asked for, TLS 1.2 at
// least.
func clientTLS(roots *x509.CertPool) *tls.Config {
	return &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
}

// readTLS reads the TLS settings into o when o.Transports names tls: the listening address
// and the certificate, loaded and matched with its key.
func readTLS(s registry.Settings, o *Options, bad func(setting string, err error)) {
	wanted := false
	for _, t := range o.Transports {
		wanted = wanted || t == "tls"
	}
	if !wanted {
		return
	}
	listen := orDefault(s.Value(SettingTLSListen), DefaultTLSListen)
	ap, err := netip.ParseAddrPort(strings.TrimSpace(listen))
	if err != nil {
		bad(SettingTLSListen, fmt.Errorf("%q is not an IP address and port such as %s", listen, DefaultTLSListen))
	}
	o.TLSListen = ap
	certFile, keyFile := strings.TrimSpace(s.Value(SettingTLSCert)), strings.TrimSpace(s.Value(SettingTLSKey))
	certPEM, certErr := readPEM(certFile)
	if certErr != nil {
		bad(SettingTLSCert, certErr)
	}
	keyPEM, keyErr := readPEM(keyFile)
	if keyErr != nil {
		bad(SettingTLSKey, keyErr)
	}
	if certErr != nil || keyErr != nil {
		return
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		bad(SettingTLSCert, fmt.Errorf("%s with the key in %s: %w", certFile, keyFile, err))
		return
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			bad(SettingTLSCert, fmt.Errorf("%s: %w", certFile, err))
			return
		}
	}
	o.TLSCert = &cert
}

// readPEM reads a PEM file of at most maxPEM bytes.
func readPEM(path string) ([]byte, error) {
	if path == "" {
		return nil, fmt.Errorf("is needed for SIP over TLS (%s names tls)", SettingTransports)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPEM+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxPEM {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a PEM certificate or key", path, maxPEM)
	}
	return b, nil
}

// serverTLS is the TLS configuration SIP over TLS serves with: the certificate, TLS 1.2
// at least.
func serverTLS(cert *tls.Certificate) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
}

// bindTLS binds the TLS listener and returns the function that serves it: the gate closes
// strangers' connections before the TLS layer sees them.
func (t *Trunk) bindTLS() (func() error, error) {
	if t.opts.TLSCert == nil {
		return nil, fmt.Errorf("%s: no certificate for SIP over TLS", SettingTLSCert)
	}
	addr := t.opts.TLSListen
	if !addr.IsValid() {
		addr = netip.MustParseAddrPort(DefaultTLSListen)
	}
	ln, err := net.Listen("tcp", addr.String())
	if err != nil {
		return nil, fmt.Errorf("%s: SIP over TLS on %s: %w", SettingTLSListen, addr, err)
	}
	t.closers = append(t.closers, ln.Close)
	t.tlsPort = uint16(ln.Addr().(*net.TCPAddr).Port)
	secured := tls.NewListener(&gatedListener{Listener: ln, trunk: t, transport: "tls"}, serverTLS(t.opts.TLSCert))
	return func() error { return t.srv.ServeTLS(secured) }, nil
}

// contactFor is the Contact Handset gives in a dialog that req starts: a request that
// came over TLS gets the TLS port and transport=tls, so the peer's next requests in the
// dialog come the same way.
func (t *Trunk) contactFor(req *sip.Request) sip.ContactHeader {
	return t.contactOver(req.Transport())
}

// contactOver is Handset's Contact for a dialog on transport: its TLS listener for "tls"
// when it has one, else the listening address.
func (t *Trunk) contactOver(transport string) sip.ContactHeader {
	if !strings.EqualFold(transport, "tls") || t.tlsPort == 0 {
		return t.contact
	}
	c := t.contact
	c.Address.Port = int(t.tlsPort)
	c.Address.UriParams = sip.NewParams()
	c.Address.UriParams.Add("transport", "tls")
	return c
}

// TLSAddr is where peers reach SIP over TLS: the advertised address and the TLS port; not
// valid when the trunk does not serve TLS.
func (t *Trunk) TLSAddr() netip.AddrPort {
	if t.tlsPort == 0 {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(t.addr.Addr(), t.tlsPort)
}

// tlsExpiryWarning is how long before the certificate expires doctor warns.
const tlsExpiryWarning = 21 * 24 * time.Hour

// tlsCertificate is doctor's check of the TLS certificate: read and matched with its key
// (ReadOptions did that), valid now, and not about to expire.
func (c *checker) tlsCertificate(context.Context) doctor.Result {
	cert := c.opts.TLSCert
	if cert == nil {
		return doctor.SkipResult("SIP over TLS is off (" + SettingTransports + " does not name tls)")
	}
	leaf := cert.Leaf
	detail := fmt.Sprintf("%s, valid until %s", leaf.Subject.String(), leaf.NotAfter.UTC().Format(time.DateOnly))
	if len(leaf.DNSNames) > 0 {
		detail += ", for " + strings.Join(leaf.DNSNames, ", ")
	}
	now := time.Now()
	switch {
	case now.After(leaf.NotAfter):
		return doctor.FailResult(detail+": expired", "renew the certificate in "+c.settings.Value(SettingTLSCert))
	case now.Before(leaf.NotBefore):
		return doctor.FailResult(detail+": not valid before "+leaf.NotBefore.UTC().Format(time.RFC3339),
			"check this machine's clock, or the certificate's dates")
	case leaf.NotAfter.Sub(now) < tlsExpiryWarning:
		return doctor.WarnResult(detail+": expires within three weeks", "renew the certificate in "+c.settings.Value(SettingTLSCert))
	}
	return doctor.OKResult(detail)
}

// trunkTLS is doctor's check of the trunk Handset calls (or the registrar) over TLS: a
// handshake, its certificate checked as a call's would be, and whose it is.
func (c *checker) trunkTLS(ctx context.Context) doctor.Result {
	target := c.opts.Trunk
	if target == nil {
		target = c.opts.Registrar
	}
	if target == nil || targetTransport(*target) != "tls" {
		return doctor.SkipResult("Handset does not connect to a trunk over TLS (" + SettingTrunk + " and " + SettingRegistrar + " name no ;transport=tls)")
	}
	port := target.Port
	if port == 0 {
		port = 5061
	}
	addr := net.JoinHostPort(target.Host, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conf := clientTLS(c.opts.TLSRoots)
	conf.ServerName = target.Host
	conn, err := (&tls.Dialer{Config: conf}).DialContext(ctx, "tcp", addr)
	if err != nil {
		var unknown x509.UnknownAuthorityError
		if errors.As(err, &unknown) {
			return doctor.FailResult(addr+": its certificate is signed by an authority Handset does not trust: "+err.Error(),
				"set "+SettingTLSCA+" to the PEM file of the authority that signed it (the trunk's provider or your PBX's)")
		}
		return doctor.FailResult(addr+": "+err.Error(), "check that the trunk takes SIP over TLS on that port, and that its certificate names "+target.Host)
	}
	defer conn.Close()
	leaf := conn.(*tls.Conn).ConnectionState().PeerCertificates[0]
	trusted := "the system's authorities"
	if c.opts.TLSRoots != nil {
		trusted = SettingTLSCA
	}
	return doctor.OKResult(fmt.Sprintf("%s: %s, valid until %s, trusted through %s", addr, leaf.Subject.String(),
		leaf.NotAfter.UTC().Format(time.DateOnly), trusted))
}

// sameConnection routes an in-dialog request of a call whose INVITE came over TLS back
// over the connection the INVITE came by (RFC 5923's reuse). The peer's Contact names its
// own listener, which a phone or a trunk behind NAT may not have, or whose certificate
// nobody vouches for; the connection the peer opened is the one path known to work.
func sameConnection(req, invite *sip.Request) {
	if strings.EqualFold(invite.Transport(), "tls") {
		req.SetTransport(invite.Transport())
		req.SetDestination(invite.Source())
	}
}

// byeOf is how Handset hangs up an inbound call: its dialog's BYE, over the INVITE's
// connection when that was TLS.
func byeOf(dialog *sipgo.DialogServerSession) func(context.Context) error {
	invite := dialog.InviteRequest
	if !strings.EqualFold(invite.Transport(), "tls") {
		return dialog.Bye
	}
	return func(ctx context.Context) error {
		bye := sip.NewRequest(sip.BYE, invite.Contact().Address)
		sameConnection(bye, invite)
		return dialog.WriteBye(ctx, bye)
	}
}

// tlsListenPort is doctor's check that the TLS port can be had. A port in use may be this
// configuration's running `handset serve`: a warning, not a failure.
func (c *checker) tlsListenPort(context.Context) doctor.Result {
	if c.opts.TLSCert == nil {
		return doctor.SkipResult("SIP over TLS is off (" + SettingTransports + " does not name tls)")
	}
	addr := c.opts.TLSListen
	if addr.Port() == 0 {
		return doctor.OKResult("port 0: serve takes a free port at each start")
	}
	err := bindAndRelease("tcp", addr)
	switch {
	case err == nil:
		return doctor.OKResult(addr.String() + " is free for SIP over TLS")
	case errors.Is(err, syscall.EADDRINUSE):
		return doctor.WarnResult(addr.String()+" is in use: by a running Handset, or another program",
			fmt.Sprintf("nothing to do when it is this configuration's `handset serve`; else free the port (`ss -lntp 'sport = :%d'` names its holder) or set %s", addr.Port(), SettingTLSListen))
	}
	return doctor.FailResult(fmt.Sprintf("cannot listen on %s for SIP over TLS: %v", addr, err),
		"set "+SettingTLSListen+" to an address of this machine and a free port (below 1024 needs root or CAP_NET_BIND_SERVICE)")
}
