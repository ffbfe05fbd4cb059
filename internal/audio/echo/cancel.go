package echo

import (
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/fourier"
)

// The canceller subtracts the echo where the suppressor could only take bins away: for each
// frequency bin of the suppressor's 40 ms windows it learns the line's complex gain from the
// reference aligned to the sample (least squares over frames without double talk, forgetting
// with a time constant of a second) and takes that much of the reference off the inbound.
// Where the echo path is linear (a carrier's codecs and a hybrid are), it leaves the echo
// 20-50 dB down, so a quiet caller under the echo keeps the bins the suppressor would have
// taken whole, and with them the first syllable a VAD such as Silero needs. The suppressor
// then takes off what the canceller leaves, as learned per band (and, in a bin the canceller
// has not learned, the whole echo).
//
// The canceller never decides alone:
//   - it looks where the estimator's path (or a settling talkspurt's vote) says the echo is,
//     and finds the sample from the phase of the last few frames' cross-spectrum; it learns
//     only while that shows the echo exactly where it looks (locked);
//   - each talkspurt must show it cancelling its own echo (10 dB where the echo dominates,
//     three frames) before the suppressor uses its output, and a talkspurt whose echo it
//     fails to take (6 dB) twice running goes back to the suppressor alone;
//   - once a talkspurt trusts it, double talk does not undo that: a talkspurt plays back to
//     back where it started, and a caller talking over it is exactly what it is for.
const (
	// cancelForget is the weight kept per frame: a time constant of about a second.
	cancelForget = 1 - 1.0/50
	// goodFrames of a talkspurt cancelling at least goodCancel before it is trusted (a
	// voice's pitch can make an alignment a period off cancel 10-15 dB for a while).
	goodFrames = 3
	goodCancel = 0.01
	// Where the path predicts echoDominates of a bin's power, the canceller has failed if
	// it leaves more than failedCancel of it (6 dB).
	echoDominates = 0.8
	failedCancel  = 0.25
	// alignEvery frames of learning before the canceller is used at all.
	alignEvery = 10
	// refineEvery frames the recent cross-spectrum is checked for the alignment; it
	// forgets with recentForget per frame.
	refineEvery  = 3
	recentForget = 0.8
	// maxCancelDB is the most the suppressor counts on the canceller to take off the echo.
	maxCancelDB = 25
	// leftFloorDB is how far under the whole echo what the canceller leaves is still taken
	// off. It was written as maxCancelDB/10 in integer arithmetic, which made it 20 dB, and
	// the level matrix was tuned on that. 25 dB kept a quiet caller's first syllable more
	// often (docs/turn-taking.md) but let one false interruption through at 6 dB echo with the
	// WebRTC VAD in the next matrix run; it stays 20 dB, said as such, until that is understood.
	leftFloorDB = 20.0
	// learnedBin: a bin's learned reference power must be this many times the frame's for
	// the canceller's gain there to count as learned.
	learnedBin = 3
)

type canceller struct {
	n     int
	fft   *fourier.FFT
	delay int64   // samples from sent to heard; -1 before the first alignment
	ref   []int16 // the reference window at delay (the Line fills it)
	// A frame it takes: the inbound spectrum with the echo taken off, its power and what
	// is left of the echo per bin; the tail of the last window synthesised from it.
	out         []complex128
	outPow      []float64
	echo        []float64
	tail        []float64
	synthesized bool // the last frame's output was synthesised from out (tail follows it)
	x           []complex128
	sxy         []complex128
	sxx         []float64
	gcc         []complex128
	corr        []float64
	updates     int
	// The recent cross-spectrum (a few frames) finds the alignment to the sample; the long
	// sums above learn only while it is locked there, so they hold the line's response
	// whatever talkspurt they came from.
	rxy    []complex128
	rxx    []float64
	recent int
	locked bool
	// residual per band (dB, like the suppressor's band gains): what the canceller leaves of
	// the reference, learned as a running median.
	residual [bands]float64
	good     int // frames of the current talkspurt that cancelled
	failed   int // judged frames running that it did not
}

func (c *canceller) init(win int, fft *fourier.FFT) {
	c.n, c.fft, c.delay = win, fft, -1
}

// grow allocates the canceller's buffers, when a line first shows echo: a line that never
// does costs nothing.
func (c *canceller) grow() {
	if c.x != nil {
		return
	}
	win := c.n
	bins := win/2 + 1
	c.ref = make([]int16, win)
	c.out = make([]complex128, bins)
	c.outPow = make([]float64, bins)
	c.echo = make([]float64, bins)
	c.tail = make([]float64, win/2)
	c.x = make([]complex128, bins)
	c.sxy = make([]complex128, bins)
	c.sxx = make([]float64, bins)
	c.gcc = make([]complex128, bins)
	c.rxy = make([]complex128, bins)
	c.rxx = make([]float64, bins)
	c.corr = make([]float64, win)
}

