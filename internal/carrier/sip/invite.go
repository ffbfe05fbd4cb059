package sip

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/dtmfinfo"
	"github.com/handset-voice/handset/internal/carrier/sip/media"
	"github.com/handset-voice/handset/internal/carrier/sip/sdp"
	"github.com/handset-voice/handset/internal/voice"
)

// dtmfPayloadType is the telephone-event payload type Handset offers; an answer takes the
// offerer's.
const dtmfPayloadType = 101

// onInvite answers an INVITE: a new call, or a re-INVITE inside one.
func (t *Trunk) onInvite(req *sip.Request, tx sip.ServerTransaction) {
	if to := req.To(); to != nil {
		if _, tagged := to.Params.Get("tag"); tagged {
			t.onReinvite(req, tx) // callOf checks who sent it
			return
		}
	}
	if !t.allowed(req) && !t.authenticate(req, tx) {
		return
	}
	t.answerCall(req, tx)
}

// answerCall takes a new call: 100 Trying and 180 Ringing at once, then the media port, the
// SDP answer and the call engine, and 200 OK with RTP already flowing, so the first
// syllable of the greeting is never clipped. A call refused on the way gets the final
// status that says why.
func (t *Trunk) answerCall(req *sip.Request, tx sip.ServerTransaction) {
	sig := &signals{}
	sig.signal(time.Now(), "INVITE", "in", "")
	// 100 Trying at once: it stops the INVITE's retransmissions while the rest is decided.
	_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusTrying, "Trying", nil))
	if t.in.Draining != nil && t.in.Draining() {
		res := sip.NewResponseFromRequest(req, sip.StatusServiceUnavailable, "Draining", nil)
		res.AppendHeader(sip.NewHeader("Retry-After", "5"))
		_ = tx.Respond(res)
		return
	}
	terms, timed, err := t.opts.offeredTerms(req) // before the replay check: a 422 is retried
	if err != nil {
		t.refuseTerms(req, tx, err)
		return
	}
	if fresh, err := t.firstInvite(req); err != nil {
		t.log.Warn("refused a call: the calls' memory", "call_id", callID(req), "err", err)
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusServiceUnavailable, "Service Unavailable", nil))
		return
	} else if !fresh {
		// A new INVITE of a call already taken (its retransmissions are the transaction
		// layer's): a replay, or the same request come by another path (RFC 3261 8.2.2.2).
		t.log.Warn("refused a repeated INVITE", "call_id", callID(req), "source", req.Source())
		sig.signal(time.Now(), "482 Loop Detected", "out", "repeated")
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusLoopDetected, "Loop Detected", nil))
		return
	}
	dialog, err := t.dialogUA(req).ReadInvite(req, releaseWhenOver(tx)) // dialogkeep.go
	if err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusBadRequest, clipReason(err), nil))
		return
	}
	keepDialogHeaders(dialog.InviteRequest)
	_ = dialog.Respond(sip.StatusRinging, "Ringing", nil)
	sig.signal(time.Now(), "180 Ringing", "out", "")

	offer, err := sdp.Parse(req.Body())
	if err == nil {
		err = t.checkOfferSecurity(offer) // HANDSET_SIP_SRTP (srtp.go)
	}
	if err != nil {
		t.log.Warn("refused a call: its SDP offer", "call_id", callID(req), "err", err)
		_ = dialog.Respond(offerStatus(err), clipReason(err), nil)
		return
	}
	conn, err := t.ports.Listen()
	if err != nil {
		t.log.Error("refused a call: no RTP port", "call_id", callID(req), "err", err)
		_ = dialog.Respond(sip.StatusServiceUnavailable, "No media port", nil)
		return
	}
	local := sdp.Local{
		Addr:      netip.AddrPortFrom(t.addr.Addr(), uint16(conn.LocalAddr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port())),
		Codecs:    t.opts.Codecs,
		DTMF:      dtmfPayloadType,
		SessionID: randomID(),
		Version:   1,
		Crypto:    answerKeys(offer),
	}
	answer, agreed, err := sdp.Answer(offer, local)
	var keys media.SRTP
	if err == nil {
		keys, err = mediaSRTP(agreed, local.Crypto)
	}
	if err != nil {
		_ = conn.Close()
		t.log.Warn("refused a call: its SDP offer", "call_id", callID(req), "err", err)
		_ = dialog.Respond(offerStatus(err), clipReason(err), nil)
		return
	}
	codec, _ := mediaCodec(agreed.Codec())
	sess, err := media.New(media.Config{
		Conn: conn, Remote: agreed.Addr, Peer: sourceAddr(req), Codec: codec, DTMF: agreed.DTMF, SRTP: keys,
		Ticker: t.sendClock, Log: t.log.With("call_id", callID(req)),
	})
	if err != nil {
		_ = conn.Close()
		t.log.Error("refused a call: its media", "call_id", callID(req), "err", err)
		_ = dialog.Respond(sip.StatusServiceUnavailable, "Media unavailable", nil)
		return
	}
	sess.Hold(offer.OnHold())          // an INVITE may start on hold
	if dialog.Context().Err() != nil { // cancelled while the port and answer were made
		_ = sess.Close()
		return
	}
	c := &inboundCall{dialog: dialog, media: sess, local: local, agreed: agreed, answer: answer}
	forgetPeer := t.holdAuthenticated(c, req)
	c.leg = legOf(t.log, sess, inboundInfo(req, codec), sig, byeOf(dialog), func() { t.dialogs.remove(c); c.timer.stop(); forgetPeer() })
	c.timer = t.newSessionTimer(c)
	t.dialogs.add(c)
	if _, err := t.in.Admit(c.leg); err != nil {
		t.dialogs.remove(c)
		forgetPeer()
		_ = sess.Close()
		t.log.Warn("refused a call", "call_id", callID(req), "err", err)
		_ = dialog.Respond(sip.StatusServiceUnavailable, clipReason(err), nil)
		return
	}
	sess.Start() // RTP flows before the 200 OK leaves: the caller's first packet is ours
	select {
	case <-c.leg.ended:
		// The call ended before it was answered (the call engine gave up on it at once).
		_ = dialog.Respond(sip.StatusTemporarilyUnavailable, "Temporarily Unavailable", nil)
		return
	default:
	}
	sig.signal(time.Now(), "200 OK", "out", "")
	if err := dialog.WriteResponse(answerOK(dialog.InviteRequest, answer, terms, timed)); err != nil {
		// Cancelled while ringing, or the ACK never came: the call is over.
		sig.signal(time.Now(), "ACK", "in", voice.Clip(err.Error(), 80))
		t.log.Info("call not established", "call_id", callID(req), "err", err)
		c.leg.end(errNotEstablished)
		return
	}
	c.leg.established()
	if timed {
		c.timer.arm(terms)
	}
}

