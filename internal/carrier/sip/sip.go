// Package sip is Handset's carrier for direct SIP trunks: calls from a SIP provider's
// trunk or a PBX (Asterisk, FreeSWITCH, 3CX) straight to Handset, with no carrier
// WebSocket in between.
//
// A SIP call has two halves. Signalling (this package, over github.com/emiago/sipgo)
// sets the call up and tears it down: the trunk's INVITE carries an SDP offer (where it
// wants audio and in which codecs), Handset answers 100 Trying and 180 Ringing at once,
// then 200 OK with its SDP answer, the caller's ACK confirms, and a BYE from either side
// ends it. Media (internal/carrier/sip/media) is RTP over UDP between the addresses the
// offer and answer named, 20 ms packets each way; internal/carrier/sip/sdp reads and
// writes the offers and answers.
//
// A public SIP port is probed all day by scanners. Only the sources HANDSET_SIP_ALLOW
// names (internal/carrier/sip/allow) get past the gate that stands before the parser;
// everyone else gets a few 403s a second at most, one log line, and nothing else.
//
// Trunks that require it get SIP over TLS (tls.go: its own port, strangers' connections
// closed before the handshake) and SRTP (srtp.go: a fresh SDES key per call, the agreed
// keys handed to the media session); HANDSET_SIP_SRTP=required refuses plain RTP.
//
// A call is transferred with a blind REFER: the peer is asked to call the number itself.
// A peer that will not (501, 405…) gets the transfer done anyway: Handset calls the number
// through the trunk and bridges the two calls, staying in the media path until one side
// hangs up (bridge.go; handoff.go hands the call's media from the agent to the bridge).
package sip

// Name is the carrier's name, as HANDSET_CARRIER and call records use it.
const Name = "sip"
