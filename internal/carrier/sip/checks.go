package sip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/allow"
	"github.com/handset-voice/handset/internal/carrier/sip/media"
	"github.com/handset-voice/handset/internal/carrier/sip/register"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// settingMaxCalls is how many calls a node takes at once: each SIP call holds an RTP port.
const settingMaxCalls = "HANDSET_MAX_CALLS"

// Checks are doctor's checks of a SIP trunk: its settings read, the signalling port is
// free on every transport (or held by a running Handset), the advertised address can be
// reached from the trunk's hosts, the RTP range holds a port for every call, the
// allow-list's hostnames resolve, the codecs, and a registration succeeds when a
// registrar is set. One Skip when no trunk is configured.
func Checks(p registry.Probe) []doctor.Check {
	return trunkChecks(p.Section, p.Settings, net.DefaultResolver)
}

// trunkChecks are Checks with the resolver the allow-list's hostnames are looked up with.
func trunkChecks(section string, s registry.Settings, resolver allow.Resolver) []doctor.Check {
	if s.Value(SettingAllow) == "" && s.Value(SettingRegistrar) == "" {
		return []doctor.Check{doctor.Fixed(section, "sip trunk", doctor.SkipResult(
			"a SIP trunk is not configured ("+SettingAllow+" and "+SettingRegistrar+" are empty)"))}
	}
	c := &checker{settings: s, resolver: resolver}
	c.opts, c.optsErr = ReadOptions(s)
	return []doctor.Check{
		doctor.Local(section, "sip settings", c.readSettings),
		doctor.Local(section, "sip listen port", c.needOptions(c.listenPort)),
		doctor.Local(section, "sip public address", c.needOptions(c.publicAddr)),
		doctor.Local(section, "rtp ports", c.needOptions(c.rtpPorts)),
		doctor.Net(section, "sip allow-list", c.needOptions(c.allowHosts)),
		doctor.Local(section, "sip codecs", c.needOptions(c.codecs)),
		doctor.Local(section, "sip tls certificate", c.needOptions(c.tlsCertificate)),
		doctor.Local(section, "sip tls port", c.needOptions(c.tlsListenPort)),
		doctor.Net(section, "sip trunk tls", c.needOptions(c.trunkTLS)),
		doctor.Net(section, "sip registration", c.needOptions(c.registration)),
	}
}

// checker holds what the trunk's checks share: the settings, read once.
type checker struct {
	settings registry.Settings
	resolver allow.Resolver
	opts     Options
	optsErr  error
}

// needOptions runs check only when the settings read: the settings check says what is
// wrong with them.
func (c *checker) needOptions(check func(context.Context) doctor.Result) func(context.Context) doctor.Result {
	return func(ctx context.Context) doctor.Result {
		if c.optsErr != nil {
			return doctor.SkipResult("not checked (see sip settings)")
		}
		return check(ctx)
	}
}

func (c *checker) readSettings(context.Context) doctor.Result {
	if c.optsErr != nil {
		return doctor.FailResult(strings.ReplaceAll(c.optsErr.Error(), "\n", "; "),
			"correct the settings named ("+DocsPage+" describes each)")
	}
	o := c.opts
	detail := fmt.Sprintf("listen %s on %s, RTP %d-%d", o.Listen, strings.Join(o.Transports, " and "), o.RTPLow, o.RTPHigh)
	if o.Registrar != nil {
		detail += ", registering as " + o.Username + " at " + o.Registrar.String()
	}
	return doctor.OKResult(detail)
}