// errNotEstablished ends a leg whose 200 OK was never acknowledged (or was cancelled).
var errNotEstablished = errors.New("sip: the call was not established (cancelled, or no ACK)")

// onReinvite answers a re-INVITE: a session refresh (the same SDP version) gets the same
// answer; a new offer (hold, a new address or codec) is answered and applied to the media.
func (t *Trunk) onReinvite(req *sip.Request, tx sip.ServerTransaction) {
	c, terms, timed := t.readInDialog(req, tx) // the allow-list was checked by onInvite, and again here
	if c == nil {
		return
	}
	t.answerOffer(c, req, tx, terms, timed)
}

// readInDialog takes what a re-INVITE and an UPDATE begin with: the call, the request read
// into its dialog, and the session timer's terms it offers. It answers the request itself
// and returns a nil call when there is nothing more to do.
func (t *Trunk) readInDialog(req *sip.Request, tx sip.ServerTransaction) (*inboundCall, sessionTerms, bool) {
	c := t.callOf(req, tx)
	if c == nil {
		return nil, sessionTerms{}, false
	}
	if err := c.dialog.ReadRequest(req, tx); err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusInternalServerError, clipReason(err), nil))
		return nil, sessionTerms{}, false
	}
	terms, timed, err := t.opts.offeredTerms(req)
	if err != nil {
		t.refuseTerms(req, tx, err)
		return nil, sessionTerms{}, false
	}
	return c, terms, timed
}

