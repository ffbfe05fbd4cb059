package phone

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/clock"
)

// ErrEnded is returned by actions on a call whose stream has ended.
var ErrEnded = errors.New("phone: call ended")

// Phone is one simulated call as a test or a load script holds it, whatever the carrier.
// *Call implements it; a carrier's caller may wrap a *Call to add its own ids.
type Phone interface {
	// Ref is the carrier's id of the call (Twilio's CallSid, Telnyx's call_control_id).
	Ref() string
	// Say queues caller speech (8 kHz mu-law) after anything queued before it and returns
	// at once; the channel closes when its last frame was sent or the call ended first.
	Say(mulaw []byte) <-chan struct{}
	// SayAndWait queues caller speech and waits until its last frame was sent.
	SayAndWait(ctx context.Context, mulaw []byte) error
	// DTMF sends one key press: 0-9, * or #.
	DTMF(digit string) error
	// SendRaw writes text as one text frame, in order with the other messages.
	SendRaw(text string) error
	// Hangup ends the call as a caller hanging up and waits for it; it returns Err.
	Hangup() error
	// Done is closed once the call has ended and its goroutines have returned.
	Done() <-chan struct{}
	// Err is why the call ended abnormally; nil while it runs and after a clean end.
	Err() error
	// Ending reports how the call ended; ok is false while it runs.
	Ending() (e Ending, ok bool)
	// Snapshot is the recording so far.
	Snapshot() Snapshot
	// WaitFor blocks until cond holds over the recording, re-checking on every event.
	WaitFor(ctx context.Context, cond func(Snapshot) bool) error
	// Counters are the audio totals so far, kept with Lean too.
	Counters() Counters
	Events() []Event
	Marks() []Mark
	Clears() int
	PlayedAudio() []byte
	SpeechSegments() []SpeechSegment
	HeardSpeech(from, to time.Duration) bool
	ProtocolErrors() []Event
	// Elapsed is the time since the stream started, the origin of recorded times.
	Elapsed() time.Duration
}

var _ Phone = (*Call)(nil)

// Options shape one call's stream once its socket is open.
type Options struct {
	// Ref is the carrier's id of the call, returned by Ref.
	Ref string
	// Echo, when set, returns part of what the caller hears to Handset, as a real phone
	// line does: every media frame the caller streams mixes the caller's own audio with
	// the audio that played on the caller's side Delay earlier, GainDB quieter. Nil (the
	// default) streams the caller's audio alone.
	Echo *EchoOptions
	// Lean keeps a call's memory flat however long it runs, for load generation: the
	// audio Handset sends is counted (see Counters) but not kept, so no AudioReceived or
	// AudioPlayed events are recorded and PlayedAudio, ReceivedAudio, SpeechSegments and
	// HeardSpeech find nothing. Everything else is recorded as usual: marks and their
	// reports, clears, DTMF, Say, protocol errors, raw frames, stop and the end. The
	// playback buffer still times marks exactly; it holds only the length of what is
	// queued, or the audio itself until it has played and echoed when Echo is set.
	Lean bool
	// Silent sends no media at all, as a line whose audio never reaches the carrier: the
	// handshake, key presses, raw frames, mark reports and stop still go out; Say's audio
	// is never sent (its channel closes when the call ends).
	Silent bool
	// WriteTimeout bounds one write to Handset; a Handset that stops reading for this long
	// loses the call, as it would lose a real carrier's stream. Default 10 s.
	WriteTimeout time.Duration
	Clock        clock.Clock  // paces media and playback; default the wall clock
	Logger       *slog.Logger // default discards
}

// DefaultWriteTimeout is Options.WriteTimeout when zero.
const DefaultWriteTimeout = 10 * time.Second

// Run takes over conn, a media-stream socket the caller has just opened: it sends wire's
// handshake, then streams silence at real-time pace and plays what Handset sends until
// the call ends. ctx bounds the whole call: cancelling it drops the stream without a stop
// message. If the handshake cannot be sent, conn is closed and the error returned.
func Run(ctx context.Context, conn *websocket.Conn, wire Wire, opts Options) (*Call, error) {
	return run(ctx, &wsTransport{conn: conn}, wire, opts)
}

// RunTransport is Run over any transport: a SIP trunk's caller hands it its RTP socket
// (see Transport). If the handshake cannot be sent, the transport is dropped (CloseNow)
// and the error returned.
func RunTransport(ctx context.Context, t Transport, wire Wire, opts Options) (*Call, error) {
	return run(ctx, t, wire, opts)
}

// Detached is a call with no socket, for testing a Wire's decoding: Feed hands it
// Handset's messages, the playback buffer and the recording work as in a running call,
// and nothing is sent. Cancel ctx (or Hangup) to release it.
func Detached(ctx context.Context, wire Wire, opts Options) (*Call, error) {
	c, err := newCall(ctx, wire, opts, nil)
	if err != nil {
		return nil, err
	}
	c.detached = true
	context.AfterFunc(c.ctx, func() { c.finish(Ending{Code: -1, Err: context.Cause(c.ctx)}); close(c.done) })
	return c, nil
}

// Feed applies one message from Handset as if it had been read from the socket. Only for
// a Detached call: a running call's reader owns the state Feed uses.
func (c *Call) Feed(typ websocket.MessageType, data []byte) {
	if !c.detached {
		panic("phone: Feed on a call with a socket")
	}
	c.handleMessage(typ, data)
}
