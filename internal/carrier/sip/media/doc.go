// Package media owns one SIP call's audio path: the RTP session that carries it.
//
// A SIP call is two conversations. The signalling (INVITE, 200 OK, BYE) agrees in an
// SDP offer/answer on where each side wants audio sent (an address and an even UDP port), which codec to use (PCMU or PCMA: G.711, 8000 one-byte samples a second) and
// which RTP payload type numbers the codec and the telephone-event (DTMF) payloads carry.
// Then the audio itself travels as RTP packets over UDP, directly between the two media
// addresses, outside the dialog. This package is that second part. It knows nothing of
// SIP or SDP text: the SIP carrier maps the answer onto a Config, and re-INVITEs onto
// SetRemote, SetCodec and Hold.
//
// # Sending: a clock, not a pipe
//
// RTP has no flow control and no acknowledgements: the far end plays what arrives when its
// timestamp says. So a Session sends on a 20 ms clock (internal/audio/pace: frame n is due
// at start + n·20 ms, late wake-ups catch up, nothing drifts), one packet per tick, from
// Start until Close. The clock is a Ticker's: a few goroutines ("beats", spread over the
// 20 ms) tick every session of a carrier in turn, because a goroutine and a timer of its
// own per call cost a wake-up per packet, more than a tenth of the CPU at hundreds of
// calls. A session alone (Config.Ticker nil) gets a Ticker of its own. The call's playout queues audio ahead of real time (up to
// MaxQueued); each tick takes the next 20 ms of it, or sends encoded silence when the
// queue is empty ("comfort silence": it keeps NAT bindings and trunks' media timers alive,
// and it means the greeting's first packet leaves on the tick after it is queued, never
// behind a stream that had to start first). Sequence numbers and timestamps start at
// random and advance without a break across silence, audio, clears, DTMF and hold; the
// marker bit flags the first packet of each talkspurt and the first after a hold.
//
// There are no carrier marks in SIP: nobody tells us what the caller heard. The send clock
// is the answer: a mark is reported once every byte queued before it has been written to
// the socket on its tick, so the call's "heard prefix" is exact to the frame. Clear drops
// the queue at once and the pending marks are reported on the next tick, in order, each
// exactly once.
//
// # Receiving: playout on the same tick
//
// Run reads the socket. Each datagram must come from the peer's address (see
// LatchPolicy for symmetric RTP behind NAT; everyone else is a stranger, dropped and
// counted), parse as RTP version 2 (at most 1500 bytes, pion/rtp), and carry the codec's,
// the telephone-event's or the comfort-noise payload type; anything else from the peer is
// reported to sink.Malformed and never ends the call. RTCP that a peer multiplexes onto
// the RTP port is recognised and ignored.
//
// Audio goes into a jitter buffer that places samples by timestamp, so reordering needs
// no sorting and packets of 10, 30 or 60 ms are re-cut into 20 ms frames; duplicates are
// dropped by sequence number (16-bit wraparound handled), late packets counted and
// dropped. An SSRC change or a timestamp or sequence jump starts a new stream, placed
// right after the audio already buffered, so a failover on the peer's side loses nothing. Lost audio is played
// as silence, not repeated: a repeated fragment of speech would be heard as more speech by
// the call's voice detector. Its cushion adapts between one and five frames (20-100 ms)
// from the RFC 3550 jitter estimate and from packets that arrive too late.
//
// G.722 (wideband, payload type 9) is coded inside the session (g722.go): the jitter
// buffer places its code bytes by timestamp as it does G.711's, the send clock encodes the
// call's 16 kHz PCM16, playout decodes, and a lost frame plays as silence without
// touching the decoder's state.
//
// Playout is driven by the send clock, not by arrivals: every tick pops exactly one frame
// and hands it to sink.Audio. The call's voice detector and speech-to-text expect a steady
// 50 frames a second; arrival-driven playout would pass the network's bunching and gaps
// straight through, and a second timer per call would double the wake-ups the bench
// pays for 500 calls. So sink.Audio is called from the session's beat, sink.DTMF and
// sink.Malformed from Run's goroutine; both stop before Run returns. A beat ticks many
// calls, so sink.Audio must never wait on anything another goroutine holds for long. Marks the clock finds due go
// to sink.Mark from a goroutine started for them: a sink that blocks on a mark (a call
// whose event queue is full) must not stop the RTP.
//
// DTMF arrives as RFC 4733 events: every packet of one key press carries the same
// timestamp, updates repeat with a growing duration and the end packet is sent three
// times. A digit is reported once, on the first packet of its event seen (even if that is
// an end packet), and retransmits of a recent event are ignored. SendDTMF sends the same
// shape: an update every tick for 100 ms, then three end packets, audio held back meanwhile.
//
// # SRTP
//
// A trunk that requires encrypted media agrees SRTP in the SDP (RTP/SAVP, SDES keys in
// a=crypto lines): each side picked its own key, and Config.SRTP gives the session both,
// Handset's to encrypt what it sends and the peer's to decrypt what arrives (pion/srtp).
// Sealing happens on the tick, after the packet is built; opening happens after the
// source check and before the parser, so an unauthenticated packet never latches the
// peer's address, reaches the jitter buffer or counts as media. One that fails
// authentication is reported to sink.Malformed (ErrUnauthentic) and dropped; a replayed
// one is counted as a duplicate. Both directions reuse their buffers: no allocation per
// packet. SetSRTP rekeys the session when a re-INVITE brings new keys.
//
// # Bridging two sessions
//
// When a peer refuses to transfer a call, the SIP carrier calls the target itself and
// joins the two calls. A Forwarder is then each session's sink: every frame one session
// plays out is queued on the other's send clock (G.711 laws transcoded byte for byte
// through a table), keys are sent on as events, and the far queue is kept within 100 ms so
// two clocks that drift or stall never add delay. Nothing allocates per frame.
//
// # Timeouts
//
// A peer that never sends RTP (FirstMediaTimeout from Start) or stops (MediaTimeout since
// the last packet, not counted while on hold) ends Run with ErrMediaTimeout: a dead call
// must not hold a line and an agent for hours.
package media