// answerOffer answers an in-dialog request's SDP (a re-INVITE's, or an UPDATE's) with
// ours, applies it to the media, and restarts the session timer.
func (t *Trunk) answerOffer(c *inboundCall, req *sip.Request, tx sip.ServerTransaction, terms sessionTerms, timed bool) {
	body, err := c.renegotiate(req.Body())
	if err != nil {
		t.log.Warn("refused an offer inside a call", "method", req.Method, "call_id", callID(req), "err", err)
		_ = tx.Respond(sip.NewResponseFromRequest(req, offerStatus(err), clipReason(err), nil))
		return
	}
	t.respondInDialog(c, req, tx, sip.NewSDPResponseFromRequest(req, body), terms, timed)
}

// respondInDialog sends a 2xx inside a call with our Contact and the session timer's terms.
func (t *Trunk) respondInDialog(c *inboundCall, req *sip.Request, tx sip.ServerTransaction, res *sip.Response, terms sessionTerms, timed bool) {
	contact := t.contactFor(req)
	res.AppendHeader(&contact)
	c.applyRefresh(res, terms, timed)
	_ = tx.Respond(res)
}

// renegotiate answers a new offer inside the call and applies it to the media. An empty
// body (an offer Handset would have to make) is answered with the current session.
func (c *inboundCall) renegotiate(body []byte) ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(body) == 0 {
		return c.answer, nil
	}
	offer, err := sdp.Parse(body)
	if err != nil {
		return nil, err
	}
	if offer.SessionID == c.agreed.SessionID && offer.SessionVersion == c.agreed.SessionVersion {
		return c.answer, nil // a session refresh: nothing changed
	}
	local := c.local
	local.Version++
	local.Codecs = sameFormat(local.Codecs, c.agreed.Codec()) // see codecs.go
	answer, agreed, err := sdp.Answer(offer, local)
	if err != nil {
		return nil, err
	}
	if err := rekey(c.media, c.agreed, agreed, local.Crypto); err != nil { // srtp.go
		return nil, err
	}
	if agreed.Addr != c.agreed.Addr {
		c.media.SetRemote(agreed.Addr)
	}
	if agreed.Codec() != c.agreed.Codec() || agreed.DTMF != c.agreed.DTMF {
		codec, _ := mediaCodec(agreed.Codec())
		if err := c.media.SetCodec(codec, agreed.DTMF); err != nil {
			return nil, err
		}
	}
	c.media.Hold(offer.OnHold()) // the peer will not receive: sendonly, inactive or 0.0.0.0
	c.local, c.agreed, c.answer = local, agreed, answer
	return answer, nil
}

// onAck confirms the dialog of a 200 OK.
func (t *Trunk) onAck(req *sip.Request, tx sip.ServerTransaction) {
	if c := t.dialogs.match(req); c != nil && t.admits(c, req) {
		_ = c.dialog.ReadAck(req, tx)
	}
}

// onBye ends a call from the caller's side.
func (t *Trunk) onBye(req *sip.Request, tx sip.ServerTransaction) {
	c := t.callOf(req, tx)
	if c == nil {
		return
	}
	if err := c.dialog.ReadBye(req, tx); err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusBadRequest, clipReason(err), nil))
		return
	}
	c.leg.signals.signal(time.Now(), "BYE", "in", byeReason(req))
	c.leg.end(nil)
}

