package sphinx

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/resample"
)

// modelRate is the only sample rate the en-us acoustic model takes (its feat.params cut
// the filter bank at 6800 Hz, which 8 kHz audio does not reach).
const modelRate = 16000

// converter turns a stream's audio into the model's: G.711 decoded, 8 kHz up-sampled to
// 16 kHz PCM16. One goroutine owns it; its output slice is reused by the next call.
type converter struct {
	enc    audio.Encoding
	rs     *resample.Resampler // nil at 16 kHz
	half   []byte              // a PCM16 byte waiting for the other half of its sample
	linear []int16             // decoded at the stream's rate
	out    []int16             // at modelRate
}

// newConverter accepts PCM16, mu-law and A-law at 8000 or 16000 Hz.
func newConverter(f audio.Format) (*converter, error) {
	switch f.Encoding {
	case audio.PCM16, audio.Mulaw, audio.Alaw:
	default:
		return nil, fmt.Errorf("audio format %s not supported: want pcm16, mulaw or alaw at 8000 or 16000 Hz", f)
	}
	c := &converter{enc: f.Encoding}
	switch f.Rate {
	case modelRate:
	case 8000:
		rs, err := resample.New(f.Rate, modelRate)
		if err != nil {
			return nil, err
		}
		c.rs = rs
	default:
		return nil, fmt.Errorf("audio format %s not supported: the model is 16 kHz; want 8000 or 16000 Hz "+
			"(pcm16, mulaw or alaw)", f)
	}
	return c, nil
}

// convert returns b as 16 kHz samples, valid until the next call.
func (c *converter) convert(b []byte) []int16 {
	var lin []int16
	switch c.enc {
	case audio.Mulaw:
		lin = g711.DecodeMulaw(grow(c.linear, len(b)), b)
	case audio.Alaw:
		lin = g711.DecodeAlaw(grow(c.linear, len(b)), b)
	default:
		if len(c.half) > 0 && len(b) > 0 {
			c.half = append(c.half, b[0])
			b = b[1:]
		}
		lin = grow(c.linear, (len(c.half)+len(b))/2)[:0]
		if len(c.half) == 2 {
			lin = append(lin, int16(binary.LittleEndian.Uint16(c.half)))
			c.half = c.half[:0]
		}
		for len(b) >= 2 {
			lin = append(lin, int16(binary.LittleEndian.Uint16(b)))
			b = b[2:]
		}
		c.half = append(c.half, b...)
	}
	c.linear = lin
	if c.rs == nil {
		return lin
	}
	c.out = c.rs.Process(grow(c.out, c.rs.MaxOut(len(lin))), lin)
	return c.out
}

// grow returns buf with room for n samples.
func grow(buf []int16, n int) []int16 {
	if cap(buf) < n {
		return make([]int16, n, max(n, 2*cap(buf)))
	}
	return buf[:n]
}

// fullScale is the RMS of 0 dBFS, as in internal/audio/audiotest.
const fullScale = 32768.0

// gate decides whether a frame is loud enough to be worth a decoder: its RMS after the
// mean is removed (so a DC offset does not hold the gate open) above a level in dBFS.
type gate struct {
	meanSquare float64 // the threshold as a mean square of samples
}

func newGate(dbfs float64) gate {
	rms := fullScale * math.Pow(10, dbfs/20)
	return gate{meanSquare: rms * rms}
}

// loud reports whether frame's level is above the gate.
func (g gate) loud(frame []int16) bool {
	if len(frame) == 0 {
		return false
	}
	var sum, sumSq float64
	for _, s := range frame {
		v := float64(s)
		sum += v
		sumSq += v * v
	}
	n := float64(len(frame))
	mean := sum / n
	return sumSq/n-mean*mean > g.meanSquare
}

// samples is a queue of samples that grows on demand: pre-roll while idle, everything
// heard while waiting for a decoder.
type samples struct {
	buf  []int16
	head int // buf[head:] is queued
}

func (q *samples) len() int { return len(q.buf) - q.head }

// all is the queued samples, oldest first, valid until the next push.
func (q *samples) all() []int16 { return q.buf[q.head:] }

func (q *samples) push(p []int16) {
	if q.head > 0 && len(q.buf)+len(p) > cap(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, p...)
}

// keepLast drops all but the newest n samples and returns how many it dropped.
func (q *samples) keepLast(n int) int {
	drop := q.len() - n
	if drop <= 0 {
		return 0
	}
	q.head += drop
	return drop
}

func (q *samples) reset() { q.buf, q.head = q.buf[:0], 0 }

// normalizeHyp turns a PocketSphinx hypothesis into plain lower-case words: fillers
// (<s>, </s>, <sil>, [NOISE], ++NOISE++) are dropped, and alternative pronunciations
// ("read(2)") lose their number.
func normalizeHyp(h string) string {
	words := strings.Fields(h)
	out := words[:0]
	for _, w := range words {
		if w[0] == '<' || w[0] == '[' || w[0] == '+' {
			continue
		}
		if i := strings.IndexByte(w, '('); i > 0 && strings.HasSuffix(w, ")") {
			w = w[:i]
		}
		out = append(out, strings.ToLower(w))
	}
	return strings.Join(out, " ")
}
