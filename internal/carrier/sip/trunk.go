package sip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/sip/allow"
	"github.com/handset-voice/handset/internal/carrier/sip/dial"
	"github.com/handset-voice/handset/internal/carrier/sip/media"
	"github.com/handset-voice/handset/internal/carrier/sip/register"
)

// maxMessage bounds a SIP message. A call's INVITE with its SDP is a few kilobytes; the
// parser refuses anything larger before it is read into memory.
const maxMessage = 16 << 10

// allowRefresh is how often the allow-list's hostnames are resolved again.
const allowRefresh = 5 * time.Minute

// sendBeats is how many goroutines tick the calls' RTP, spread over the 20 ms: one every
// half millisecond, each with a fortieth of the calls. A beat's pass sends its calls'
// packets one after another, so the fewer it carries the less its last call waits: at
// 500 calls on one core, 40 beats sent the median packet 0.1 ms after its time, 10 beats
// 0.4 ms. A beat that wakes with nothing due costs a timer and a switch.
const sendBeats = 40

// Trunk serves the calls of one SIP trunk: it listens for signalling, admits the INVITEs
// of the sources the allow-list names, and gives each call its media port.
type Trunk struct {
	opts   Options
	in     carrier.Inbound
	log    *slog.Logger
	ua     *sipgo.UserAgent
	srv    *sipgo.Server
	client *sipgo.Client // requests from the listening socket (UDP)
	ports  *media.Ports
	// sendClock ticks every call's RTP together (media.Ticker): a goroutine woken per
	// call per packet was a tenth of the CPU at hundreds of calls.
	sendClock *media.Ticker
	// streamClient opens connections of its own (TCP, TLS) for calls and registrations.
	streamClient *sipgo.Client
	refuser      *allow.Refuser
	// auth checks callers outside the allow-list (inboundauth.go); nil without credentials.
	auth *inboundAuth
	// addr is where peers send signalling and media: the advertised address, and the port
	// the listeners bound.
	addr    netip.AddrPort
	contact sip.ContactHeader
	// answerAs and answerAsTLS build inbound calls' dialogs (invite.go), made once: a
	// dialog only reads them.
	answerAs, answerAsTLS *sipgo.DialogUA
	dialogs               *dialogs
	// udpAddr is the UDP listener's local address, which requests are sent from.
	udpAddr string
	// tlsPort is the TLS listener's port; 0 without one (tls.go).
	tlsPort uint16

	stop    context.CancelFunc
	serving sync.WaitGroup
	closers []func() error

	// outDialogs are the dialogs of calls Handset placed, for the requests the callee
	// sends in them; placed are those calls by reference.
	outDialogs *dial.Dialogs
	placedMu   sync.Mutex
	placed     map[string]*placed

	// registration is the binding at HANDSET_SIP_REGISTRAR; nil without one. Its own
	// context outlives stop so that Close can un-register before the sockets close.
	registration *register.Registration
	unregister   context.CancelFunc
	registered   chan struct{} // closed when the registration's Run has returned

	bridges bridges // transfers Handset bridged itself (bridge.go)
}

