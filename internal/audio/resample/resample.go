package resample

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrUnsupportedRate is wrapped by New's error when a rate is not one of Rates.
var ErrUnsupportedRate = errors.New("unsupported sample rate")

// Rates are the sample rates (Hz) a Resampler converts between: the telephone, wideband,
// OpenAI and Opus rates, and 22050 Hz, which espeak-ng (and some other TTS engines) produce.
var Rates = [...]int{8000, 16000, 22050, 24000, 48000}

// block is how many input samples are filtered per pass; longer inputs are processed in
// blocks so the working buffer never grows.
const block = 960

// Resampler converts a stream of mono int16 PCM from one rate to another. It keeps filter
// state between calls and is not safe for concurrent use: one goroutine owns it.
type Resampler struct {
	from, to int
	l, m     int       // output/input ratio to/from in lowest terms
	taps     int       // coefficients per polyphase branch
	coef     []float32 // l branches of taps coefficients, see design
	buf      []float32 // taps-1 samples of history followed by up to block new samples
	t        int       // up-sampled index of the next output, relative to the block start
}

// New returns a Resampler from rate from to rate to (Hz). Both must be in Rates; from may
// equal to, which copies. The error wraps ErrUnsupportedRate and names the rate.
func New(from, to int) (*Resampler, error) {
	for _, r := range []int{from, to} {
		if !supported(r) {
			return nil, fmt.Errorf("resample: %d Hz: %w (want one of %v)", r, ErrUnsupportedRate, Rates)
		}
	}
	g := gcd(from, to)
	r := &Resampler{from: from, to: to, l: to / g, m: from / g}
	if from == to {
		return r, nil
	}
	r.coef, r.taps = designFor(from, r.l, r.m)
	r.buf = make([]float32, r.taps-1+block)
	return r, nil
}

func supported(rate int) bool {
	for _, r := range Rates {
		if r == rate {
			return true
		}
	}
	return false
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// From is the input rate in Hz.
func (r *Resampler) From() int { return r.from }

// To is the output rate in Hz.
func (r *Resampler) To() int { return r.to }

// String names the conversion, for example "resample 8000->16000".
func (r *Resampler) String() string { return fmt.Sprintf("resample %d->%d", r.from, r.to) }

// MaxOut is the most output samples Process can produce from nIn input samples. Over a
// whole stream, n input samples give ceil(n·To/From) output samples in total.
func (r *Resampler) MaxOut(nIn int) int { return (nIn*r.l + r.m - 1) / r.m }

// Delay is the filter's group delay: an input event appears this much later in the output.
func (r *Resampler) Delay() time.Duration {
	if r.from == r.to {
		return 0
	}
	upSamples := float64(r.taps*r.l-1) / 2
	return time.Duration(upSamples * float64(time.Second) / float64(r.from*r.l))
}

// Reset forgets the stream: history returns to silence and the phase to zero, as if new.
func (r *Resampler) Reset() {
	clear(r.buf)
	r.t = 0
}

// Process converts src (samples at From) and appends the result (samples at To) to dst[:0],
// returning it. With cap(dst) >= MaxOut(len(src)) it writes in place and never allocates;
// otherwise it grows dst as append does. dst and src must not overlap.
func (r *Resampler) Process(dst, src []int16) []int16 {
	dst = dst[:0]
	if r.from == r.to {
		return append(dst, src...)
	}
	dst = grow(dst, r.MaxOut(len(src)))
	for len(src) > 0 {
		n := min(len(src), block)
		dst = r.processBlock(dst, src[:n])
		src = src[n:]
	}
	return dst
}

func grow(dst []int16, n int) []int16 {
	if cap(dst) < n {
		return make([]int16, 0, n)
	}
	return dst
}

// processBlock filters one block of at most block input samples.
func (r *Resampler) processBlock(dst, src []int16) []int16 {
	hist := r.taps - 1
	x := r.buf[:hist+len(src)]
	for i, s := range src {
		x[hist+i] = float32(s)
	}
	limit := len(src) * r.l
	t := r.t
	for ; t < limit; t += r.m {
		i, p := t/r.l, t%r.l
		dst = append(dst, toInt16(dot(r.coef[p*r.taps:(p+1)*r.taps], x[i:i+r.taps])))
	}
	r.t = t - limit
	copy(r.buf, x[len(src):]) // keep the last taps-1 samples as history
	return dst
}

// dot is the inner product of h and x (equal lengths), with four partial sums so the
// loop is not bound by one addition chain.
func dot(h, x []float32) float32 {
	x = x[:len(h)]
	var a0, a1, a2, a3 float32
	for len(h) >= 4 {
		hh, xx := h[:4:4], x[:4:4]
		a0 += hh[0] * xx[0]
		a1 += hh[1] * xx[1]
		a2 += hh[2] * xx[2]
		a3 += hh[3] * xx[3]
		h, x = h[4:], x[4:]
	}
	for i := range h {
		a0 += h[i] * x[i]
	}
	return (a0 + a1) + (a2 + a3)
}

func toInt16(v float32) int16 {
	f := math.Round(float64(v))
	if f > math.MaxInt16 {
		return math.MaxInt16
	}
	if f < math.MinInt16 {
		return math.MinInt16
	}
	return int16(f)
}
