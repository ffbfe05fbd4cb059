package plivo

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

// Leg is one Plivo audio stream as a voice.Leg. Plivo answers a checkpoint only when its
// audio played, so the leg reports the checkpoints a clear dropped itself; Plivo sends
// no stop, so the socket's close is the call's end.
type Leg struct {
	conn   *websocket.Conn
	info   voice.LegInfo
	writer *Writer
	log    *slog.Logger
	early  *mediastream.PreStart // what came before start, handed to the call when it runs

	// mu guards what the reader (played checkpoints) and the writer (checkpoints sent,
	// clear) share.
	mu    sync.Mutex
	sink  voice.LegSink
	marks mediastream.MarkBook

	order mediastream.Reorder // the reader's: chunk numbers put media back in order
	out   []byte              // the writer's reused message buffer
}

var _ voice.Leg = (*Leg)(nil)

func newLeg(conn *websocket.Conn, info voice.LegInfo, w *Writer, early *mediastream.PreStart, log *slog.Logger) *Leg {
	return &Leg{conn: conn, info: info, writer: w, early: early, log: log, out: make([]byte, 0, 1024)}
}

// Info describes the call.
func (l *Leg) Info() voice.LegInfo { return l.info }

// Run reads Plivo's messages until the socket closes or ctx ends.
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
	buf := make([]byte, 0, initialMediaBuffer)
	var in bytes.Buffer // one message at a time, reused
	for {
		msg, err := l.read(&in)
		if err != nil {
			l.order.Flush(emit)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if websocket.CloseStatus(err) != -1 {
				return nil // Plivo closed the stream: the call is over (there is no stop)
			}
			return fmt.Errorf("plivo: read: %w", err)
		}
		buf = mediaBuffer(buf, msg)
		m, err := DecodeMedia(buf, msg)
		if err == nil {
			if m.HasChunk && m.Chunk > 0 {
				l.order.Push(m.Chunk, m.Payload, emit)
			} else {
				emit(m.Payload)
			}
			continue
		}
		if !errors.Is(err, ErrNotMedia) {
			sink.Malformed(err)
			continue
		}
		if done := l.event(msg, sink, emit); done {
			return nil
		}
	}
}

// event handles a message other than media; done is true when it ends the call.
func (l *Leg) event(msg []byte, sink voice.LegSink, emit func([]byte)) (done bool) {
	f, err := DecodeFrame(msg)
	if err != nil {
		sink.Malformed(err)
		return false
	}
	switch f.Event {
	case EventPlayedStream, EventPlayed:
		l.mu.Lock()
		reported, known := l.marks.Played(f.Name)
		for _, name := range reported {
			sink.Mark(name)
		}
		l.mu.Unlock()
		if !known {
			sink.Malformed(fmt.Errorf("answer to a checkpoint never sent: %q", voice.Clip(f.Name, 40)))
		}
	case EventDTMF:
		sink.DTMF(f.DTMF.Digit)
	case EventClearedAudio, EventStart:
		// clearedAudio confirms a clear the leg has already reported.
	case EventStop:
		l.order.Flush(emit)
		return true
	default:
		sink.Malformed(fmt.Errorf("unknown event %q", voice.Clip(f.Event, 40)))
	}
	return false
}

// SendAudio sends audio in the stream's format as one playAudio message, which names
// the format itself.
func (l *Leg) SendAudio(ctx context.Context, audio []byte) error {
	l.out = l.writer.AppendPlayAudio(l.out[:0], audio)
	return l.write(ctx)
}

// SendMark sends a checkpoint: Plivo answers with its name once everything sent before it
// has played.
func (l *Leg) SendMark(ctx context.Context, name string) error {
	l.mu.Lock()
	err := l.marks.Sent(name)
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("plivo: checkpoint %q: %w", voice.Clip(name, 40), err)
	}
	l.out = l.writer.AppendCheckpoint(l.out[:0], name)
	return l.write(ctx)
}

// Clear drops the audio Plivo has buffered. Plivo never answers the checkpoints it
// dropped, so the leg reports them itself, in order, and ignores a late answer: every
// checkpoint comes back once, played or dropped, as the call expects.
func (l *Leg) Clear(ctx context.Context) error {
	l.out = l.writer.AppendClearAudio(l.out[:0])
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
		return fmt.Errorf("plivo: write: %w", err)
	}
	return nil
}

// initialMediaBuffer holds a media message of the usual sizes (20 ms of 16 kHz L16 is
// 640 bytes); a call grows its buffer only when a larger message comes.
const initialMediaBuffer = 2 << 10

// mediaBuffer is buf, or a larger one when msg's payload might not fit (up to
// maxMediaPayload): every leg keeping a buffer for the largest message would cost tens of
// kilobytes a call.
func mediaBuffer(buf, msg []byte) []byte {
	need := min(len(msg)*3/4, maxMediaPayload)
	if need <= cap(buf) {
		return buf
	}
	return make([]byte, 0, need)
}