// Start listens on every transport of opts and serves until Close.
func Start(opts Options, in carrier.Inbound) (*Trunk, error) {
	log := in.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("carrier", Name)
	advertised, err := opts.advertised()
	if err != nil {
		return nil, err
	}
	ports, err := media.NewPorts(rtpBindAddr(opts), opts.RTPLow, opts.RTPHigh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SettingRTPPorts, err)
	}
	t := &Trunk{
		opts: opts, in: in, log: log, ports: ports, sendClock: media.NewTicker(nil, sendBeats),
		refuser: allow.NewRefuser(allow.RefuserConfig{}),
	}
	if t.auth, err = newInboundAuth(opts); err != nil {
		return nil, err
	}
	t.dialogs = newDialogs()
	t.outDialogs, t.placed = dial.NewDialogs(), map[string]*placed{}
	parser := sip.NewParser()
	parser.MaxMessageLength = maxMessage
	quiet := quietLogger(log)
	t.ua, err = sipgo.NewUA(
		sipgo.WithUserAgent("Handset"),
		sipgo.WithUserAgentHostname(advertised.String()),
		sipgo.WithUserAgentParser(parser),
		sipgo.WithUserAgenTLSConfig(clientTLS(opts.TLSRoots)),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerReadFilter(t.gate), sip.WithTransportLayerLogger(quiet)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(quiet)),
	)
	if err != nil {
		return nil, fmt.Errorf("sip: %w", err)
	}
	if t.srv, err = sipgo.NewServer(t.ua, sipgo.WithServerLogger(quiet)); err != nil {
		_ = t.ua.Close()
		return nil, fmt.Errorf("sip: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.stop = cancel
	// Bind every socket first, then make what the handlers use, then serve: a request
	// that arrives at once finds everything in place.
	port, serves, err := t.bind()
	if err != nil {
		t.Close()
		return nil, err
	}
	t.addr = netip.AddrPortFrom(advertised, port)
	// Requests Handset sends (BYE) leave from the listening socket, as peers expect of a
	// UDP user agent, with the advertised address in their Via.
	clientOpts := []sipgo.ClientOption{sipgo.WithClientHostname(advertised.String()), sipgo.WithClientPort(int(port)),
		sipgo.WithClientLogger(quiet)}
	if t.udpAddr != "" {
		clientOpts = append(clientOpts, sipgo.WithClientConnectionAddr(t.udpAddr))
	}
	if t.client, err = sipgo.NewClient(t.ua, clientOpts...); err != nil {
		t.Close()
		return nil, fmt.Errorf("sip: %w", err)
	}
	// A connection Handset opens (TCP, TLS) leaves from a port of its own: the listening
	// port is taken by the TCP listener.
	if t.streamClient, err = sipgo.NewClient(t.ua, sipgo.WithClientHostname(advertised.String()), sipgo.WithClientLogger(quiet)); err != nil {
		t.Close()
		return nil, fmt.Errorf("sip: %w", err)
	}
	t.contact = sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: "handset", Host: advertised.String(), Port: int(port)}}
	t.answerAs = &sipgo.DialogUA{Client: t.client, ContactHDR: t.contactOver("udp")}
	t.answerAsTLS = &sipgo.DialogUA{Client: t.client, ContactHDR: t.contactOver("tls")}
	t.route()
	for _, serve := range serves {
		t.serve(serve)
	}
	if t.udpAddr != "" {
		if err := waitListening(t.ua, "udp", t.udpAddr); err != nil {
			t.Close()
			return nil, err
		}
	}
	if !opts.Allow.Empty() {
		t.serving.Add(1)
		go func() { defer t.serving.Done(); t.refreshAllow(ctx) }()
	}
	if opts.Registrar != nil {
		t.startRegistration()
	}
	log.Info("SIP trunk listening", "addr", t.addr.String(), "transports", opts.Transports, "allow", opts.Allow.String())
	return t, nil
}

// clientFor is the client requests that open a dialog or a registration on transport
// go through: the listening socket's for UDP, fresh connections' for TCP and TLS.
func (t *Trunk) clientFor(transport string) *sipgo.Client {
	if transport == "udp" {
		return t.client
	}
	return t.streamClient
}

// Addr is where peers reach the trunk: the advertised address and the signalling port.
func (t *Trunk) Addr() netip.AddrPort { return t.addr }

// Close stops listening. Calls in progress are the gateway's to end (it drains them
// first); their dialogs can no longer send a BYE once the trunk is closed.
func (t *Trunk) Close() {
	t.bridges.endAll() // after the gateway's drain: their BYEs still need the sockets
	if t.unregister != nil {
		t.unregister()
		select {
		case <-t.registered:
		case <-time.After(unregisterWait):
			t.log.Warn("the registrar did not answer the un-REGISTER in time")
		}
	}
	if t.stop != nil {
		t.stop()
	}
	for _, c := range t.closers {
		_ = c()
	}
	if t.ua != nil {
		_ = t.ua.Close()
	}
	t.serving.Wait()
}

// bind binds every transport on the listening address and returns the functions that
// serve them. With port 0 the first transport takes a free port and the others the same
// one; when another program holds that one for another transport, it tries again.
func (t *Trunk) bind() (uint16, []func() error, error) {
	for attempt := 0; ; attempt++ {
		port, serves, err := t.bindOnce()
		if err == nil || t.opts.Listen.Port() != 0 || attempt == 20 || !errors.Is(err, syscall.EADDRINUSE) {
			return port, serves, err
		}
		for _, c := range t.closers {
			_ = c()
		}
		t.closers, t.udpAddr = nil, ""
	}
}

