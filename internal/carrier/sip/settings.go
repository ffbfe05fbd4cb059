package sip

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/allow"
	"github.com/handset-voice/handset/internal/carrier/sip/sdp"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/registry"
)

// The settings a SIP trunk reads.
const (
	SettingListen     = "HANDSET_SIP_LISTEN"
	SettingTransports = "HANDSET_SIP_TRANSPORTS"
	SettingAllow      = "HANDSET_SIP_ALLOW"
	SettingPublicAddr = "HANDSET_SIP_PUBLIC_ADDR"
	SettingRTPPorts   = "HANDSET_SIP_RTP_PORTS"
	SettingCodecs     = "HANDSET_SIP_CODECS"
	SettingRegistrar  = "HANDSET_SIP_REGISTRAR"
	SettingTrunk      = "HANDSET_SIP_TRUNK"
	SettingUsername   = "HANDSET_SIP_USERNAME"
	SettingPassword   = "HANDSET_SIP_PASSWORD"
	// SettingSRTP and the TLS settings are in srtp.go and tls.go.
	// Digest credentials of callers the allow-list does not name (inboundauth.go).
	SettingInboundUsername = "HANDSET_SIP_INBOUND_USERNAME"
	SettingInboundPassword = "HANDSET_SIP_INBOUND_PASSWORD"
)

// Defaults of the settings.
const (
	DefaultListen     = "0.0.0.0:5060"
	DefaultTransports = "udp,tcp"
	DefaultRTPPorts   = "10000-20000"
	DefaultCodecs     = "PCMU,PCMA"
)

// settings are the settings SIP trunks bring to the configuration.
var settings = []registry.CarrierSetting{
	{Env: SettingAllow, YAML: "allow",
		Help: "The trunk's signalling hosts, the only sources whose INVITEs are answered: IP addresses, CIDR blocks or hostnames, comma-separated."},
	{Env: SettingListen, YAML: "listen", Default: DefaultListen,
		Help: "The address and port SIP signalling listens on (every transport of HANDSET_SIP_TRANSPORTS, the same port)."},
	{Env: SettingTransports, YAML: "transports", Default: DefaultTransports,
		Help: "The SIP transports to listen on, comma-separated: udp, tcp, tls (on HANDSET_SIP_TLS_LISTEN, with HANDSET_SIP_TLS_CERT and HANDSET_SIP_TLS_KEY)."},
	{Env: SettingPublicAddr, YAML: "public_addr",
		Help: "The IP address the trunk reaches Handset at, written into SDP and Contact headers (behind NAT, the public one); empty: the listening address, or the interface that routes to the internet."},
	{Env: SettingRTPPorts, YAML: "rtp_ports", Default: DefaultRTPPorts,
		Help: "The UDP port range calls' audio (RTP) uses, low-high; each call takes one even port."},
	{Env: SettingCodecs, YAML: "codecs", Default: DefaultCodecs,
		Help: "The audio codecs Handset accepts, most preferred first: PCMU, PCMA, G722 (wideband: 16 kHz audio at G.711's bit rate, for trunks that carry it end to end)."},
	{Env: SettingRegistrar, YAML: "registrar",
		Help: "A registrar to register with (a PBX, or a provider that sends calls to registered users): sip:host[:port][;transport=tcp]. Its host joins HANDSET_SIP_ALLOW."},
	{Env: SettingTrunk, YAML: "trunk",
		Help: "Where outbound calls go: the trunk's address, sip:host[:port][;transport=tcp]; calls are sent to sip:<number>@host with HANDSET_SIP_USERNAME and HANDSET_SIP_PASSWORD for its digest challenge. Empty: the registrar. Its host joins HANDSET_SIP_ALLOW."},
	{Env: SettingUsername, YAML: "username",
		Help: "The SIP user Handset registers as and answers digest challenges with."},
	{Env: SettingPassword, YAML: "password", Kind: registry.SettingSecret,
		Help: "The SIP user's password, for the registrar's digest challenges."},
	{Env: SettingSRTP, YAML: "srtp", Default: SRTPOffered,
		Help: "Encrypted media (SRTP with SDES keys): offered answers an RTP/SAVP offer with SRTP and a plain one with RTP; required refuses plain RTP offers (488) and offers only SRTP on outbound calls. Use with TLS signalling, which carries the keys."},
	tlsSettings[0], tlsSettings[1], tlsSettings[2], tlsSettings[3],
	{Env: SettingInboundUsername, YAML: "inbound_username",
		Help: "A username callers outside HANDSET_SIP_ALLOW may call with: their INVITEs are challenged (digest, 401) and admitted with the right password."},
	{Env: SettingInboundPassword, YAML: "inbound_password", Kind: registry.SettingSecret,
		Help: "The password of HANDSET_SIP_INBOUND_USERNAME."},
}