// align points the canceller at delay samples, unless it already looks within a quarter
// window of it (the alignment to the sample finds the rest), or this is only a guess
// (tentative) and the talkspurt has seen it cancel where it looks. What it learned of the
// line stays: a talkspurt playing elsewhere moves the alignment, not the line.
func (c *canceller) align(delay int64, tentative bool) {
	if c.delay >= 0 && (abs64(delay-c.delay) <= int64(c.n/4) || tentative && c.good >= goodFrames) {
		return
	}
	c.grow()
	c.delay = delay
	c.unlock()
}

func (c *canceller) unlock() {
	c.locked, c.good, c.recent = false, 0, 0
	clear(c.rxy)
	clear(c.rxx)
}

// beginSpurt distrusts the canceller, and stops its learning, until the new talkspurt's own
// echo has shown where it plays to the sample and that the canceller cancels it.
func (c *canceller) beginSpurt() { c.unlock() }

// cancelledDB is how much further down than the path's band gains (dB) the canceller
// leaves the echo, over the bands it has learned; 0 before it has learned.
func (c *canceller) cancelledDB(gain []float64) float64 {
	if c.updates < alignEvery {
		return 0
	}
	var sum float64
	n := 0
	for b, r := range c.residual {
		if r < gain[b] {
			sum += gain[b] - r
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// learnedAt: the canceller has learned bin k well enough to cancel x there (its reference
// power there over the last second is learnedBin times x's).
func (c *canceller) learnedAt(k int, x complex128) bool {
	return c.sxx[k] >= learnedBin*(real(x)*real(x)+imag(x)*imag(x))
}

func abs64(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// refine moves the alignment to the peak of the phase-transformed recent cross-correlation
// when it is clear and within a quarter window, and locks it there when the peak is at the
// alignment itself.
func (c *canceller) refine() {
	var most float64
	for _, v := range c.rxx {
		most = max(most, v)
	}
	for k, v := range c.rxy {
		m := math.Sqrt(real(v)*real(v) + imag(v)*imag(v))
		if m == 0 || c.rxx[k] < most*1e-3 { // a bin the reference barely reached says nothing
			c.gcc[k] = 0
			continue
		}
		c.gcc[k] = v / complex(m, 0)
	}
	c.fft.Sequence(c.corr, c.gcc)
	best, at := 0.0, 0
	var sum float64
	for i, v := range c.corr {
		sum += math.Abs(v)
		if v > best {
			best, at = v, i
		}
	}
	if at > c.n/2 {
		at -= c.n
	}
	if best < 8*sum/float64(len(c.corr)) || abs(at) > c.n/4 {
		c.locked = false // the echo is not where the canceller looks, or not clearly
		return
	}
	switch {
	case at == 0:
		c.locked = true
	case c.good >= goodFrames:
		// This talkspurt was seen cancelled where the canceller looks: what moved the peak
		// is the caller, not the echo.
		c.locked = false
	default:
		c.delay += int64(at)
		c.unlock()
	}
}

// cancel takes the echo off the suppressor's inbound spectrum (s.spec, s.inPow) using the
// reference window at the canceller's alignment (c.ref), once the talkspurt trusts it, into
// c.out and c.outPow, with what it leaves of the echo per bin in c.echo; gain is the path's
// band gains (dB). learn: the
// frame may teach it (no double talk); own: ref holds the current talkspurt alone. It
// reports whether it took the frame (a frame whose reference is silent there passes whole).
func (c *canceller) cancel(s *suppressor, learn, own bool, silent float64, gain []float64) bool {
	if c.delay < 0 {
		return false
	}
	s.loadWindow(c.ref[:s.frame], c.ref[s.frame:])
	s.fft.Coefficients(c.x, s.x)
	var refPow, inPow float64
	for k, x := range c.x {
		refPow += real(x)*real(x) + imag(x)*imag(x)
		inPow += s.inPow[k]
	}
	sound := refPow >= silent
	if learn && own && sound {
		for k, x := range c.x {
			yx := s.spec[k] * cmplx.Conj(x)
			xx := real(x)*real(x) + imag(x)*imag(x)
			c.rxy[k] = c.rxy[k]*recentForget + yx
			c.rxx[k] = c.rxx[k]*recentForget + xx
			if c.locked {
				c.sxy[k] = c.sxy[k]*cancelForget + yx
				c.sxx[k] = c.sxx[k]*cancelForget + xx
			}
		}
		if c.locked {
			c.updates++
		}
		if c.recent++; c.recent%refineEvery == 0 {
			c.refine()
		}
	}
	if c.updates < alignEvery { // nothing learned to cancel with yet
		return false
	}
	var mean float64
	for _, v := range c.sxx {
		mean += v
	}
	reg := 1e-3*mean/float64(len(c.sxx)) + 1e-9
	// The cancelled spectrum goes into s.rspec (free by now).
	var outPow float64
	var band [2][bands]float64
	for k, x := range c.x {
		v := s.spec[k]
		if c.learnedAt(k, x) { // a bin it has not learned keeps its echo
			h := c.sxy[k] / complex(c.sxx[k]+reg, 0)
			if m2 := real(h)*real(h) + imag(h)*imag(h); m2 > 4 { // never more than 6 dB of gain
				h *= complex(2/math.Sqrt(m2), 0)
			}
			v -= h * x
		}
		s.rspec[k] = v
		p := real(v)*real(v) + imag(v)*imag(v)
		outPow += p
		band[0][s.bandOf[k]] += real(x)*real(x) + imag(x)*imag(x)
		band[1][s.bandOf[k]] += p
	}
	if learn && own && sound && c.locked {
		norm := float64(s.win) * float64(s.win) / 4
		step := medianStep
		if c.updates < 4*alignEvery {
			step = 4 * medianStep // the first second walks down from no cancellation quickly
		}
		for b := range bands {
			if band[0][b]/norm < activeAmp*activeAmp {
				continue
			}
			r := 10 * math.Log10((band[1][b]+1e-9)/band[0][b])
			switch {
			case r > c.residual[b]:
				c.residual[b] = math.Min(0, c.residual[b]+step)
			case r < c.residual[b]:
				c.residual[b] = math.Max(-90, c.residual[b]-step)
			}
		}
	}
	var lin, raw [bands]float64
	for b, g := range c.residual {
		// Never counted on for more than maxCancelDB: the depth a canceller reaches over a
		// whole talkspurt is not the depth of its worst frame.
		lin[b] = math.Pow(10, max(g, gain[b]-maxCancelDB)/10)
		raw[b] = math.Pow(10, gain[b]/10)
	}
	// Where the echo should dominate the inbound (the path's raw prediction is at least
	// echoDominates of a bin), the canceller must have taken most of it away, whoever else
	// is talking. A caller loud enough to dominate everywhere leaves nothing to judge by,
	// and needs no canceller.
	var echoIn, echoLeft float64
	for k, x := range c.x {
		p := raw[s.bandOf[k]] * (real(x)*real(x) + imag(x)*imag(x))
		if p >= echoDominates*s.inPow[k] && c.learnedAt(k, x) {
			v := s.rspec[k]
			echoIn += s.inPow[k]
			echoLeft += real(v)*real(v) + imag(v)*imag(v)
		}
	}
	judged := echoIn >= inPow/4
	cancels := echoLeft <= goodCancel*echoIn
	leaking := judged && echoLeft > failedCancel*echoIn
	if leaking { // not cancelling: the suppressor takes this frame
		if c.failed++; c.failed >= 2 { // and twice running: the path moved
			c.good = 0
		}
		return false
	}
	if judged {
		c.failed = 0
	}
	if c.good < goodFrames {
		// Only frames whose reference holds this talkspurt alone count: the last one's tail
		// plays where the last one played.
		if own && judged && cancels {
			c.good++
		}
		return false
	}
	// What it leaves is never less than leftFloorDB under the whole echo, spread over every
	// bin: the line's codecs add noise across the band at the echo's level, which no
	// canceller takes away.
	var whole float64
	for k, x := range c.x {
		whole += raw[s.bandOf[k]] * (real(x)*real(x) + imag(x)*imag(x))
	}
	floor := whole * math.Pow(10, -leftFloorDB/10) / float64(len(c.x))
	for k, x := range c.x {
		p := real(x)*real(x) + imag(x)*imag(x)
		v := s.rspec[k]
		c.out[k] = v
		c.outPow[k] = real(v)*real(v) + imag(v)*imag(v)
		if !c.learnedAt(k, x) { // the echo is all there
			c.echo[k] = raw[s.bandOf[k]] * p
			continue
		}
		c.echo[k] = lin[s.bandOf[k]]*p + floor
	}
	return true
}