func (t *Trunk) bindOnce() (uint16, []func() error, error) {
	port := t.opts.Listen.Port()
	var serves []func() error
	for _, transport := range t.opts.Transports {
		addr := netip.AddrPortFrom(t.opts.Listen.Addr(), port).String()
		switch transport {
		case "udp":
			conn, err := net.ListenPacket("udp", addr)
			if err != nil {
				return 0, nil, fmt.Errorf("%s: SIP over UDP on %s: %w", SettingListen, addr, err)
			}
			port = uint16(conn.LocalAddr().(*net.UDPAddr).Port)
			t.closers = append(t.closers, conn.Close)
			t.udpAddr = conn.LocalAddr().String()
			serves = append(serves, func() error { return t.srv.ServeUDP(conn) })
		case "tcp":
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return 0, nil, fmt.Errorf("%s: SIP over TCP on %s: %w", SettingListen, addr, err)
			}
			port = uint16(ln.Addr().(*net.TCPAddr).Port)
			t.closers = append(t.closers, ln.Close)
			gated := &gatedListener{Listener: ln, trunk: t, transport: "tcp"}
			serves = append(serves, func() error { return t.srv.ServeTCP(gated) })
		case "tls": // on its own port (tls.go)
			serve, err := t.bindTLS()
			if err != nil {
				return 0, nil, err
			}
			serves = append(serves, serve)
		}
	}
	return port, serves, nil
}

// waitListening waits until the transport layer holds the listener at addr: it is added
// on the goroutine that serves it, and a request sent before would leave from a new socket.
func waitListening(ua *sipgo.UserAgent, network, addr string) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		if c, err := ua.TransportLayer().GetConnection(network, addr); err == nil && c != nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sip: the %s listener on %s did not start", network, addr)
		}
		time.Sleep(time.Millisecond)
	}
}

func (t *Trunk) serve(run func() error) {
	t.serving.Add(1)
	go func() {
		defer t.serving.Done()
		if err := run(); err != nil && !errors.Is(err, net.ErrClosed) {
			t.log.Warn("SIP listener stopped", "err", err)
		}
	}()
}

// refreshAllow resolves the allow-list's hostnames again now and then: a provider's
// signalling hosts are names whose addresses change.
func (t *Trunk) refreshAllow(ctx context.Context) {
	resolve := func() {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := t.opts.Allow.Refresh(rctx, net.DefaultResolver); err != nil && ctx.Err() == nil {
			t.log.Warn("could not resolve every host of "+SettingAllow+" (their last addresses stay allowed)", "err", err)
		}
	}
	resolve()
	tick := time.NewTicker(allowRefresh)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			resolve()
		}
	}
}

// rtpBindAddr is the address media sockets bind: the listening address's.
func rtpBindAddr(o Options) netip.Addr { return o.Listen.Addr() }

// quietLogger is sipgo's logger: its debug and info lines describe every transaction,
// which is Handset's to log or not; warnings and errors pass.
func quietLogger(log *slog.Logger) *slog.Logger {
	return slog.New(minLevel{log.Handler(), slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// unregisterWait bounds how long Close waits for the registrar to drop the binding.
const unregisterWait = 5 * time.Second

// startRegistration keeps Handset registered at the registrar as its user, so that the
// calls the registrar routes to that user come here.
func (t *Trunk) startRegistration() {
	reg := t.opts.Registrar
	aor := sip.Uri{Scheme: "sip", User: t.opts.Username, Host: reg.Host}
	contact := t.contact
	if tp, ok := reg.UriParams.Get("transport"); ok && tp != "" {
		contact.Address.UriParams = sip.NewParams()
		contact.Address.UriParams.Add("transport", tp)
	}
	t.registration = register.New(t.clientFor(targetTransport(*reg)), register.Options{
		Registrar: *reg, AOR: aor, Contact: contact,
		Username: t.opts.Username, Password: t.opts.Password,
		Logger: t.log,
		OnChange: func(s register.Status) {
			switch {
			case s.Err != nil:
				t.log.Warn("SIP registration failed", "registrar", reg.String(), "err", s.Err, "next_attempt", s.Next)
			case s.Attempts == 1:
				t.log.Info("SIP registration", "registrar", reg.String(), "user", t.opts.Username, "granted", s.Granted)
			}
		},
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.unregister, t.registered = cancel, make(chan struct{})
	go func() {
		defer close(t.registered)
		if err := t.registration.Run(ctx); err != nil {
			t.log.Warn("SIP un-registration", "registrar", reg.String(), "err", err)
		}
	}()
}

// Registration is the state of the binding at HANDSET_SIP_REGISTRAR; false without one.
func (t *Trunk) Registration() (register.Status, bool) {
	if t.registration == nil {
		return register.Status{}, false
	}
	return t.registration.Status(), true
}