// onOptions answers a keepalive or capability probe.
func (t *Trunk) onOptions(req *sip.Request, tx sip.ServerTransaction) {
	if !t.allowed(req) {
		t.refuse(req, tx)
		return
	}
	res := sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil)
	res.AppendHeader(sip.NewHeader("Allow", allowedMethods))
	res.AppendHeader(sip.NewHeader("Accept", "application/sdp, application/dtmf-relay, application/dtmf"))
	_ = tx.Respond(res)
}

// allowedMethods are the requests Handset answers.
const allowedMethods = "INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, NOTIFY, UPDATE"

// refuse answers 403 without a dialog to a request from a source the allow-list does
// not name (the gate has already limited how many reach here and logged the source).
func (t *Trunk) refuse(req *sip.Request, tx sip.ServerTransaction) {
	_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusForbidden, "Forbidden", nil))
}

// dialogUA builds the dialog of an inbound call: the trunk's client sends its BYE, and
// its Contact is on the transport the INVITE came by (see contactFor).
func (t *Trunk) dialogUA(req *sip.Request) *sipgo.DialogUA {
	if strings.EqualFold(req.Transport(), "tls") {
		return t.answerAsTLS
	}
	return t.answerAs
}

// offerStatus is the final status for an offer Handset cannot answer: 488 when it is
// readable but has nothing Handset can use, 400 when it is not readable.
func offerStatus(err error) int {
	if errors.Is(err, sdp.ErrNoCommonCodec) || errors.Is(err, sdp.ErrSecureUnsupported) || errors.Is(err, sdp.ErrNoAudio) ||
		errors.Is(err, errSRTPPolicy) {
		return sip.StatusNotAcceptableHere
	}
	return sip.StatusBadRequest
}

// mediaCodec is the media session's codec for an agreed SDP codec.
func mediaCodec(c sdp.Codec) (media.Codec, bool) {
	switch c.Name {
	case sdp.PCMA.Name:
		return media.Codec{PayloadType: c.PayloadType, Format: media.PCMA.Format}, true
	case sdp.PCMU.Name:
		return media.Codec{PayloadType: c.PayloadType, Format: media.PCMU.Format}, true
	case sdp.G722.Name:
		return media.Codec{PayloadType: c.PayloadType, Format: media.G722.Format, Wire: media.WireG722}, true
	}
	return media.Codec{}, false
}

// inboundInfo describes an inbound call from its INVITE. The caller is the user part of
// P-Asserted-Identity when the trunk sent one (what the network vouches for), else of
// From; the number called is the user part of the request URI.
func inboundInfo(req *sip.Request, codec media.Codec) voice.LegInfo {
	from := ""
	if h := req.GetHeader("P-Asserted-Identity"); h != nil {
		from = userOf(h.Value())
	}
	if from == "" && req.From() != nil {
		from = req.From().Address.User
	}
	return voice.LegInfo{
		CallID: voice.NewCallID(), Carrier: Name, CarrierRef: callID(req),
		Direction: voice.Inbound, From: from, To: req.Recipient.User, Format: codec.Format,
	}
}

// userOf is the user part of a name-addr or addr-spec header value: "<sip:+1555@host>".
func userOf(v string) string {
	if i := strings.IndexByte(v, '<'); i >= 0 {
		v = v[i+1:]
		if j := strings.IndexByte(v, '>'); j >= 0 {
			v = v[:j]
		}
	}
	var uri sip.Uri
	if err := sip.ParseUri(strings.TrimSpace(v), &uri); err != nil {
		return ""
	}
	return uri.User
}

func callID(req *sip.Request) string {
	if h := req.CallID(); h != nil {
		return voice.Clip(h.Value(), 80)
	}
	return ""
}

func sourceAddr(req *sip.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(req.Source())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

func clipReason(err error) string { return voice.Clip(err.Error(), 80) }

func randomID() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:]) >> 1 // SDP's o= numbers fit in 63 bits
}

