package openai

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"sync"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/resample"
	"github.com/handset-voice/handset/internal/voice"
)

// readChunk is how much of the body one network read takes.
const readChunk = 8 << 10

// errClosed is the cause of reads after Close.
var errClosed = errors.New("audio stream closed")

// stream is the audio of one synthesis in the caller's format. Read errors other than
// io.EOF are *voice.ProviderError; Close stops the request. Read is for one goroutine;
// Close may be called from any.
type stream struct {
	s       *Synthesizer
	ctx     context.Context // the caller's
	body    []byte          // the request, for a retry
	retried bool            // the one retry is used
	conv    *converter

	raw    []byte // one network read
	out    []byte // converted audio not yet returned
	outBuf []byte // out's backing array, reused
	got    int64  // bytes the server sent, over all attempts
	err    error  // sticky: io.EOF or the error that ended the stream

	mu     sync.Mutex // guards cur and closed
	cur    answer
	closed bool
}

// Read returns converted audio as it arrives.
func (r *stream) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(r.out) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.fill()
	}
	n := copy(p, r.out)
	r.out = r.out[n:]
	return n, nil
}

// current returns the body being read, or nil after Close.
func (r *stream) current() io.Reader {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	return r.cur.body
}

// fill reads the body once and converts what came.
func (r *stream) fill() {
	body := r.current()
	if body == nil {
		r.err = r.fail(voice.KindCanceled, errClosed)
		return
	}
	if r.raw == nil {
		r.raw = make([]byte, readChunk)
	}
	n, err := body.Read(r.raw)
	r.got += int64(n)
	r.out = r.conv.convert(r.outBuf[:0], r.raw[:n])
	r.outBuf = r.out[:0]
	switch {
	case err == nil:
	case err == io.EOF:
		r.out = r.conv.flush(r.out)
		r.err = io.EOF
		r.release()
	case r.got == 0 && !r.retried && r.ctx.Err() == nil && !r.isClosed():
		r.retry(err)
	default:
		r.err = r.readErr(err)
		r.release()
	}
}

// retry replaces a body that failed before any audio with a new attempt.
func (r *stream) retry(cause error) {
	r.s.log.Warn("openai tts: audio stream failed before any audio, retrying once", "err", cause)
	r.retried = true
	r.release()
	a, err := r.s.attempt(r.ctx, r.body)
	if err != nil {
		r.err = err
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		a.close()
		r.err = r.fail(voice.KindCanceled, errClosed)
		return
	}
	r.cur = a
}

// readErr classifies a failed read: our cancellation, or the network.
func (r *stream) readErr(err error) error {
	switch {
	case r.ctx.Err() != nil:
		return r.fail(voice.KindOf(r.ctx.Err()), r.ctx.Err())
	case r.isClosed():
		return r.fail(voice.KindCanceled, errClosed)
	}
	return r.fail(voice.KindTransient, err)
}

func (r *stream) fail(kind voice.ErrorKind, err error) error {
	return &voice.ProviderError{Provider: name, Op: "read audio", Kind: kind, Err: err}
}

func (r *stream) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// release stops the current request and frees its connection.
func (r *stream) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur.body != nil {
		r.cur.close()
	}
}

// Close stops the request and releases the connection. Idempotent.
func (r *stream) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed {
		r.closed = true
		if r.cur.body != nil {
			r.cur.close()
		}
	}
	return nil
}

// converter turns a stream of 24 kHz s16le bytes, cut anywhere, into audio in the caller's
// format. The resampler's delay is taken out (its first output samples are dropped and
// the end is flushed with silence), so n input samples give ceil(n·to/from) output samples
// lined up with the input.
type converter struct {
	rs       *resample.Resampler
	enc      audio.Encoding
	carry    byte // the first byte of a sample split across reads
	hasCarry bool
	delay    int   // the filter's delay in output samples
	lead     int   // output samples still to drop (delay at first)
	inTotal  int64 // input samples so far
	outTotal int64 // output samples so far
	pcm, res []int16
}

func newConverterFor(rs *resample.Resampler, enc audio.Encoding) *converter {
	c := &converter{rs: rs, enc: enc}
	if rs.From() != rs.To() {
		c.delay = int(math.Round(rs.Delay().Seconds() * float64(rs.To())))
		c.lead = c.delay
	}
	return c
}

// convert appends to dst the converted audio of src, the next bytes of the stream.
func (c *converter) convert(dst, src []byte) []byte {
	n := (len(src) + boolInt(c.hasCarry)) / 2
	if cap(c.pcm) < n {
		c.pcm = make([]int16, n)
	}
	pcm := c.pcm[:n]
	k := 0
	if c.hasCarry && len(src) > 0 {
		pcm[0] = int16(uint16(c.carry) | uint16(src[0])<<8)
		src, k, c.hasCarry = src[1:], 1, false
	}
	for ; len(src) >= 2; src = src[2:] {
		pcm[k] = int16(binary.LittleEndian.Uint16(src))
		k++
	}
	if len(src) == 1 {
		c.carry, c.hasCarry = src[0], true
	}
	c.inTotal += int64(k)
	return c.emit(dst, pcm[:k])
}

// flush appends the audio still held in the resampler at the end of the stream. A
// dangling half sample is dropped.
func (c *converter) flush(dst []byte) []byte {
	c.hasCarry = false
	if c.rs.From() == c.rs.To() {
		return dst
	}
	// Enough silence to push the last input sample through the filter: delay+1 output
	// samples' worth, rounded up.
	pad := ((c.delay+1)*c.rs.From()+c.rs.To()-1)/c.rs.To() + 1
	return c.emit(dst, make([]int16, pad))
}

// emit resamples pcm and appends it, encoded, to dst, within the expected total length.
func (c *converter) emit(dst []byte, pcm []int16) []byte {
	if len(pcm) == 0 {
		return dst
	}
	out := c.rs.Process(c.res[:0], pcm)
	c.res = out[:0]
	if c.lead > 0 {
		d := min(c.lead, len(out))
		out, c.lead = out[d:], c.lead-d
	}
	from, to := int64(c.rs.From()), int64(c.rs.To())
	want := (c.inTotal*to + from - 1) / from
	out = out[:max(0, min(int64(len(out)), want-c.outTotal))]
	c.outTotal += int64(len(out))
	switch c.enc {
	case audio.Mulaw:
		for _, v := range out {
			dst = append(dst, g711.EncodeMulawSample(v))
		}
	case audio.Alaw:
		for _, v := range out {
			dst = append(dst, g711.EncodeAlawSample(v))
		}
	default:
		for _, v := range out {
			dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
		}
	}
	return dst
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
