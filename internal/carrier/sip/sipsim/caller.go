// Package sipsim is a simulated SIP trunk caller for tests, `handset simulate` and `handset
// bench`: a user agent (over github.com/emiago/sipgo) that places calls into Handset the
// way a trunk or a PBX does, and an RTP endpoint that plays audio on a 20 ms clock and
// records every packet it receives with its arrival time. It is written from the wire
// alone (its SDP is plain text, its RTP is pion/rtp) and shares no code with the carrier
// it calls, so a test that passes against it says something about the carrier.
//
// Kit makes it a simkit kit for `handset simulate` and `handset bench`: each call's RTP is
// handed to a carrier-neutral simulated phone (sim/phone) through an RTP Wire and
// Transport, and the forgeries are what SIP scanners send.
package sipsim

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// Caller is one simulated trunk: a SIP user agent on a loopback (or given) UDP port.
type Caller struct {
	ua        *sipgo.UserAgent
	srv       *sipgo.Server
	cli       *sipgo.Client
	dialogs   *sipgo.DialogClientCache
	addr      netip.AddrPort
	transport string
	conn      net.PacketConn
	done      chan struct{}

	mu    sync.Mutex
	calls map[string]*Call // by SIP Call-ID, for requests Handset sends into a call
	// heard are the responses to each Call-ID as they came off the wire, before sipgo's
	// transactions (which hand them on from goroutines of their own, in any order).
	heard map[string][]Response
	// responded is signalled (size 1) when a response is heard, for Replay to wait on.
	responded chan struct{}

	ready       chan struct{} // closed when NewCaller returns
	referStatus int
	answering   *answering // set by Answer: INVITEs from Handset are answered
}

// CallerOptions shape a Caller.
type CallerOptions struct {
	// Addr is the address to listen on; empty is 127.0.0.1 on a free port.
	Addr string
	// Logger receives sipgo's warnings; nil discards them.
	Logger *slog.Logger
	// Transport is how calls are signalled: "udp" (default), "tcp" or "tls".
	Transport string
	// TLS is the client configuration for "tls" (the CA that signed Handset's
	// certificate); nil verifies against the system's roots.
	TLS *tls.Config
	// ReferStatus, when set, is the final status every REFER gets (501: a trunk that
	// will not transfer); zero carries the transfer out.
	ReferStatus int
}

// NewCaller starts a simulated trunk.
func NewCaller(o CallerOptions) (*Caller, error) {
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	conn, err := net.ListenPacket("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("sipsim: %w", err)
	}
	ap := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	host := ap.Addr().Unmap().String()
	c := &Caller{addr: netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), conn: conn, transport: o.Transport,
		done: make(chan struct{}), calls: map[string]*Call{}, heard: map[string][]Response{}, responded: make(chan struct{}, 1),
		referStatus: o.ReferStatus, ready: make(chan struct{})}
	defer close(c.ready)
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("handset-sipsim"), sipgo.WithUserAgentHostname(host),
		sipgo.WithUserAgenTLSConfig(o.TLS),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(log), sip.WithTransportLayerReadFilter(c.hear)),
		// Responses no transaction waits for (retransmissions, answers to a replayed INVITE)
		// are noted by hear; sipgo would log each to its default logger.
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(log),
			sip.WithTransactionLayerUnhandledResponseHandler(func(*sip.Response) {})))
	if err != nil {
		conn.Close()
		return nil, err
	}
	c.ua = ua
	if c.srv, err = sipgo.NewServer(ua, sipgo.WithServerLogger(log)); err != nil {
		ua.Close()
		conn.Close()
		return nil, err
	}
	go func() {
		defer close(c.done)
		_ = c.srv.ServeUDP(conn)
	}()
	// Requests leave from the listening socket once the transport holds it.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		if lc, err := ua.TransportLayer().GetConnection("udp", conn.LocalAddr().String()); err == nil && lc != nil {
			break
		}
		if time.Now().After(deadline) {
			c.Close()
			return nil, errors.New("sipsim: the UDP listener did not start")
		}
	}
	clientOpts := []sipgo.ClientOption{sipgo.WithClientHostname(host), sipgo.WithClientPort(int(ap.Port()))}
	if o.Transport == "" || o.Transport == "udp" {
		// UDP requests leave from the listening socket. A TCP or TLS connection takes a
		// port of its own: binding it to the UDP port's number fails whenever some TCP
		// socket already holds that number.
		clientOpts = append(clientOpts, sipgo.WithClientConnectionAddr(conn.LocalAddr().String()))
	}
	if c.cli, err = sipgo.NewClient(ua, clientOpts...); err != nil {
		c.Close()
		return nil, err
	}
	contact := sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: "sipsim", Host: host, Port: int(ap.Port())}}
	c.dialogs = sipgo.NewDialogClientCache(c.cli, contact)
	c.srv.OnBye(c.onBye)
	c.srv.OnRefer(c.onRefer)
	c.srv.OnInvite(c.onReinvite)
	c.srv.OnUpdate(c.onUpdate)
	c.srv.OnAck(c.onAck)
	return c, nil
}

// Addr is the caller's SIP address.
func (c *Caller) Addr() netip.AddrPort { return c.addr }