// listenPort binds the signalling port on every transport, as serve will. A port in use
// is asked who holds it with an OPTIONS: a running Handset is no surprise, anything else
// keeps serve from starting.
func (c *checker) listenPort(ctx context.Context) doctor.Result {
	addr := c.opts.Listen
	if addr.Port() == 0 {
		return doctor.OKResult("port 0: serve takes a free port at each start (the trunk must learn it, as a registrar does)")
	}
	var held []string
	for _, transport := range c.opts.Transports {
		if transport == "tls" {
			continue // on its own port: see the tls certificate check
		}
		err := bindAndRelease(transport, addr)
		switch {
		case err == nil:
		case errors.Is(err, syscall.EADDRINUSE):
			held = append(held, transport)
		case errors.Is(err, syscall.EACCES):
			return doctor.FailResult(fmt.Sprintf("cannot listen on %s over %s: %v", addr, transport, err),
				"ports below 1024 need root or CAP_NET_BIND_SERVICE: set "+SettingListen+" to a port such as 5060")
		default:
			return doctor.FailResult(fmt.Sprintf("cannot listen on %s over %s: %v", addr, transport, err),
				"set "+SettingListen+" to an address of this machine (0.0.0.0 listens on all of them) and a free port")
		}
	}
	if len(held) == 0 {
		return doctor.OKResult(fmt.Sprintf("%s is free over %s", addr, strings.Join(c.opts.Transports, " and ")))
	}
	where := fmt.Sprintf("port %d (%s)", addr.Port(), strings.Join(held, ", "))
	who := identify(ctx, reachableAt(addr), held[0], c.settings.Value(settingHTTPListen))
	if who.handset {
		return doctor.WarnResult(where+" is in use by a running Handset: "+who.said,
			"nothing to do when that is this configuration's `handset serve`; another beside it needs its own "+SettingListen+" port")
	}
	return doctor.FailResult(where+" is in use by another program: "+who.said,
		fmt.Sprintf("stop that program (`ss -lntup 'sport = :%d'` names it), or set %s to a free port and point the trunk at it", addr.Port(), SettingListen))
}

// bindAndRelease listens on addr over transport and lets go at once.
func bindAndRelease(transport string, addr netip.AddrPort) error {
	if transport == "tcp" {
		ln, err := net.Listen("tcp", addr.String())
		if err != nil {
			return err
		}
		return ln.Close()
	}
	conn, err := net.ListenPacket("udp", addr.String())
	if err != nil {
		return err
	}
	return conn.Close()
}

// reachableAt is where this machine reaches a listener on addr: loopback for a wildcard.
func reachableAt(addr netip.AddrPort) netip.AddrPort {
	switch ip := addr.Addr(); {
	case ip.IsUnspecified() && ip.Is6():
		return netip.AddrPortFrom(netip.IPv6Loopback(), addr.Port())
	case ip.IsUnspecified():
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), addr.Port())
	}
	return addr
}

// publicAddr warns when the address written into SDP and Contact headers is one the
// trunk's public hosts cannot send to: behind NAT, its answers and audio never arrive.
func (c *checker) publicAddr(context.Context) doctor.Result {
	adv, err := c.opts.advertised()
	if err != nil {
		return doctor.FailResult(err.Error(), "set "+SettingPublicAddr+" to the address the trunk reaches this machine at")
	}
	source := SettingPublicAddr
	switch {
	case c.opts.PublicAddr.IsValid():
	case !c.opts.Listen.Addr().IsUnspecified():
		source = "the address of " + SettingListen + "; " + SettingPublicAddr + " is not set"
	default:
		source = "this machine's address on its route to the internet; " + SettingPublicAddr + " is not set"
	}
	detail := fmt.Sprintf("%s (%s)", adv, source)
	public := publicHosts(c.settings.Value(SettingAllow), c.opts)
	if !isPublic(adv) && len(public) > 0 {
		return doctor.WarnResult(fmt.Sprintf("the advertised address %s is not public, but the trunk's hosts are (%s): behind NAT the trunk cannot send Handset its ACKs or audio",
			detail, strings.Join(public, ", ")),
			fmt.Sprintf("set %s to this network's public IP address, and forward port %d and the UDP range %d-%d to this machine",
				SettingPublicAddr, c.opts.Listen.Port(), c.opts.RTPLow, c.opts.RTPHigh))
	}
	return doctor.OKResult(detail)
}

// publicHosts are the allow-list's entries and the registrar's host that are on the
// internet: public addresses and blocks, and hostnames (a trunk provider's are).
func publicHosts(allowSpec string, o Options) []string {
	entries := splitList(allowSpec)
	if o.Registrar != nil {
		entries = append(entries, o.Registrar.Host)
	}
	var out []string
	for _, e := range entries {
		if p, err := netip.ParsePrefix(e); err == nil {
			if isPublic(p.Addr()) {
				out = append(out, e)
			}
			continue
		}
		if a, err := netip.ParseAddr(e); err == nil {
			if isPublic(a) {
				out = append(out, e)
			}
			continue
		}
		if host := strings.ToLower(strings.TrimSuffix(e, ".")); host != "localhost" && !strings.HasSuffix(host, ".localhost") {
			out = append(out, e)
		}
	}
	return out
}

