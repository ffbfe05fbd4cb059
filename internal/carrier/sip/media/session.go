package media

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// Limits on what the call may queue ahead.
const (
	// MaxQueued is how much audio SendAudio accepts ahead of the send clock.
	MaxQueued = 2 * time.Second
	// MaxMarks bounds the marks sent and not yet reported.
	MaxMarks = 1024
	// maxDigits bounds the DTMF digits waiting to be sent.
	maxDigits = 32
)

// Session is one call's RTP media: a socket, the 20 ms send clock, the jitter buffer and
// DTMF both ways. Run owns the reader; SendAudio, SendMark and Clear come from one writer
// goroutine; the rest is safe from any goroutine.
type Session struct{}

// New checks cfg and returns a session that sends nothing until Start (or Run).
func New(cfg Config) (*Session, error) { return nil, errors.New("media: not implemented") }

// Start starts the send clock at once: comfort silence until audio is queued, so RTP flows
// from the 200 OK and the first syllable of the greeting is never clipped. Later calls do
// nothing.
func (s *Session) Start() {}

// Run reads RTP until ctx ends (returns ctx.Err() and closes the session), Close (returns
// nil) or the peer falls silent (returns an error wrapping ErrMediaTimeout). It delivers
// inbound audio as steady 20 ms frames in the codec's format to sink.Audio from the send
// clock's goroutine, digits to sink.DTMF, unreadable packets to sink.Malformed, and marks
// to sink.Mark. It starts the send clock if Start was not called. Call it once.
func (s *Session) Run(ctx context.Context, sink voice.LegSink) error { return nil }

// SendAudio queues audio in the codec's format (any length; the session cuts 20 ms
// frames, padding a short last one with silence). It returns ErrQueueFull beyond
// MaxQueued ahead of the send clock.
func (s *Session) SendAudio(ctx context.Context, audio []byte) error { return nil }

// SendMark asks for sink.Mark(name) once every byte queued before it has been sent on
// the RTP clock: with no carrier to echo marks, the send clock is what the caller heard.
func (s *Session) SendMark(ctx context.Context, name string) error { return nil }

// Clear drops the queued audio at once (the next tick sends silence) and reports every
// pending mark, in order, as done; each mark is reported exactly once.
func (s *Session) Clear(ctx context.Context) error { return nil }

// SendDTMF queues one digit (0-9, *, #, A-D) as an RFC 4733 event: an update on every
// 20 ms tick for 100 ms, then three end packets with the same timestamp. Queued audio
// waits while the event plays.
func (s *Session) SendDTMF(digit string) error { return nil }

// SetRemote points the session at a new peer address (a re-INVITE moved it); the session
// may latch again once under its LatchPolicy.
func (s *Session) SetRemote(addr netip.AddrPort) {}

// SetCodec switches to another codec (a re-INVITE changed it): the queued audio is in the
// old format, so it is dropped as by Clear, and the jitter buffer restarts.
func (s *Session) SetCodec(c Codec, dtmf uint8) error { return nil }

// Hold stops (on) or resumes sending RTP when the peer put the call on hold. The queue
// still drains on the clock while held, so marks keep coming back; the first packet after
// resuming carries the marker bit. The media timeout does not run while held.
func (s *Session) Hold(on bool) {}

// Stats returns a snapshot of the session's counters.
func (s *Session) Stats() Stats { return Stats{} }

// Close stops the clock and closes the socket; Run returns nil. It is safe to call twice.
func (s *Session) Close() error { return nil }
