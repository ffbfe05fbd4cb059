package sipsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
	"github.com/pion/rtp"
)

// dtmfPT is the telephone-event payload type the simulated trunk offers.
const dtmfPT = 101

// CallOptions describe one call into Handset.
type CallOptions struct {
	From, To string // user parts of From and the request URI; defaults +15550001111, +15550002222
	// Codec is "PCMU" (default), "PCMA" or "G722": the only audio codec offered (see
	// codec.go; G.722 payloads are G.722 code, 160 bytes per 20 ms).
	Codec string
	// Offer replaces the SDP offer (a test of what Handset refuses); nil writes the usual.
	Offer []byte
	// Headers are extra headers for the INVITE (P-Asserted-Identity, …).
	Headers map[string]string
	// CallID and FromTag, when set, are the INVITE's (a test of a repeated INVITE);
	// empty generates them.
	CallID, FromTag string
	// SRTP, when set (SRTP80, SRTP32), offers RTP/SAVP with a key of that suite, and
	// the call's RTP both ways is SRTP (srtp.go).
	SRTP string
	// HandOffMedia leaves the call's RTP socket unread (Received stays empty) for a
	// simulated phone to take over with Call.Transport.
	HandOffMedia bool
	// Username and Password answer a digest challenge (401) to the INVITE.
	Username, Password string
}

// Response is a provisional or final response as it arrived.
type Response struct {
	Status int
	At     time.Time
}

// Packet is one RTP packet received from Handset.
type Packet struct {
	At          time.Time
	PayloadType uint8
	Marker      bool
	Sequence    uint16
	Timestamp   uint32
	SSRC        uint32
	Payload     []byte
}

// Call is one established call.
type Call struct {
	caller    *Caller
	sess      *sipgo.DialogClientSession
	uas       *sipgo.DialogServerSession // instead of sess for a call the caller answered (callee.go)
	sipCallID string
	rtpConn   *net.UDPConn
	remote    netip.AddrPort // where Handset receives RTP, from its answer
	pt        uint8
	dtmfPT    uint8     // Handset's answer's telephone-event type; 0 when it took none
	srtp      *callSRTP // nil: plain RTP

	Responses []Response // every response to the INVITE, in order
	Answered  time.Time  // when the 200 OK arrived
	Answer    []byte     // Handset's SDP answer

	sendMu sync.Mutex // one sender at a time: sequence and timestamp run on
	seq    uint16
	ts     uint32
	ssrc   uint32

	mu         sync.Mutex
	received   []Packet
	referredTo string        // the Refer-To of a transfer Handset asked for
	arrived    chan struct{} // signalled on each packet

	ended     chan struct{}
	endOnce   sync.Once
	readerOut chan struct{}
	byFarEnd  atomic.Bool // Handset's BYE ended the call
	refreshed chan string // Handset's session refreshes (refresh.go)
}

// Call places a call to Handset's SIP address target and returns it established (the
// ACK sent), or a *Refused with the final status Handset answered.
func (c *Caller) Call(ctx context.Context, target netip.AddrPort, o CallOptions) (*Call, error) {
	if o.From == "" {
		o.From = "+15550001111"
	}
	if o.To == "" {
		o.To = "+15550002222"
	}
	pt, name := offeredCodec(o.Codec)
	rtpConn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(c.addr.Addr(), 0)))
	if err != nil {
		return nil, err
	}
	offer := o.Offer
	if offer == nil {
		offer = offerSDP(c.addr.Addr(), rtpConn.LocalAddr().(*net.UDPAddr).AddrPort().Port(), pt, name)
	}
	var secured *callSRTP
	if o.SRTP != "" {
		if secured, offer, err = newCallSRTP(o.SRTP, offer); err != nil {
			rtpConn.Close()
			return nil, err
		}
	}
	recipient := sip.Uri{Scheme: "sip", User: o.To, Host: target.Addr().String(), Port: int(target.Port())}
	if c.transport == "tcp" || c.transport == "tls" {
		recipient.UriParams = sip.NewParams()
		recipient.UriParams.Add("transport", c.transport)
	}
	headers := []sip.Header{
		sip.NewHeader("Content-Type", "application/sdp"),
		fromHeader(o.From, o.FromTag, c.addr.Addr()),
	}
	if o.CallID != "" {
		id := sip.CallIDHeader(o.CallID)
		headers = append(headers, &id)
	}
	for k, v := range o.Headers {
		headers = append(headers, sip.NewHeader(k, v))
	}
	call := &Call{caller: c, rtpConn: rtpConn, pt: pt, arrived: make(chan struct{}, 1),
		ended: make(chan struct{}), readerOut: make(chan struct{}), ssrc: randomUint32(),
		seq: uint16(randomUint32()), ts: randomUint32(), srtp: secured, refreshed: make(chan string, 8)}
	sess, err := c.dialogs.Invite(ctx, recipient, offer, headers...)
	if err != nil {
		rtpConn.Close()
		return nil, err
	}
	call.sess = sess
	call.sipCallID = sess.InviteRequest.CallID().Value()
	c.keep(call)
	err = sess.WaitAnswer(ctx, sipgo.AnswerOptions{Username: o.Username, Password: o.Password})
	call.Responses = c.heardFor(call.sipCallID)
	if err != nil {
		c.forget(call)
		rtpConn.Close()
		return nil, refusal(err)
	}
	call.Answered = time.Now()
	for _, r := range call.Responses {
		if r.Status == sip.StatusOK {
			call.Answered = r.At // the first 200 off the wire
			break
		}
	}
	call.Answer = sess.InviteResponse.Body()
	if o.HandOffMedia {
		close(call.readerOut) // the socket keeps what arrives until the phone reads it
	} else {
		go call.read() // before the ACK: Handset's RTP may already flow
	}
	call.remote, call.dtmfPT, err = readAnswer(call.Answer)
	if err == nil && call.srtp != nil {
		err = call.srtp.answered(call.Answer)
	}
	if err != nil {
		_ = sess.Ack(ctx)
		_ = call.Hangup(ctx)
		return nil, err
	}
	if err := sess.Ack(ctx); err != nil {
		call.closeMedia()
		c.forget(call)
		return nil, err
	}
	return call, nil
}

