package media

import (
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/handset-voice/handset/internal/clock"
)

// Default timeouts when Config leaves them zero.
const (
	DefaultFirstMediaTimeout = 30 * time.Second
	DefaultMediaTimeout      = 15 * time.Second
)

// LatchPolicy is which source address a session adopts as the peer's real media address
// (symmetric RTP: a peer behind NAT sends from an address its SDP could not know, and
// expects our RTP back there). A session latches at most once per remote address it is
// given (New, SetRemote), on the first valid packet (RTP version 2, the codec's, the
// telephone-event or the comfort-noise payload type) from an acceptable source; after
// that every other source is a stranger, dropped and counted, so an attacker who learns
// the port cannot take the call's media over mid-call.
type LatchPolicy uint8

const (
	// LatchPeer (the default) latches to a packet from the SDP address's IP or the SIP
	// signalling peer's IP (Config.Peer), any port: the usual NAT case, where the
	// port is rewritten but the trunk's address is known.
	LatchPeer LatchPolicy = iota
	// LatchStrict accepts only the exact SDP address and never latches.
	LatchStrict
	// LatchAny latches to the first valid packet from any address: for trunks whose
	// media servers are not their signalling servers and whose SDP address is private.
	// Anyone who reaches the port first wins, so use it only when LatchPeer cannot work.
	LatchAny
)

// Config is one call's media as the SDP offer/answer settled it.
type Config struct {
	// Conn is the local RTP socket (from Ports.Listen); the session owns and closes it.
	Conn *net.UDPConn
	// Remote is where the peer's SDP said to send. An unspecified address (0.0.0.0,
	// the old hold convention) sends nothing until the session latches.
	Remote netip.AddrPort
	// Peer is the IP the SIP signalling came from: LatchPeer also latches to it.
	Peer netip.Addr
	// Latch is the symmetric RTP rule (see LatchPolicy).
	Latch LatchPolicy
	// Codec is the audio payload; DTMF is the telephone-event payload type (RFC 4733),
	// 0 when it was not negotiated.
	Codec Codec
	DTMF  uint8
	// Clock drives the send schedule, playout and timeouts; nil is the wall clock.
	Clock clock.Clock
	// Ticker ticks the session's send clock together with others' (see Ticker): a
	// carrier shares one among all its calls, and its clock, not Clock, times the ticks.
	// Nil gives the session a Ticker of its own on Clock.
	Ticker *Ticker
	// FirstMediaTimeout is how long after Start the peer may stay silent (no RTP at
	// all); MediaTimeout how long once media flowed (not counted on hold). Zero picks
	// the defaults; Run then returns ErrMediaTimeout.
	FirstMediaTimeout, MediaTimeout time.Duration
	// SRTP keys the media when the SDP agreed on RTP/SAVP; the zero value is plain RTP.
	SRTP SRTP
	// Log receives the session's rare events (latching, resets); nil discards them.
	Log *slog.Logger
}
