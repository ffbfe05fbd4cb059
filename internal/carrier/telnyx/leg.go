package telnyx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/carrier/mediastream"
	"github.com/handset-voice/handset/internal/voice"
)

// Leg is one Telnyx media stream.
type Leg struct {
	conn  *websocket.Conn
	info  voice.LegInfo
	codec Codec
	log   *slog.Logger
	early *mediastream.PreStart // what came before `start`, handed to the call when it runs
	// hangup ends the call at Telnyx: closing its stream alone would leave it up, silent.
	hangup func(context.Context) error

	// mu guards what the reader (echoes) and the writer (marks sent, clear) share.
	mu    sync.Mutex
	sink  voice.LegSink
	marks mediastream.MarkBook

	order   mediastream.Reorder // the reader's: Telnyx does not promise media order
	out     []byte              // the writer's reused message buffer
	scratch []byte              // the writer's reused L16 byte-swap buffer
}

var _ voice.Leg = (*Leg)(nil)

func newLeg(conn *websocket.Conn, info voice.LegInfo, codec Codec, early *mediastream.PreStart, hangup func(context.Context) error, log *slog.Logger) *Leg {
	return &Leg{conn: conn, info: info, codec: codec, early: early, hangup: hangup, log: log, out: make([]byte, 0, 512)}
}

// Info describes the call.
func (l *Leg) Info() voice.LegInfo { return l.info }

// Run reads Telnyx's messages until `stop`, a close, or ctx ends. When the call ends on
// Handset's side (ctx, or a stream that broke), Run hangs the call up before it returns:
// a Telnyx call outlives its media stream.
func (l *Leg) Run(ctx context.Context, sink voice.LegSink) error {
	defer l.conn.Close(websocket.StatusNormalClosure, "call ended")
	// Reads and writes pass a context that is never cancelled, so the WebSocket library
	// arms no cancellation watch per frame; the call's end closes the socket instead.
	stop := context.AfterFunc(ctx, func() { _ = l.conn.CloseNow() })
	defer stop()
	l.mu.Lock()
	l.sink = sink
	l.mu.Unlock()
	if l.early != nil {
		l.early.Replay(sink)
		l.early = nil
	}
	emit := func(frame []byte) {
		if len(frame) > 0 {
			sink.Audio(frame)
		}
	}
	buf := make([]byte, 0, 4096)
	var in bytes.Buffer // one message at a time, reused
	for {
		msg, err := l.read(&in)
		if err != nil {
			l.order.Flush(emit)
			if ctx.Err() != nil {
				l.hangUp(ctx)
				return ctx.Err()
			}
			if websocket.CloseStatus(err) != -1 {
				return nil // Telnyx closed the stream: the call is over
			}
			l.hangUp(ctx)
			return fmt.Errorf("telnyx: read: %w", err)
		}
		var m media
		m, buf, err = decodeMedia(buf, msg, l.codec == CodecL16)
		if err == nil {
			if n := m.order(); n > 0 {
				l.order.Push(n, m.audio, emit)
			} else {
				emit(m.audio)
			}
			continue
		}
		if !errors.Is(err, errNotMedia) {
			sink.Malformed(err)
			continue
		}
		if done := l.event(msg, sink, emit); done {
			return nil
		}
	}
}

// hangUp ends the call at Telnyx; a call that has ended already counts as hung up.
func (l *Leg) hangUp(ctx context.Context) {
	if l.hangup == nil {
		return
	}
	if err := l.hangup(context.WithoutCancel(ctx)); err != nil {
		l.log.Warn("could not hang up the call at Telnyx", "call_control_id", l.info.CarrierRef, "err", err)
	}
}

// event handles a message other than media; done is true when it ends the call.
func (l *Leg) event(msg []byte, sink voice.LegSink, emit func([]byte)) (done bool) {
	in, err := decodeInbound(msg)
	if err != nil {
		sink.Malformed(err)
		return false
	}
	switch in.Event {
	case "mark":
		l.mu.Lock()
		reported, known := l.marks.Played(in.Mark.Name)
		for _, name := range reported {
			sink.Mark(name)
		}
		l.mu.Unlock()
		if !known {
			sink.Malformed(fmt.Errorf("echo of a mark never sent: %q", voice.Clip(in.Mark.Name, 40)))
		}
	case "dtmf":
		sink.DTMF(in.DTMF.Digit)
	case "error":
		err := fmt.Errorf("telnyx stream error %d %s: %s", in.Payload.Code, voice.Clip(in.Payload.Title, 60), voice.Clip(in.Payload.Detail, 120))
		l.log.Warn("media stream error", "call_control_id", l.info.CarrierRef, "err", err)
		sink.Malformed(err)
	case "stop":
		l.order.Flush(emit)
		return true
	case "connected", "start":
	default:
		sink.Malformed(fmt.Errorf("unknown event %q", voice.Clip(in.Event, 40)))
	}
	return false
}

// SendAudio sends audio in the stream's codec as one media message.
func (l *Leg) SendAudio(ctx context.Context, audio []byte) error {
	if l.codec == CodecL16 {
		l.scratch = wireAudio(l.scratch, audio, l.codec)
		audio = l.scratch
	}
	l.out = appendMedia(l.out[:0], audio)
	return l.write(ctx)
}

// SendMark asks Telnyx to echo name once everything sent before it has played.
func (l *Leg) SendMark(ctx context.Context, name string) error {
	l.mu.Lock()
	err := l.marks.Sent(name)
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("telnyx: mark %q: %w", voice.Clip(name, 40), err)
	}
	l.out = appendMark(l.out[:0], name)
	return l.write(ctx)
}

// Clear drops the audio Telnyx has buffered. Whether Telnyx echoes the marks still
// pending is not promised, so the leg reports them itself, in order, and ignores any late
// echo: every mark comes back once, played or dropped, as the call expects.
func (l *Leg) Clear(ctx context.Context) error {
	l.out = appendClear(l.out[:0])
	err := l.write(ctx)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, name := range l.marks.Cleared() {
		if l.sink != nil {
			l.sink.Mark(name)
		}
	}
	return err
}

// read reads one message into in; the bytes are valid until the next read.
func (l *Leg) read(in *bytes.Buffer) ([]byte, error) {
	_, r, err := l.conn.Reader(context.Background())
	if err != nil {
		return nil, err
	}
	if in.Cap() > maxKeptMessage {
		*in = bytes.Buffer{} // one large message must not pin its buffer for the whole call
	}
	in.Reset()
	_, err = in.ReadFrom(r)
	return in.Bytes(), err
}

// maxKeptMessage is the largest read buffer a leg keeps between messages.
const maxKeptMessage = 64 << 10

// write sends l.out. Its context is not the call's (see Run): a call that ends closes the
// socket, which fails the write.
func (l *Leg) write(context.Context) error {
	if err := l.conn.Write(context.Background(), websocket.MessageText, l.out); err != nil {
		return fmt.Errorf("telnyx: write: %w", err)
	}
	return nil
}
