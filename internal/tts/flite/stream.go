package flite

import (
	"context"
	"errors"
	"github.com/handset-voice/handset/internal/audio/transcode"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/voice"
)

// maxAhead is how much audio a stream holds for a reader that has not caught up; past it
// the synthesis waits for the reader. flite makes speech 60 to 1000 times faster than it
// plays, so without a bound a long text would sit in memory all at once.
const maxAhead = 10 * time.Second

// stream is the reader Synthesize returns. One goroutine (run) synthesises into buf;
// Read takes from it. Closing the stream or ending its context makes run's sink refuse
// the next chunk of samples, which stops flite within one chunk (256 samples).
type stream struct {
	ctx      context.Context
	limit    int           // most bytes held before the producer waits
	stop     atomic.Bool   // the producer must stop: closed or ctx ended
	finished chan struct{} // closed when run returns
	samples  atomic.Int64  // samples flite produced, at the voice's rate (for tests)

	mu     sync.Mutex
	cond   sync.Cond
	buf    []byte // audio not yet read is buf[off:]
	off    int
	done   bool  // run has finished
	err    error // why run failed, as a *voice.ProviderError; nil at a normal end
	closed bool
}

func newStream(ctx context.Context, f audio.Format) *stream {
	st := &stream{ctx: ctx, limit: f.Bytes(maxAhead), finished: make(chan struct{})}
	st.cond.L = &st.mu
	return st
}

// run speaks the chunks one after another through conv into the buffer.
func (st *stream) run(sp speaker, chunks []string, conv *transcode.Encoder, log *slog.Logger) {
	defer close(st.finished)
	// Wake the producer and any reader when the caller gives up.
	stopWatching := context.AfterFunc(st.ctx, st.halt)
	defer stopWatching()

	start := time.Now()
	var first time.Duration
	sink := func(pcm []int16) bool {
		if st.stop.Load() {
			return false
		}
		st.samples.Add(int64(len(pcm)))
		if first == 0 {
			first = time.Since(start)
		}
		return st.push(conv.Encode(pcm))
	}
	var err error
	for _, c := range chunks {
		if st.stop.Load() {
			break
		}
		if err = sp.speak(c, sink); err != nil {
			break
		}
	}
	switch {
	case errors.Is(err, errStopped):
		log.Debug("flite: synthesis stopped", "voice", sp.id(), "first_audio", first, "after", time.Since(start))
		err = nil // the reader reports the cause: Close or the context
	case err != nil:
		log.Warn("flite: synthesis failed", "voice", sp.id(), "err", err)
		err = &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindUnknown, Err: err}
	default:
		audioLen := time.Duration(st.samples.Load()) * time.Second / time.Duration(sp.rate())
		log.Debug("flite: synthesised", "voice", sp.id(), "sentences", len(chunks),
			"audio", audioLen, "first_audio", first, "took", time.Since(start))
	}
	st.mu.Lock()
	st.done, st.err = true, err
	st.cond.Broadcast()
	st.mu.Unlock()
}

// halt tells the producer to stop and wakes everyone waiting.
func (st *stream) halt() {
	st.mu.Lock()
	st.stop.Store(true)
	st.cond.Broadcast()
	st.mu.Unlock()
}

// push appends b for the reader, first waiting while the reader is more than limit bytes
// behind. It returns false when the producer must stop.
func (st *stream) push(b []byte) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	for len(st.buf)-st.off >= st.limit && !st.stop.Load() {
		st.cond.Wait()
	}
	if st.stop.Load() {
		return false
	}
	if st.off > 0 && st.off >= len(st.buf)/2 { // reuse the space already read
		n := copy(st.buf, st.buf[st.off:])
		st.buf, st.off = st.buf[:n], 0
	}
	st.buf = append(st.buf, b...)
	st.cond.Broadcast()
	return true
}

// errClosed is what Read returns after Close.
var errClosed = errors.New("flite: read after Close")

// Read returns audio as soon as there is some, io.EOF after the last of it, a
// *voice.ProviderError if synthesis failed or the context ended (KindCanceled or
// KindTimeout), and errClosed after Close.
func (st *stream) Read(p []byte) (int, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for {
		switch {
		case st.closed:
			return 0, errClosed
		case st.ctx.Err() != nil:
			err := st.ctx.Err()
			return 0, &voice.ProviderError{Provider: name, Op: "read audio", Kind: voice.KindOf(err), Err: err}
		case st.off < len(st.buf):
			if len(p) == 0 {
				return 0, nil
			}
			n := copy(p, st.buf[st.off:])
			st.off += n
			if st.off == len(st.buf) {
				st.buf, st.off = st.buf[:0], 0
			}
			st.cond.Broadcast() // the producer may be waiting for room
			return n, nil
		case st.done:
			if st.err != nil {
				return 0, st.err
			}
			return 0, io.EOF
		}
		st.cond.Wait()
	}
}

// Close stops the synthesis and returns at once; flite stops at its next chunk of
// samples. Idempotent.
func (st *stream) Close() error {
	st.mu.Lock()
	st.closed = true
	st.stop.Store(true)
	st.buf, st.off = nil, 0
	st.cond.Broadcast()
	st.mu.Unlock()
	return nil
}