// cgnat is the shared address space of carrier-grade NAT (RFC 6598): not reachable from
// the internet either.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// isPublic reports whether a is an address the internet can send to.
func isPublic(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsGlobalUnicast() && !a.IsPrivate() && !cgnat.Contains(a)
}

// rtpPorts binds one port of the range as a call would, and counts the range against the
// calls a node takes at once.
func (c *checker) rtpPorts(context.Context) doctor.Result {
	o := c.opts
	ports, err := media.NewPorts(rtpBindAddr(o), o.RTPLow, o.RTPHigh)
	if err != nil {
		return doctor.FailResult(err.Error(), "set "+SettingRTPPorts+" to a range such as "+DefaultRTPPorts)
	}
	conn, err := ports.Listen()
	if err != nil {
		return doctor.FailResult(err.Error(),
			"every port of the range is taken: set "+SettingRTPPorts+" to a range no other program uses")
	}
	_ = conn.Close()
	lo, hi := ports.Range()
	even := (hi-lo)/2 + 1
	detail := fmt.Sprintf("%d-%d: %d even ports, one a call", o.RTPLow, o.RTPHigh, even)
	if calls := c.settings.Int(settingMaxCalls); calls > even {
		return doctor.WarnResult(fmt.Sprintf("%s, fewer than %s (%d): calls beyond %d are refused", detail, settingMaxCalls, calls, even),
			fmt.Sprintf("widen %s to %d-%d, or lower %s", SettingRTPPorts, lo, lo+2*calls-1, settingMaxCalls))
	}
	return doctor.OKResult(detail)
}

// allowHosts resolves the allow-list's hostnames: one that does not resolve lets none of
// its calls in.
func (c *checker) allowHosts(ctx context.Context) doctor.Result {
	if c.opts.Allow.Empty() {
		return doctor.WarnResult(SettingAllow+" is empty: only calls with digest credentials are answered",
			"set "+SettingAllow+" to the trunk's signalling hosts")
	}
	if err := c.opts.Allow.Refresh(ctx, c.resolver); err != nil {
		return doctor.FailResult(strings.ReplaceAll(err.Error(), "\n", "; ")+": INVITEs from that host are refused",
			"check the hostnames in "+SettingAllow+" (the trunk provider's documentation lists its signalling hosts), or give their addresses")
	}
	return doctor.OKResult(c.opts.Allow.String())
}

// codecs warns when only one of the two G.711 codecs is offered: a trunk that offers only
// the other is refused every call. G.722 does not count: trunks that offer it offer G.711 too.
func (c *checker) codecs(context.Context) doctor.Result {
	names := make([]string, len(c.opts.Codecs))
	for i, codec := range c.opts.Codecs {
		names[i] = codec.Name
	}
	detail := strings.Join(names, ", ") + ", with telephone-event for keypad digits"
	if len(names) == 1 {
		return doctor.WarnResult(detail+": a call whose offer lacks "+names[0]+" is refused (488)",
			"set "+SettingCodecs+" to "+DefaultCodecs+" unless the trunk offers only "+names[0])
	}
	if missing := missingG711(names); missing != "" {
		return doctor.WarnResult(detail+": a call whose offer has only "+missing+" is refused (488)",
			"add "+missing+" to "+SettingCodecs+" unless the trunk never offers it alone")
	}
	return doctor.OKResult(detail)
}

// identifyWait bounds the OPTIONS that asks who holds the signalling port.
const identifyWait = 2 * time.Second

// holder is what answered on a port in use: whether it is a Handset, and what it said.
type holder struct {
	handset bool
	said    string
}