// CallAndCancel sends an INVITE and cancels it once Handset answered 180 Ringing; it
// returns every response the INVITE got (a cancelled INVITE ends 487).
func (c *Caller) CallAndCancel(ctx context.Context, target netip.AddrPort, o CallOptions) ([]Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pt, name := uint8(0), "PCMU"
	offer := offerSDP(c.addr.Addr(), 40000, pt, name)
	recipient := sip.Uri{Scheme: "sip", User: "+15550002222", Host: target.Addr().String(), Port: int(target.Port())}
	sess, err := c.dialogs.Invite(ctx, recipient, offer, sip.NewHeader("Content-Type", "application/sdp"))
	if err != nil {
		return nil, err
	}
	err = sess.WaitAnswer(ctx, sipgo.AnswerOptions{OnResponse: func(res *sip.Response) error {
		if res.StatusCode == sip.StatusRinging {
			cancel() // WaitAnswer sends the CANCEL, and waits for the INVITE's final response
		}
		return nil
	}})
	return c.heardFor(sess.InviteRequest.CallID().Value()), err
}

// SIPCallID is the call's SIP Call-ID.
func (call *Call) SIPCallID() string { return call.sipCallID }

// RemoteRTP is where Handset receives the call's audio.
func (call *Call) RemoteRTP() netip.AddrPort { return call.remote }

