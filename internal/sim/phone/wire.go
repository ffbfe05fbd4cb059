package phone

import (
	"fmt"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio"
)

// Wire is one carrier's media-stream protocol as its caller speaks it: the frames the
// caller sends and how it reads Handset's. A Wire serves one call. The core calls the
// sending methods (Handshake, AppendMedia, Mark, Cleared, DTMF, Stop) only from the call's
// writer, one at a time, so a Wire may keep a sequence counter without a lock; Decode is
// called only from the reader and must not touch that state.
type Wire interface {
	// Info describes the stream; it is read once, before the handshake.
	Info() Info
	// Handshake is what the caller sends once the socket is open, in order, before the
	// first paced media frame (Twilio: connected and start). The stream's time origin is
	// taken just before the last of them goes out.
	Handshake() [][]byte
	// AppendMedia appends one media message carrying payload (audio in Info().Format) to
	// dst and returns it. It runs for every frame and must not allocate beyond dst's
	// growth; payload is valid only during the call.
	AppendMedia(dst, payload []byte, f Frame) []byte
	// Mark is the caller's report that a mark (a checkpoint) Handset sent has played, or
	// was dropped by a clear (cleared). Nil sends nothing: a carrier that reports only
	// played marks returns nil when cleared. The recording notes the mark (a MarkEchoed
	// event, Cleared set) either way.
	Mark(name string, cleared bool) []byte
	// Cleared is what the caller sends after carrying out a clear; nil for nothing.
	Cleared() []byte
	// DTMF is the message for one key press (0-9, * or #).
	DTMF(digit string) []byte
	// Stop is the message sent when the caller hangs up, before the socket closes
	// normally; nil closes without one.
	Stop() []byte
	// Decode reads one message from Handset. Media audio may alias msg or scratch (a
	// buffer the core reuses; Decode may grow it and returns it in Inbound.Scratch) and is
	// valid until the next Decode. A message the carrier would reject is an error,
	// preferably a *WireError naming the carrier's code; it is recorded and the call
	// goes on.
	Decode(typ websocket.MessageType, msg, scratch []byte) (Inbound, error)
}

// Info is what the core needs to know of a Wire's stream.
type Info struct {
	// Name is the carrier's name, for logs and errors ("twilio").
	Name string
	// Format is the audio in media messages both ways. The core converts: the caller's
	// speech (Say) and the recording (PlayedAudio, Event.Audio) are 8 kHz mu-law whatever
	// the wire carries. Supported: mu-law, A-law and PCM16 at 8 or 16 kHz. Zero means
	// audio.Telephone.
	Format audio.Format
	// Frame is how much audio each paced media message carries: 20 ms when zero; any
	// multiple of 20 ms (a carrier sending 60 ms chunks says so here).
	Frame time.Duration
	// MaxBuffered is how far ahead the carrier buffers Handset's audio; more is refused
	// with OverflowCode. Zero means ten minutes.
	MaxBuffered time.Duration
	// MalformedCode is the carrier's error code recorded when Decode fails without a
	// *WireError; OverflowCode is the one recorded for audio beyond MaxBuffered.
	MalformedCode, OverflowCode int
	// AudioOnly is a stream that carries audio and key presses alone (RTP to a SIP
	// trunk): Handset sends no marks or clears on it, so the phone finds where each of
	// Handset's replies ended in the audio itself (see ReplyEnded).
	AudioOnly bool
}

// Frame places one paced media message in the stream.
type Frame struct {
	// Chunk counts media messages from 1.
	Chunk int
	// At is the stream time of the frame's first sample.
	At time.Duration
}

// InKind says what a message from Handset asks for.
type InKind uint8

// Kinds of messages from Handset.
const (
	InIgnore InKind = iota // a message the carrier accepts and the caller has nothing to do for
	InMedia                // audio to queue for playback: Inbound.Audio
	InMark                 // a mark (checkpoint) to report once the audio before it played: Inbound.Name
	InClear                // drop the queued audio and report the pending marks as cleared
)

// Inbound is one decoded message from Handset.
type Inbound struct {
	Kind    InKind
	Audio   []byte // InMedia: in Info().Format
	Name    string // InMark
	Scratch []byte // the scratch buffer, possibly grown, for the core to pass next time
}

// WireError is a message from Handset that the carrier would reject; the core records it
// as a ProtocolError event.
type WireError struct {
	Code   int    // the carrier's error code
	Detail string // what was wrong
}

func (e *WireError) Error() string { return fmt.Sprintf("protocol error %d: %s", e.Code, e.Detail) }
