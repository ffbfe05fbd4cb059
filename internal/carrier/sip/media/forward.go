package media

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
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
//
// Audio is called from from's beat and DTMF from its reader, as for any sink.
type Forwarder struct {
	from, to  *Session
	converted [maxFrameBytes]byte // a transcoded frame, reused
	frames    atomic.Uint64
	dropped   atomic.Uint64
}

// NewForwarder returns the sink for from's Run that sends what from hears into to.
func NewForwarder(from, to *Session) *Forwarder {
	return &Forwarder{from: from, to: to}
}

// Audio queues one frame of from's audio on to's send clock.
func (f *Forwarder) Audio(frame []byte) {
	payload, ok := f.convert(frame, f.from.Codec().Format, f.to.Codec().Format)
	if !ok || f.to.Backlog() >= maxBridgeBacklog || f.to.SendAudio(context.Background(), payload) != nil {
		f.dropped.Add(1)
		return
	}
	f.frames.Add(1)
}

// convert is frame in to's format: itself when the formats match, the other law's bytes
// when only the G.711 law differs; false for formats a bridge cannot join (another rate).
func (f *Forwarder) convert(frame []byte, in, out audio.Format) ([]byte, bool) {
	switch {
	case in == out:
		return frame, true
	case in.Rate != out.Rate || len(frame) > len(f.converted):
		return nil, false
	case in.Encoding == audio.Mulaw && out.Encoding == audio.Alaw:
		return lawSwap(f.converted[:len(frame)], frame, &mulawToAlaw), true
	case in.Encoding == audio.Alaw && out.Encoding == audio.Mulaw:
		return lawSwap(f.converted[:len(frame)], frame, &alawToMulaw), true
	}
	return nil, false
}

// Mark ignores a mark: a bridge sends none of its own.
func (f *Forwarder) Mark(string) {}

// DTMF sends a key pressed on one side to the other as an RFC 4733 event; when the other
// side took no telephone-event, the key is lost (its tone was not in the audio either).
func (f *Forwarder) DTMF(digit string) { _ = f.to.SendDTMF(digit) }

// Malformed ignores an unreadable packet: the session counts it.
func (f *Forwarder) Malformed(error) {}

// Forwarded returns how many frames were queued on to and how many were dropped (the
// codecs could not be bridged, or to's queue was already maxBridgeBacklog ahead).
func (f *Forwarder) Forwarded() (frames, dropped uint64) {
	return f.frames.Load(), f.dropped.Load()
}

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

// The G.711 laws map onto each other byte for byte, through the sample both decode to.
var mulawToAlaw, alawToMulaw = lawTables()

func lawTables() (toA, toU [256]byte) {
	for b := range 256 {
		toA[b] = g711.EncodeAlawSample(g711.DecodeMulawSample(byte(b)))
		toU[b] = g711.EncodeMulawSample(g711.DecodeAlawSample(byte(b)))
	}
	return toA, toU
}

func lawSwap(dst, src []byte, table *[256]byte) []byte {
	for i, b := range src {
		dst[i] = table[b]
	}
	return dst
}