// Close stops the caller and every call it holds.
func (c *Caller) Close() {
	c.mu.Lock()
	calls := make([]*Call, 0, len(c.calls))
	for _, call := range c.calls {
		calls = append(calls, call)
	}
	c.mu.Unlock()
	for _, call := range calls {
		call.closeMedia()
	}
	_ = c.ua.Close()
	_ = c.conn.Close()
	<-c.done
}

// onBye is Handset hanging up.
func (c *Caller) onBye(req *sip.Request, tx sip.ServerTransaction) {
	call := c.call(req)
	if c.calleeBye(call, req, tx) {
		return
	}
	if err := c.dialogs.ReadBye(req, tx); err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, err.Error(), nil))
		return
	}
	if call != nil {
		call.hungUpByFarEnd()
	}
}

// onReinvite refuses an offer from Handset: the simulated trunk never expects one, but
// answers new calls when told to (Answer), and a session refresh (refresh.go) with its own
// offer unchanged.
func (c *Caller) onReinvite(req *sip.Request, tx sip.ServerTransaction) {
	if c.answerInvite(req, tx) {
		return
	}
	if call := c.call(req); call != nil && req.GetHeader("Session-Expires") != nil {
		c.answerRefresh(req, tx, call.sess.InviteRequest.Body())
		return
	}
	_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusNotAcceptableHere, "Not Acceptable Here", nil))
}

func (c *Caller) call(req *sip.Request) *Call {
	h := req.CallID()
	if h == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[h.Value()]
}

// live are the calls the caller holds.
func (c *Caller) live() []*Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls := make([]*Call, 0, len(c.calls))
	for _, call := range c.calls {
		calls = append(calls, call)
	}
	return calls
}

func (c *Caller) keep(call *Call) {
	c.mu.Lock()
	c.calls[call.sipCallID] = call
	c.mu.Unlock()
}

func (c *Caller) forget(call *Call) {
	c.mu.Lock()
	delete(c.calls, call.sipCallID)
	c.mu.Unlock()
}

// Refused is a call Handset answered with a final failure status.
type Refused struct {
	Status int
	Reason string
}

func (e *Refused) Error() string {
	return "sipsim: refused: " + strconv.Itoa(e.Status) + " " + e.Reason
}

// refusal turns sipgo's dialog error into a *Refused when Handset answered one.
func refusal(err error) error {
	var dr *sipgo.ErrDialogResponse
	if errors.As(err, &dr) {
		return &Refused{Status: dr.Res.StatusCode, Reason: dr.Res.Reason}
	}
	return err
}

// hear notes each response as it arrives, by Call-ID. It first waits for NewCaller to
// finish: a request nobody asked for (an INVITE to a caller that answers calls) must find
// the handlers and the client in place.
func (c *Caller) hear(_ sip.TransportReadProps, data []byte) ([]byte, error) {
	<-c.ready
	status, callID, ok := responseLine(data)
	if ok {
		c.mu.Lock()
		if len(c.heard[callID]) < 32 {
			c.heard[callID] = append(c.heard[callID], Response{Status: status, At: time.Now()})
		}
		c.mu.Unlock()
		select {
		case c.responded <- struct{}{}:
		default:
		}
	}
	return data, nil
}

// heardFor takes the responses heard for callID.
func (c *Caller) heardFor(callID string) []Response {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.heard[callID]
	delete(c.heard, callID)
	return r
}

// responseLine reads a response's status and Call-ID without the parser.
func responseLine(data []byte) (status int, callID string, ok bool) {
	rest, found := bytes.CutPrefix(data, []byte("SIP/2.0 "))
	if !found || len(rest) < 3 {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(rest[:3]))
	if err != nil {
		return 0, "", false
	}
	for line := range bytes.Lines(rest) {
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			continue
		}
		name = bytes.TrimSpace(name)
		if bytes.EqualFold(name, []byte("Call-ID")) || bytes.Equal(name, []byte("i")) {
			return status, string(bytes.TrimSpace(value)), true
		}
	}
	return 0, "", false
}

// onRefer carries out a blind transfer as a trunk does: 202 Accepted, a NOTIFY that the
// new call was answered (message/sipfrag), then a BYE: the call is the trunk's now.
func (c *Caller) onRefer(req *sip.Request, tx sip.ServerTransaction) {
	if c.refuseRefer(req, tx) {
		return
	}
	call := c.call(req)
	h := req.GetHeader("Refer-To")
	if call == nil || h == nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
		return
	}
	call.mu.Lock()
	call.referredTo = h.Value()
	call.mu.Unlock()
	_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusAccepted, "Accepted", nil))
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		notify := sip.NewRequest(sip.NOTIFY, call.sess.InviteResponse.Contact().Address)
		notify.AppendHeader(sip.NewHeader("Event", "refer"))
		notify.AppendHeader(sip.NewHeader("Subscription-State", "terminated;reason=noresource"))
		notify.AppendHeader(sip.NewHeader("Content-Type", "message/sipfrag;version=2.0"))
		notify.SetBody([]byte("SIP/2.0 200 OK\r\n"))
		if _, err := call.sess.Do(ctx, notify); err == nil {
			_ = call.Hangup(ctx)
		}
	}()
}