// identify asks the listener at addr over transport who it is with an OPTIONS. A Handset
// answers with the methods it takes (or names itself in User-Agent or Server); one that
// does not allow this machine answers 403, as other servers may, and is told by its HTTP
// server at httpListen.
func identify(ctx context.Context, at netip.AddrPort, transport, httpListen string) holder {
	ctx, cancel := context.WithTimeout(ctx, identifyWait)
	defer cancel()
	probe, err := newProbeUA(at.Addr(), transport)
	if err != nil {
		return holder{said: "doctor could not ask it who it is: " + err.Error()}
	}
	defer probe.Close()
	uri := sip.Uri{Scheme: "sip", Host: at.Addr().String(), Port: int(at.Port())}
	if transport == "tcp" {
		uri.UriParams = sip.NewParams()
		uri.UriParams.Add("transport", "tcp")
	}
	res, err := probe.client.Do(ctx, sip.NewRequest(sip.OPTIONS, uri))
	if err != nil {
		return holder{said: "it does not answer SIP OPTIONS"}
	}
	said := fmt.Sprintf("it answered OPTIONS %d %s", res.StatusCode, voice.Clip(res.Reason, 40))
	for _, name := range []string{"User-Agent", "Server"} {
		if h := res.GetHeader(name); h != nil {
			said += fmt.Sprintf(", %s: %s", name, voice.Clip(h.Value(), 60))
			if strings.Contains(strings.ToLower(h.Value()), "handset") {
				return holder{handset: true, said: said}
			}
		}
	}
	if h := res.GetHeader("Allow"); res.StatusCode == sip.StatusOK && h != nil && h.Value() == allowedMethods {
		return holder{handset: true, said: said + " with the methods Handset takes"}
	}
	if res.StatusCode == sip.StatusForbidden {
		// A Handset refuses a source its allow-list does not name, this machine included,
		// and says nothing of itself: its HTTP server on the same machine tells.
		if servesHandset(ctx, httpListen) {
			return holder{handset: true, said: said + " (refusing this machine, which " + SettingAllow +
				" does not name), and a Handset answers on " + settingHTTPListen}
		}
		said += " (a Handset whose " + SettingAllow + " does not name this machine answers so too)"
	}
	return holder{said: said}
}

// settingHTTPListen is where serve's HTTP server listens; its /healthz answers "ok".
const settingHTTPListen = "HANDSET_LISTEN"

// servesHandset reports whether a Handset's HTTP server answers at listen (host:port, a
// wildcard host meaning this machine).
func servesHandset(ctx context.Context, listen string) bool {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if ip, err := netip.ParseAddr(host); host == "" || (err == nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	client := &http.Client{Timeout: identifyWait}
	a, err := doctor.Get(ctx, client, "http://"+net.JoinHostPort(host, port)+"/healthz", nil)
	return err == nil && a.Status == http.StatusOK && strings.TrimSpace(string(a.Body)) == "ok"
}

// probeUA is a SIP user agent of doctor's own for one check: a UDP socket on an ephemeral
// port of a local address, read by a server for the answers, and a client that sends UDP
// requests from it (so answers come back to it, as a registrar sends them). A TCP or TLS
// connection leaves from a port of its own: binding it to the UDP socket's number fails
// whenever some TCP socket already holds that number.
type probeUA struct {
	ua     *sipgo.UserAgent
	client *sipgo.Client
	conn   net.PacketConn
	addr   netip.AddrPort
	served chan struct{}
}

func newProbeUA(local netip.Addr, transport string) (*probeUA, error) {
	quiet := slog.New(slog.DiscardHandler)
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("Handset doctor"), sipgo.WithUserAgentHostname(local.String()),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(quiet)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(quiet)))
	if err != nil {
		return nil, err
	}
	srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(quiet))
	if err != nil {
		_ = ua.Close()
		return nil, err
	}
	conn, err := net.ListenPacket("udp", netip.AddrPortFrom(local, 0).String())
	if err != nil {
		_ = ua.Close()
		return nil, err
	}
	p := &probeUA{ua: ua, conn: conn, addr: conn.LocalAddr().(*net.UDPAddr).AddrPort(), served: make(chan struct{})}
	go func() { defer close(p.served); _ = srv.ServeUDP(conn) }()
	if err := waitListening(ua, "udp", conn.LocalAddr().String()); err != nil {
		p.Close()
		return nil, err
	}
	opts := []sipgo.ClientOption{sipgo.WithClientHostname(local.String()), sipgo.WithClientPort(int(p.addr.Port())),
		sipgo.WithClientLogger(quiet)}
	if transport == "" || strings.EqualFold(transport, "udp") {
		opts = append(opts, sipgo.WithClientConnectionAddr(conn.LocalAddr().String()))
	}
	p.client, err = sipgo.NewClient(ua, opts...)
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Close closes the socket and the user agent and waits for the server to stop.
func (p *probeUA) Close() {
	_ = p.conn.Close()
	_ = p.ua.Close()
	<-p.served
}

