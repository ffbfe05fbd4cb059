package sipsim

import (
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// A Caller can stand on the other side too: the trunk's far end for the calls Handset
// places through it (an outbound call, or the second leg of a transfer Handset bridges).

// AnswerOptions shape how a Caller answers the INVITEs Handset sends it.
type AnswerOptions struct {
	// Codec is "PCMU" (default) or "PCMA": the codec the answer picks.
	Codec string
	// Status, when set and not 200, is the final status every INVITE gets instead of an
	// answer (486 Busy Here, 480 Temporarily Unavailable…).
	Status int
	// Ring is how long the caller rings (180 Ringing) before it answers; a CANCEL
	// meanwhile ends the INVITE 487. Zero answers at once.
	Ring time.Duration
}

// answering is how the Caller answers INVITEs, and where the answered calls go.
type answering struct {
	o       AnswerOptions
	dialogs *sipgo.DialogServerCache
	calls   chan *Call
}

// maxAnswered bounds the answered calls waiting on Answer's channel; more are hung up.
const maxAnswered = 16

// Answer makes the caller answer the INVITEs Handset sends it as o says, and returns the
// channel each answered call arrives on once Handset acknowledged it. Call it before the
// INVITEs come; later calls do nothing but return the same channel.
func (c *Caller) Answer(o AnswerOptions) <-chan *Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answering == nil {
		contact := sip.ContactHeader{Address: sip.Uri{Scheme: "sip", User: "sipsim", Host: c.addr.Addr().String(), Port: int(c.addr.Port())}}
		c.answering = &answering{o: o, dialogs: sipgo.NewDialogServerCache(c.cli, contact), calls: make(chan *Call, maxAnswered)}
	}
	return c.answering.calls
}

// answerInvite answers a new INVITE when the caller answers calls; false leaves the
// request to the caller's other handlers.
func (c *Caller) answerInvite(req *sip.Request, tx sip.ServerTransaction) bool {
	c.mu.Lock()
	a := c.answering
	c.mu.Unlock()
	if a == nil {
		return false
	}
	if to := req.To(); to != nil {
		if _, tagged := to.Params.Get("tag"); tagged {
			return false // a re-INVITE
		}
	}
	if a.o.Status != 0 && a.o.Status != sip.StatusOK {
		_ = tx.Respond(sip.NewResponseFromRequest(req, a.o.Status, "Refused", nil))
		return true
	}
	remote, dtmf, err := readAnswer(req.Body()) // an offer names the same lines
	if err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusNotAcceptableHere, "Not Acceptable Here", nil))
		return true
	}
	pt, name := uint8(0), "PCMU"
	if strings.EqualFold(a.o.Codec, "PCMA") {
		pt, name = 8, "PCMA"
	}
	rtpConn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(c.addr.Addr(), 0)))
	if err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusServiceUnavailable, "No media port", nil))
		return true
	}
	dlg, err := a.dialogs.ReadInvite(req, tx)
	if err != nil {
		_ = rtpConn.Close()
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusBadRequest, "Bad Request", nil))
		return true
	}
	call := &Call{caller: c, uas: dlg, sipCallID: req.CallID().Value(), rtpConn: rtpConn, remote: remote, pt: pt,
		dtmfPT: dtmf, arrived: make(chan struct{}, 1), ended: make(chan struct{}), readerOut: make(chan struct{}),
		ssrc: randomUint32(), seq: uint16(randomUint32()), ts: randomUint32()}
	if a.o.Ring > 0 {
		_ = dlg.Respond(sip.StatusRinging, "Ringing", nil)
		select {
		case <-time.After(a.o.Ring):
		case <-dlg.Context().Done(): // cancelled: the transaction layer answered 487
			_ = rtpConn.Close()
			return true
		}
	}
	c.keep(call)
	go call.read()
	answer := offerSDP(c.addr.Addr(), rtpConn.LocalAddr().(*net.UDPAddr).AddrPort().Port(), pt, name)
	if err := dlg.RespondSDP(answer); err != nil { // returns once Handset acknowledged it
		call.closeMedia()
		c.forget(call)
		return true
	}
	call.Answered, call.Answer = time.Now(), answer
	select {
	case a.calls <- call:
	default:
		_ = call.Hangup(dlg.Context())
	}
	return true
}

// onAck confirms a call the caller answered (the ACKs of calls it placed need nothing).
func (c *Caller) onAck(req *sip.Request, tx sip.ServerTransaction) {
	c.mu.Lock()
	a := c.answering
	c.mu.Unlock()
	if a != nil {
		_ = a.dialogs.ReadAck(req, tx)
	}
}

// calleeBye takes Handset's BYE of a call the caller answered; false when call is not
// one.
func (c *Caller) calleeBye(call *Call, req *sip.Request, tx sip.ServerTransaction) bool {
	if call == nil || call.uas == nil {
		return false
	}
	if err := call.uas.ReadBye(req, tx); err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, err.Error(), nil))
		return true
	}
	call.hungUpByFarEnd()
	c.forget(call)
	return true
}

// refuseRefer answers a REFER with the configured status; false when the caller carries
// transfers out.
func (c *Caller) refuseRefer(req *sip.Request, tx sip.ServerTransaction) bool {
	if c.referStatus == 0 {
		return false
	}
	_ = tx.Respond(sip.NewResponseFromRequest(req, c.referStatus, "Refused", nil))
	return true
}