// LocalRTP is where the simulated trunk receives Handset's audio.
func (call *Call) LocalRTP() netip.AddrPort {
	return call.rtpConn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Ended is closed when the call is over: Handset's BYE, or Hangup.
func (call *Call) Ended() <-chan struct{} { return call.ended }

// Hangup sends a BYE.
func (call *Call) Hangup(ctx context.Context) error {
	defer call.closeMedia()
	defer call.caller.forget(call)
	select {
	case <-call.ended:
		return nil
	default:
	}
	if call.uas != nil {
		return call.uas.Bye(ctx)
	}
	return call.sess.Bye(ctx)
}

// Play sends payloads (each one 20 ms of audio in the call's codec) one every 20 ms, the
// first at once, with the marker bit on the first.
func (call *Call) Play(ctx context.Context, payloads [][]byte) error {
	start := time.Now()
	for i, p := range payloads {
		if d := time.Until(start.Add(time.Duration(i) * 20 * time.Millisecond)); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := call.send(call.pt, i == 0, p, uint32(len(p)), true); err != nil {
			return err
		}
	}
	return nil
}

// SendRaw sends one RTP packet as given (payload type, marker, payload), advancing the
// sequence number and the timestamp by advance: for tests of what Handset drops.
func (call *Call) SendRaw(pt uint8, marker bool, payload []byte, advance uint32) error {
	return call.send(pt, marker, payload, advance, true)
}

// SendDTMF sends one key as RFC 4733 events: updates every 20 ms for 100 ms, then the
// end packet three times, all with the event's start timestamp.
func (call *Call) SendDTMF(ctx context.Context, digit string) error {
	if call.dtmfPT == 0 {
		return errors.New("sipsim: Handset's answer took no telephone-event")
	}
	event, ok := dtmfEvents[digit]
	if !ok {
		return fmt.Errorf("sipsim: %q is not a key", digit)
	}
	call.sendMu.Lock()
	start := call.ts
	call.sendMu.Unlock()
	payload := make([]byte, 4)
	for i := range 8 {
		end := i >= 5
		duration := uint16(min(i+1, 5) * 160)
		payload[0] = event
		payload[1] = 10 // volume -10 dBm0
		if end {
			payload[1] |= 0x80
		}
		binary.BigEndian.PutUint16(payload[2:], duration)
		if err := call.sendAt(call.dtmfPT, i == 0, payload, start); err != nil {
			return err
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	call.sendMu.Lock()
	call.ts = start + 8*160
	call.sendMu.Unlock()
	return nil
}

var dtmfEvents = map[string]uint8{"0": 0, "1": 1, "2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9,
	"*": 10, "#": 11, "A": 12, "B": 13, "C": 14, "D": 15}

// Info sends an INFO request in the call and returns Handset's status.
func (call *Call) Info(ctx context.Context, contentType string, body []byte) (int, error) {
	req := sip.NewRequest(sip.INFO, call.sess.InviteResponse.Contact().Address)
	req.AppendHeader(sip.NewHeader("Content-Type", contentType))
	req.SetBody(body)
	res, err := call.sess.Do(ctx, req)
	if err != nil {
		return 0, err
	}
	return res.StatusCode, nil
}

// Reinvite sends a new offer in the call (hold, a new port) and returns Handset's status
// and answer; the ACK is sent for a 2xx.
func (call *Call) Reinvite(ctx context.Context, offer []byte) (int, []byte, error) {
	req := sip.NewRequest(sip.INVITE, call.sess.InviteResponse.Contact().Address)
	req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	req.SetBody(offer)
	res, err := call.sess.Do(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	if res.IsSuccess() {
		ack := sip.NewRequest(sip.ACK, call.sess.InviteResponse.Contact().Address)
		ack.AppendHeader(req.CSeq()) // same number as the re-INVITE
		_ = call.sess.WriteRequest(ack)
		if err := call.srtp.reinvited(res.Body()); err != nil {
			return res.StatusCode, res.Body(), err
		}
	}
	return res.StatusCode, res.Body(), nil
}

// OfferSDP is the usual offer of the simulated trunk, for a re-INVITE: dir is sendrecv,
// sendonly or inactive; version the o= line's.
func (call *Call) OfferSDP(dir string, version int) []byte {
	return call.srtp.offerFor(call.plainOfferSDP(dir, version), false)
}

// plainOfferSDP is OfferSDP as plain RTP.
func (call *Call) plainOfferSDP(dir string, version int) []byte {
	local := call.LocalRTP()
	return []byte(fmt.Sprintf("v=0\r\no=sipsim 4242 %d IN IP4 %s\r\ns=-\r\nc=IN IP4 %s\r\nt=0 0\r\n"+
		"m=audio %d RTP/AVP %d %d\r\na=rtpmap:%d %s/8000\r\na=rtpmap:%d telephone-event/8000\r\na=fmtp:%d 0-16\r\na=ptime:20\r\na=%s\r\n",
		version, local.Addr(), local.Addr(), local.Port(), call.pt, dtmfPT, call.pt, codecName(call.pt), dtmfPT, dtmfPT, dir))
}

// Received is every RTP packet Handset sent so far, in arrival order.
func (call *Call) Received() []Packet {
	call.mu.Lock()
	defer call.mu.Unlock()
	return append([]Packet(nil), call.received...)
}

// WaitReceived waits until at least n packets have arrived.
func (call *Call) WaitReceived(ctx context.Context, n int) ([]Packet, error) {
	for {
		got := call.Received()
		if len(got) >= n {
			return got, nil
		}
		select {
		case <-call.arrived:
		case <-ctx.Done():
			return got, fmt.Errorf("sipsim: %d of %d packets: %w", len(got), n, ctx.Err())
		}
	}
}

func (call *Call) read() {
	defer close(call.readerOut)
	buf := make([]byte, 1500)
	for {
		n, _, err := call.rtpConn.ReadFromUDPAddrPort(buf)
		if err != nil {
			return
		}
		datagram, ok := call.srtp.openPacket(buf[:n])
		var p rtp.Packet
		if !ok || p.Unmarshal(datagram) != nil {
			continue
		}
		call.mu.Lock()
		call.received = append(call.received, Packet{At: time.Now(), PayloadType: p.PayloadType, Marker: p.Marker,
			Sequence: p.SequenceNumber, Timestamp: p.Timestamp, SSRC: p.SSRC, Payload: bytes.Clone(p.Payload)})
		call.mu.Unlock()
		select {
		case call.arrived <- struct{}{}:
		default:
		}
	}
}

func (call *Call) send(pt uint8, marker bool, payload []byte, advance uint32, audio bool) error {
	call.sendMu.Lock()
	defer call.sendMu.Unlock()
	err := call.write(pt, marker, payload, call.ts)
	call.ts += advance
	return err
}

func (call *Call) sendAt(pt uint8, marker bool, payload []byte, ts uint32) error {
	call.sendMu.Lock()
	defer call.sendMu.Unlock()
	return call.write(pt, marker, payload, ts)
}

// write sends one packet; the caller holds sendMu.
func (call *Call) write(pt uint8, marker bool, payload []byte, ts uint32) error {
	p := rtp.Packet{Header: rtp.Header{Version: 2, Marker: marker, PayloadType: pt, SequenceNumber: call.seq,
		Timestamp: ts, SSRC: call.ssrc}, Payload: payload}
	call.seq++
	b, err := p.Marshal()
	if err == nil {
		b, err = call.srtp.sealPacket(b)
	}
	if err != nil {
		return err
	}
	_, err = call.rtpConn.WriteToUDPAddrPort(b, call.remote)
	return err
}

func (call *Call) hungUpByFarEnd() {
	call.byFarEnd.Store(true)
	call.closeMedia()
}

func (call *Call) closeMedia() {
	call.endOnce.Do(func() {
		close(call.ended)
		_ = call.rtpConn.Close()
	})
}

func offerSDP(ip netip.Addr, port uint16, pt uint8, name string) []byte {
	return []byte(fmt.Sprintf("v=0\r\no=sipsim 4242 1 IN IP4 %s\r\ns=-\r\nc=IN IP4 %s\r\nt=0 0\r\n"+
		"m=audio %d RTP/AVP %d %d\r\na=rtpmap:%d %s/8000\r\na=rtpmap:%d telephone-event/8000\r\na=fmtp:%d 0-16\r\na=ptime:20\r\na=sendrecv\r\n",
		ip, ip, port, pt, dtmfPT, pt, name, dtmfPT, dtmfPT))
}

// readAnswer finds where Handset receives RTP and its telephone-event type in its SDP
// answer: the c= address, the audio m= port, the rtpmap naming telephone-event.
func readAnswer(body []byte) (netip.AddrPort, uint8, error) {
	var addr netip.Addr
	var port int
	var dtmf uint8
	for line := range strings.Lines(string(body)) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "c=IN IP4 "), strings.HasPrefix(line, "c=IN IP6 "):
			a, err := netip.ParseAddr(strings.TrimSpace(line[9:]))
			if err != nil {
				return netip.AddrPort{}, 0, fmt.Errorf("sipsim: answer's %q: %w", line, err)
			}
			addr = a
		case strings.HasPrefix(line, "m=audio "):
			f := strings.Fields(line)
			p, err := strconv.Atoi(f[1])
			if err != nil {
				return netip.AddrPort{}, 0, fmt.Errorf("sipsim: answer's %q: %w", line, err)
			}
			port = p
		case strings.HasPrefix(line, "a=rtpmap:") && strings.Contains(line, "telephone-event"):
			n, _, _ := strings.Cut(line[len("a=rtpmap:"):], " ")
			v, err := strconv.Atoi(n)
			if err == nil && v > 0 && v < 128 {
				dtmf = uint8(v)
			}
		}
	}
	if !addr.IsValid() || port == 0 {
		return netip.AddrPort{}, 0, fmt.Errorf("sipsim: the answer names no address and port:\n%s", body)
	}
	return netip.AddrPortFrom(addr, uint16(port)), dtmf, nil
}

func randomUint32() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])
}

func randomTag() string { return strconv.FormatUint(uint64(randomUint32()), 36) }

func fromHeader(user, tag string, host netip.Addr) *sip.FromHeader {
	if tag == "" {
		tag = randomTag()
	}
	params := sip.NewParams()
	params.Add("tag", tag)
	return &sip.FromHeader{Address: sip.Uri{Scheme: "sip", User: user, Host: host.String()}, Params: params}
}

// ReferredTo is the Refer-To of the transfer Handset asked for; "" when none.
func (call *Call) ReferredTo() string {
	call.mu.Lock()
	defer call.mu.Unlock()
	return call.referredTo
}

// Contact is the Contact of Handset's 200 OK: where the call's next requests go.
func (call *Call) Contact() string {
	if h := call.sess.InviteResponse.Contact(); h != nil {
		return h.Address.String()
	}
	return ""
}
