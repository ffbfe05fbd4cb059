// Package sdp negotiates the audio of a SIP call. A SIP INVITE carries an SDP body (RFC
// 4566): a few text lines saying where the sender wants to receive RTP (the c= address and
// the m= port) and which codecs it can decode, each named by an RTP payload type number.
// The other side answers with the same kind of body (RFC 3264 offer/answer), choosing
// among what was offered. This package owns that exchange for the one audio stream a phone
// call has: reading a peer's offer or answer (Parse, ParseAnswer), writing Handset's
// answer (Answer) and its own offers for outbound calls and holds (Offer).
//
// Handset speaks G.711 (PCMU, PCMA), optionally G.722, and RFC 4733 telephone-event for
// keypresses. Everything else a peer lists (opus, G.729, comfort noise, ICE, RTCP
// attributes, video) is read past and left out of the answer. Bodies come from the open
// internet: Parse bounds their size and refuses what it cannot read with an error saying
// why, and the package is fuzzed.
//
// SRTP keys (SDES, RFC 4568 a=crypto lines) are parsed and validated here so a secure
// offer is either answered with a key the media side can use or refused; encrypting the
// packets is the media side's.
package sdp

import (
	"errors"
	"net/netip"
	"time"
)

// MaxBodySize bounds an SDP body. A phone call's body is a few hundred bytes; peers that
// list many codecs and ICE candidates stay well under this.
const MaxBodySize = 8 << 10

// Errors Parse, Answer and ParseAnswer classify their failures with (errors.Is). The SIP
// side answers ErrNoCommonCodec and ErrSecureUnsupported with 488 Not Acceptable Here,
// the others with 400 Bad Request.
var (
	ErrTooLarge = errors.New("sdp: body larger than 8 KiB")
	ErrSyntax   = errors.New("sdp: malformed body")
	ErrNoAudio  = errors.New("sdp: no audio stream")
	ErrAddress  = errors.New("sdp: no usable connection address")
	// ErrNoCommonCodec: none of the audio codecs offered is one Handset speaks.
	ErrNoCommonCodec = errors.New("sdp: no codec in common")
	// ErrSecureUnsupported: the offer requires SRTP (RTP/SAVP) and either carries no key
	// Handset can use or Handset has no key of its own for the suite.
	ErrSecureUnsupported = errors.New("sdp: secure RTP offered without a usable key")
	// ErrBadCrypto: an a=crypto line is malformed (its tag, suite or key).
	ErrBadCrypto = errors.New("sdp: malformed crypto attribute")
	// ErrNotOffered: an answer chose a codec or payload type Handset did not offer.
	ErrNotOffered = errors.New("sdp: answer chose what was not offered")
)

// Codec is one audio codec as RTP carries it.
type Codec struct {
	Name        string // "PCMU", "PCMA", "G722"
	PayloadType uint8
	// ClockRate is the RTP timestamp rate. G.722 samples at 16 kHz but its RTP clock runs
	// at 8000 (RFC 3551 keeps an old mistake for compatibility).
	ClockRate int
}

// The codecs Handset speaks, with their static payload types (RFC 3551).
var (
	PCMU = Codec{Name: "PCMU", PayloadType: 0, ClockRate: 8000}
	PCMA = Codec{Name: "PCMA", PayloadType: 8, ClockRate: 8000}
	G722 = Codec{Name: "G722", PayloadType: 9, ClockRate: 8000}
)

// Direction is which way media flows, from the describing side's point of view.
type Direction string

// The four directions of RFC 3264. A body without one means SendRecv.
const (
	SendRecv Direction = "sendrecv"
	SendOnly Direction = "sendonly"
	RecvOnly Direction = "recvonly"
	Inactive Direction = "inactive"
)

// Media is the audio stream one SDP body describes, as its sender sees it.
type Media struct {
	// Addr is where the sender receives RTP: the media-level c= address (else the
	// session-level one) and the m= port. Port 0 means the stream is declined.
	Addr netip.AddrPort
	// Codecs are the audio codecs Handset knows among those listed, in the sender's order
	// of preference, with the sender's payload type numbers. telephone-event and comfort
	// noise are not codecs here; codecs Handset does not speak are left out.
	Codecs []Codec
	// DTMF is the telephone-event payload type (RFC 4733), 0 when absent; DTMFRate its
	// clock rate. Only 8000 pairs with the 8 kHz clocks of G.711 and G.722.
	DTMF     uint8
	DTMFRate int
	// Direction is the sender's; SendRecv when the body says none.
	Direction Direction
	// Ptime is the packet duration the sender asked for (a=ptime), 0 when absent.
	Ptime time.Duration
	// Secure: the stream is RTP/SAVP (SRTP), keyed by one of Crypto.
	Secure bool
	Crypto []Crypto
	// SessionID and SessionVersion are the o= line's: a re-INVITE with the same version
	// changes nothing (a session refresh).
	SessionID, SessionVersion uint64

	// streams are every m= line of the body Parse read, and audio the index of this one:
	// an Answer repeats them all.
	streams []stream
	audio   int
}

// Codec is the first (preferred, or in an agreed Media the only) codec; the zero Codec
// when there is none.
func (m Media) Codec() Codec {
	if len(m.Codecs) == 0 {
		return Codec{}
	}
	return m.Codecs[0]
}

// OnHold reports whether the sender put the call on hold: it will not receive (sendonly or
// inactive), or it gave the old-style hold address 0.0.0.0 (RFC 2543).
func (m Media) OnHold() bool {
	return m.Direction == SendOnly || m.Direction == Inactive ||
		(m.Addr.Addr().Is4() && m.Addr.Addr().IsUnspecified())
}

// Local is Handset's side of a negotiation.
type Local struct {
	// Addr is the address peers send RTP to: the advertised public address (NAT) and the
	// call's RTP port.
	Addr netip.AddrPort
	// Codecs are the codecs Handset will use, most preferred first.
	Codecs []Codec
	// DTMF is the telephone-event payload type Handset offers (101 by custom); 0 offers none.
	DTMF uint8
	// SessionID and Version fill the o= line; bump Version on every changed offer.
	SessionID, Version uint64
	// Ptime asks for a packet duration (a=ptime); 0 leaves it out (20 ms is the default).
	Ptime time.Duration
	// Direction is Handset's wish: SendRecv (or empty) normally, SendOnly to put the peer
	// on hold, Inactive to stop media both ways.
	Direction Direction
	// Crypto are Handset's own SRTP keys, at most one per suite. Empty: plain RTP, and a
	// secure offer is refused with ErrSecureUnsupported.
	Crypto []Crypto
}