// onInfo takes a key the caller pressed, sent as a SIP INFO request.
func (t *Trunk) onInfo(req *sip.Request, tx sip.ServerTransaction) {
	c := t.callOf(req, tx)
	if c == nil {
		return
	}
	if err := c.dialog.ReadRequest(req, tx); err != nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusInternalServerError, clipReason(err), nil))
		return
	}
	contentType := ""
	if h := req.ContentType(); h != nil {
		contentType = h.Value()
	}
	if err := c.leg.dtmf(contentType, req.Body()); err != nil {
		status := sip.StatusBadRequest
		if errors.Is(err, dtmfinfo.ErrContentType) {
			status = sip.StatusUnsupportedMediaType
		}
		_ = tx.Respond(sip.NewResponseFromRequest(req, status, clipReason(err), nil))
		return
	}
	_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil))
}

// onStray answers a CANCEL that matches no pending INVITE (the transaction layer answers
// the ones that do: 200, and 487 to the INVITE).
func (t *Trunk) onStray(req *sip.Request, tx sip.ServerTransaction) {
	_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
}

// onOther answers a request Handset does not take.
func (t *Trunk) onOther(req *sip.Request, tx sip.ServerTransaction) {
	if !t.allowed(req) {
		t.refuse(req, tx)
		return
	}
	res := sip.NewResponseFromRequest(req, sip.StatusMethodNotAllowed, "Method Not Allowed", nil)
	res.AppendHeader(sip.NewHeader("Allow", allowedMethods))
	_ = tx.Respond(res)
}

// route points every request at its handler; a request inside a call Handset placed
// goes to that call's dialog first.
func (t *Trunk) route() {
	placedFirst := func(h func(*sip.Request, sip.ServerTransaction)) func(*sip.Request, sip.ServerTransaction) {
		return func(req *sip.Request, tx sip.ServerTransaction) {
			if !t.outDialogs.Handle(req, tx) {
				h(req, tx)
			}
		}
	}
	t.srv.OnInvite(placedFirst(t.onInvite))
	t.srv.OnAck(placedFirst(t.onAck))
	t.srv.OnBye(placedFirst(t.onBye))
	t.srv.OnCancel(t.onStray)
	t.srv.OnOptions(placedFirst(t.onOptions))
	t.srv.OnInfo(placedFirst(t.onInfo))
	t.srv.OnNotify(placedFirst(t.onNotify))
	t.srv.OnUpdate(placedFirst(t.onUpdate))
	t.srv.OnNoRoute(placedFirst(t.onOther))
}

// byeReason is what a BYE says of why the call ended: its Reason header (RFC 3326), else
// "caller".
func byeReason(req *sip.Request) string {
	if h := req.GetHeader("Reason"); h != nil {
		return voice.Clip(h.Value(), 80)
	}
	return "caller"
}

// firstInvite reports whether req is the first INVITE of its call this cluster has seen:
// its Call-ID and From tag, kept in the calls' memory (24 h, every node), so a replayed or
// looped INVITE cannot start the call again.
func (t *Trunk) firstInvite(req *sip.Request) (bool, error) {
	if t.in.Memory == nil {
		return true, nil
	}
	tag := ""
	if from := req.From(); from != nil {
		tag, _ = from.Params.Get("tag")
	}
	ctx, cancel := context.WithTimeout(context.Background(), memoryTimeout)
	defer cancel()
	return t.in.Memory.Once(ctx, "sip-invite:"+callID(req)+";"+tag, time.Now())
}

// memoryTimeout bounds the calls' memory's answer while a caller waits on 100 Trying.
const memoryTimeout = 2 * time.Second

// callOf is the inbound call an in-dialog request belongs to. A source the allow-list does
// not name is refused 403, a request for no call 481; both are answered here, and nil
// returned.
func (t *Trunk) callOf(req *sip.Request, tx sip.ServerTransaction) *inboundCall {
	c := t.dialogs.match(req)
	if !t.admits(c, req) { // a caller admitted by digest acts in its own call only
		t.refuse(req, tx)
		return nil
	}
	if c == nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
	}
	return c
}