// Options are a SIP trunk's settings, read and checked.
type Options struct {
	Listen     netip.AddrPort
	Transports []string // "udp", "tcp"
	Allow      *allow.List
	// PublicAddr is the address written into SDP and Contact headers.
	PublicAddr netip.Addr
	RTPLow     int
	RTPHigh    int
	Codecs     []sdp.Codec
	// Registrar, when set, is registered with as Username (digest with Password).
	Registrar *sip.Uri
	// Trunk, when set, is where outbound calls go (else Registrar).
	Trunk              *sip.Uri
	Username, Password string
	// SRTP is SRTPOffered or SRTPRequired.
	SRTP string
	// TLSListen and TLSCert serve SIP over TLS when Transports names tls (tls.go).
	TLSListen netip.AddrPort
	TLSCert   *tls.Certificate
	// TLSRoots are the authorities trunks Handset connects to over TLS are checked
	// against; nil: the system's (HANDSET_SIP_TLS_CA).
	TLSRoots *x509.CertPool

	// InboundUsername and InboundPassword, when set, admit INVITEs from sources Allow
	// does not name that answer a digest challenge with them (inboundauth.go).
	InboundUsername, InboundPassword string

	// Session timers (RFC 4028, sessiontimer.go). MinSE is the shortest session interval
	// Handset accepts (a shorter one is answered 422); zero is DefaultMinSE, the RFC's
	// floor. SessionExpires is the interval Handset asks for when it chooses; zero is
	// DefaultSessionExpires. Clock runs the timers; nil is the real clock.
	MinSE          time.Duration
	SessionExpires time.Duration
	Clock          clock.Clock
}