// registrationExpires is what the check's binding asks for: if its removal is lost, it
// lapses soon.
const registrationExpires = 60 * time.Second

// registration registers once with the registrar as serve would, from a socket of its
// own (a running Handset's binding has another Contact and is left alone), and removes
// the binding at once.
func (c *checker) registration(ctx context.Context) doctor.Result {
	reg := c.opts.Registrar
	if reg == nil {
		return doctor.SkipResult(SettingRegistrar + " is not set: the trunk sends calls to Handset's address (an IP-authenticated trunk)")
	}
	unreachable := func(err error) doctor.Result {
		return doctor.FailResult(fmt.Sprintf("cannot reach the registrar %s: %v", reg, err),
			"check "+SettingRegistrar+" (host, port, ;transport=tcp) and that this machine reaches it (a firewall, DNS)")
	}
	local, err := localAddrTowards(ctx, reg)
	if err != nil {
		return unreachable(err)
	}
	tp, _ := reg.UriParams.Get("transport")
	probe, err := newProbeUA(local, tp)
	if err != nil {
		return doctor.FailResult("doctor could not open a SIP socket: "+err.Error(), "check this machine's network settings")
	}
	defer probe.Close()
	// Half of what is left for the REGISTER, the rest for its removal.
	timeout := 5 * time.Second
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline) / 2
	}
	contact := sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: "handset", Host: local.String(), Port: int(probe.addr.Port())}}
	if tp != "" {
		contact.Address.UriParams = sip.NewParams()
		contact.Address.UriParams.Add("transport", tp)
	}
	changes := make(chan register.Status, 1)
	r := register.New(probe.client, register.Options{
		Registrar: *reg, AOR: sip.Uri{Scheme: "sip", User: c.opts.Username, Host: reg.Host}, Contact: contact,
		Username: c.opts.Username, Password: c.opts.Password, Expires: registrationExpires,
		Timeout: timeout, RetryMin: time.Hour,
		OnChange: func(s register.Status) {
			select {
			case changes <- s:
			default:
			}
		},
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	var st register.Status
	select {
	case st = <-changes:
	case <-ctx.Done():
		st.Err = fmt.Errorf("%w: no answer", register.ErrUnreachable)
	}
	stop()
	removeErr := <-done
	who := c.opts.Username + " at " + reg.String()
	switch {
	case errors.Is(st.Err, register.ErrCredentials):
		return doctor.FailResult(fmt.Sprintf("the registrar refused the credentials of %s: %v", who, st.Err),
			"set "+SettingUsername+" and "+SettingPassword+" to the SIP user's name and password on the registrar")
	case errors.Is(st.Err, register.ErrUnreachable):
		return unreachable(st.Err)
	case st.Err != nil:
		return doctor.FailResult(fmt.Sprintf("the registrar refused to register %s: %v", who, st.Err),
			"check that "+SettingUsername+" is a user the registrar knows, and "+SettingRegistrar)
	case removeErr != nil:
		return doctor.WarnResult(fmt.Sprintf("registered %s (granted %s), but removing doctor's binding failed: %v", who, st.Granted, removeErr),
			fmt.Sprintf("nothing to do: it lapses within %s", registrationExpires))
	}
	return doctor.OKResult(fmt.Sprintf("registered %s (granted %s), then removed doctor's binding", who, st.Granted))
}

// localAddrTowards is this machine's address on the route to the registrar. Connecting a
// UDP socket sends nothing.
func localAddrTowards(ctx context.Context, reg *sip.Uri) (netip.Addr, error) {
	port := reg.Port
	if port == 0 {
		port = 5060
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "udp", net.JoinHostPort(reg.Host, strconv.Itoa(port)))
	if err != nil {
		return netip.Addr{}, err
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap(), nil
}
