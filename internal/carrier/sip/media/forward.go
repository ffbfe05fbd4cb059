package media

import (
	"time"
)

// A bridge joins two sessions: what one hears, the other sends. Each session keeps its own
// send clock; a Forwarder, as the sink of one session's Run, queues every frame that
// session plays out into the other's send queue, so the audio crosses on the clock ticks
// already running, one frame each, with no third timer and no allocation.

// maxBridgeBacklog bounds the audio waiting in the far session's queue: the two clocks run
// at the same rate, so the queue holds a frame or two; more means one clock caught up
// after a stall, and the stale audio is dropped rather than heard later and later.
const maxBridgeBacklog = 100 * time.Millisecond

// Forwarder is the sink that bridges session from to session to: from's inbound audio is
// queued on to's send clock (G.711 transcoded when the two codecs' laws differ), its DTMF
// digits sent on as RFC 4733 events, its marks ignored (a bridge queues none).
type Forwarder struct {
	from, to *Session
}

// NewForwarder returns the sink for from's Run that sends what from hears into to.
func NewForwarder(from, to *Session) *Forwarder {
	return &Forwarder{from: from, to: to}
}

// Audio queues one frame of from's audio on to's send clock.
func (f *Forwarder) Audio(frame []byte) { panic("not yet") }

// Mark ignores a mark: a bridge sends none of its own.
func (f *Forwarder) Mark(string) {}

// DTMF sends a key pressed on one side to the other as an RFC 4733 event.
func (f *Forwarder) DTMF(digit string) { panic("not yet") }

// Malformed ignores an unreadable packet: the session counts it.
func (f *Forwarder) Malformed(error) {}

// Forwarded returns how many frames were queued on to and how many were dropped (the
// codecs could not be bridged, or to's queue was already maxBridgeBacklog ahead).
func (f *Forwarder) Forwarded() (frames, dropped uint64) { panic("not yet") }

// Codec is the codec the session sends and expects now (a re-INVITE may change it).
func (s *Session) Codec() Codec {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codec
}

// Backlog is the audio queued ahead of the send clock.
func (s *Session) Backlog() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codec.Format.Duration(s.queue.size)
}