// ReadOptions reads the settings; an error names the setting and what is wrong with it.
func ReadOptions(s registry.Settings) (Options, error) {
	var o Options
	var errs []error
	bad := func(setting string, err error) { errs = append(errs, fmt.Errorf("%s: %w", setting, err)) }

	listen := orDefault(s.Value(SettingListen), DefaultListen)
	ap, err := netip.ParseAddrPort(listen)
	if err != nil {
		bad(SettingListen, fmt.Errorf("%q is not an IP address and port such as %s", listen, DefaultListen))
	}
	o.Listen = ap

	for _, t := range splitList(orDefault(s.Value(SettingTransports), DefaultTransports)) {
		t = strings.ToLower(t)
		switch t {
		case "udp", "tcp", "tls":
			o.Transports = append(o.Transports, t)
		default:
			bad(SettingTransports, fmt.Errorf("%q is not a transport Handset listens on (udp, tcp, tls)", t))
		}
	}
	if len(o.Transports) == 0 && len(errs) == 0 {
		bad(SettingTransports, errors.New("names no transport"))
	}

	allowSpec := s.Value(SettingAllow)
	o.Username, o.Password = strings.TrimSpace(s.Value(SettingUsername)), s.Value(SettingPassword)
	if v := strings.TrimSpace(s.Value(SettingRegistrar)); v != "" {
		var uri sip.Uri
		if err := sip.ParseUri(v, &uri); err != nil || uri.Host == "" || (uri.Scheme != "sip" && uri.Scheme != "") {
			bad(SettingRegistrar, fmt.Errorf("%q is not a SIP address such as sip:pbx.example.com:5060", v))
		} else {
			o.Registrar = &uri
			// The registrar is the trunk's signalling host: the calls it sends are let in.
			allowSpec = strings.Trim(allowSpec+","+uri.Host, ",")
		}
		if o.Username == "" {
			bad(SettingUsername, errors.New("is needed to register with "+SettingRegistrar))
		}
	}
	if v := strings.TrimSpace(s.Value(SettingTrunk)); v != "" {
		var uri sip.Uri
		if err := sip.ParseUri(v, &uri); err != nil || uri.Host == "" || (uri.Scheme != "sip" && uri.Scheme != "") {
			bad(SettingTrunk, fmt.Errorf("%q is not a SIP address such as sip:trunk.example.com:5060", v))
		} else {
			o.Trunk = &uri
			allowSpec = strings.Trim(allowSpec+","+uri.Host, ",")
		}
	}
	if o.Allow, err = allow.Parse(allowSpec); err != nil {
		bad(SettingAllow, err)
	}

	if v := strings.TrimSpace(s.Value(SettingPublicAddr)); v != "" {
		if o.PublicAddr, err = netip.ParseAddr(v); err != nil || o.PublicAddr.IsUnspecified() {
			bad(SettingPublicAddr, fmt.Errorf("%q is not an IP address peers can send to", v))
		}
	}

	if o.RTPLow, o.RTPHigh, err = parsePortRange(orDefault(s.Value(SettingRTPPorts), DefaultRTPPorts)); err != nil {
		bad(SettingRTPPorts, err)
	}

	for _, name := range splitList(orDefault(s.Value(SettingCodecs), DefaultCodecs)) {
		switch strings.ToUpper(name) {
		case "PCMU":
			o.Codecs = append(o.Codecs, sdp.PCMU)
		case "PCMA":
			o.Codecs = append(o.Codecs, sdp.PCMA)
		case "G722":
			o.Codecs = append(o.Codecs, sdp.G722)
		default:
			bad(SettingCodecs, fmt.Errorf("%q is not a codec Handset speaks (PCMU, PCMA, G722)", name))
		}
	}
	if len(o.Codecs) == 0 && len(errs) == 0 {
		bad(SettingCodecs, errors.New("names no codec"))
	}
	if o.SRTP, err = readSRTP(s.Value(SettingSRTP)); err != nil {
		bad(SettingSRTP, err)
	}
	readTLS(s, &o, bad) // tls.go
	readTLSRoots(s, &o, bad)
	if err := readInboundAuth(s, &o); err != nil {
		errs = append(errs, err)
	}
	o.MinSE, o.SessionExpires = time.Duration(testMinSE.Load()), time.Duration(testSessionExpires.Load())
	return o, errors.Join(errs...)
}

// advertised is the address peers are told to send to: the public address when set, else
// the listening one, else the address this host routes to the internet from.
func (o Options) advertised() (netip.Addr, error) {
	if o.PublicAddr.IsValid() {
		return o.PublicAddr, nil
	}
	if a := o.Listen.Addr(); !a.IsUnspecified() {
		return a, nil
	}
	return outboundAddr()
}

// outboundAddr is the local address of the route to a public address. Connecting a UDP
// socket sends nothing: it only asks the kernel which interface it would use.
func outboundAddr() (netip.Addr, error) {
	conn, err := net.Dial("udp4", "192.0.2.1:9") // TEST-NET-1: never reached
	if err != nil {
		return netip.Addr{}, fmt.Errorf("no route to find this host's address by (set %s): %w", SettingPublicAddr, err)
	}
	defer conn.Close()
	ap, err := netip.ParseAddrPort(conn.LocalAddr().String())
	if err != nil {
		return netip.Addr{}, err
	}
	return ap.Addr(), nil
}

func parsePortRange(v string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(v), "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not a range such as %s", v, DefaultRTPPorts)
	}
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case err1 != nil || err2 != nil:
		return 0, 0, fmt.Errorf("%q is not a range such as %s", v, DefaultRTPPorts)
	case lo < 1024 || hi > 65535 || lo >= hi:
		return 0, 0, fmt.Errorf("%q: the range must lie within 1024-65535, low before high", v)
	case hi-lo < 3:
		return 0, 0, fmt.Errorf("%q holds fewer than two even ports: one call each", v)
	}
	return lo, hi, nil
}

func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func orDefault(v, def string) string {
	if strings.TrimSpace(v) == "" {
		return def
	}
	return v
}
