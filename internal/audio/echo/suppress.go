package echo

import (
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// The suppressor removes the predicted echo from 40 ms windows (the previous and the
// current frame) hopping by 20 ms: for each frequency bin the echo predicted there (the
// reference's power around the learned delay, the loudest of the lags compared, times the
// band's learned gain; after the canceller, what it leaves; either way the loudest of the
// bin and its neighbours) is taken off the inbound power with a 3 dB margin, and what is
// left is resynthesised with square-root Hann windows that add back to the original where
// nothing is taken. Its output lags the input by one frame.
const overSubtract = 2.0 // 3 dB: echo is taken off as if it were twice as strong

// callerFloorDB: where suppression alone leaves more than this of a frame, something besides
// the echo is there, and the canceller's output (which keeps it whole) is passed on.
const callerFloorDB = -50.0

type suppressor struct {
	frame, win int
	fft        *fourier.FFT
	window     []float64
	prev       []int16          // the previous inbound frame
	x          []float64        // windowed samples
	spec       []complex128     // the inbound spectrum
	rspec      []complex128     // a reference spectrum
	refs       [maxLags][]int16 // reference windows at the lags (those to be transformed)
	kept       [specSlots]refSpectrum
	slot       [maxLags]int   // the kept spectrum each lag of the current frame uses
	load       [maxLags]bool  // the lag's window is in refs, to be transformed into its slot
	frames     int64          // frames planned, for telling a slot in use from a spare one
	at         [maxLags]int64 // where the lags' windows start (the Line fills it)
	echo       []float64      // predicted echo power per bin
	spread     []float64      // echo power after spreading to neighbours
	inPow      []float64      // inbound power per bin
	tail       []float64      // the second half of the last window, still to be added
	active     bool           // the last frame went through the suppressor
	echoDB     float64        // the echo predicted in the last frame (dBFS)
	residualDB float64        // what suppression alone left of the last frame (dBFS)
	cancelled  bool           // the canceller took the last frame (whichever output was used)
	bandOf     []int          // band of each bin
	bandPow    [2][bands]float64
	mag        []float64        // inbound magnitude per bin
	match      [maxLags]float64 // how well each lag's reference spectrum matches the inbound
	can        canceller
}

func (s *suppressor) init(frame int) {
	s.frame, s.win = frame, 2*frame
	s.fft = fourier.NewFFT(s.win)
	s.window = make([]float64, s.win)
	for i := range s.window {
		s.window[i] = math.Sqrt(0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(s.win)))
	}
	bins := s.win/2 + 1
	s.prev = make([]int16, frame)
	s.x = make([]float64, s.win)
	s.spec = make([]complex128, bins)
	s.rspec = make([]complex128, bins)
	for i := range s.refs {
		s.refs[i] = make([]int16, s.win)
	}
	for i := range s.kept {
		s.kept[i] = refSpectrum{at: -1, usedIn: -1, pow: make([]float32, bins)}
	}
	s.echo = make([]float64, bins)
	s.spread = make([]float64, bins)
	s.inPow = make([]float64, bins)
	s.mag = make([]float64, bins)
	s.can.init(s.win, s.fft)
	s.tail = make([]float64, frame)
	s.bandOf = make([]int, bins)
	rate := float64(frame * 50)
	for k := range s.bandOf {
		hz := float64(k) * rate / float64(s.win)
		switch {
		case hz < 500:
			s.bandOf[k] = 0
		case hz < 1000:
			s.bandOf[k] = 1
		case hz < 2000:
			s.bandOf[k] = 2
		default:
			s.bandOf[k] = 3
		}
	}
}

// Reference spectra are kept by where their window starts on the inbound timeline. The
// wide spans' lags are a frame apart, so each frame's windows but the newest are windows the
// last frame transformed, and most of the suppressor's transforms are saved. Only windows
// that ended a frame before the inbound frame are kept: audio is placed on the timeline
// where it will play, so what lies that far back no longer changes.
const specSlots = maxLags + 1

type refSpectrum struct {
	at     int64     // where its window starts; -1: not kept
	usedIn int64     // the frame that last used it
	pow    []float32 // power per bin (float32 halves the memory; the sums stay float64)
	total  float64   // the sum of pow
}

// plan gives the frame's lags their kept spectra: lag i's window starts at at[i], and is
// kept if it ends by keepBy. It reports in s.load which windows must be transformed: the
// caller then fills their refBuf.
func (s *suppressor) plan(at []int64, keepBy int64) {
	s.frames++
	for i, a := range at { // first every lag that finds its window kept, so none is evicted
		s.load[i] = true
		for j := range s.kept {
			if k := &s.kept[j]; k.at == a && a+int64(s.win) <= keepBy {
				k.usedIn, s.slot[i], s.load[i] = s.frames, j, false
				break
			}
		}
	}
	for i, a := range at {
		if !s.load[i] {
			continue
		}
		spare := -1             // the least recently used slot this frame does not use; a frame uses
		for j := range s.kept { // at most maxLags of them, so there is one
			if k := &s.kept[j]; k.usedIn != s.frames && (spare < 0 || k.usedIn < s.kept[spare].usedIn) {
				spare = j
			}
		}
		k := &s.kept[spare]
		k.at, k.usedIn, s.slot[i] = -1, s.frames, spare
		if a+int64(s.win) <= keepBy {
			k.at = a
		}
	}
}

// refBuf is the buffer for the reference window at lag i.
func (s *suppressor) refBuf(i int) []int16 { return s.refs[i] }

// idle notes a frame that did not go through the suppressor, so the next window that does
// starts from it.
func (s *suppressor) idle(in []int16) {
	s.active = false
	copy(s.prev, in)
}

// loadWindow fills x with the windowed samples of a then b.
func (s *suppressor) loadWindow(a, b []int16) {
	for i, v := range a {
		s.x[i] = float64(v) * s.window[i]
	}
	for i, v := range b {
		s.x[len(a)+i] = float64(v) * s.window[len(a)+i]
	}
}

// process suppresses the echo in in (the current frame), writing the previous frame's
// cleaned samples to out: what the canceller leaves of it once the talkspurt trusts the
// canceller (ownCancel: its reference window holds the current talkspurt alone), or else
// the loudest of the reference windows at the first lags (the middle one at the learned
// delay). It learns the bands' gains from what it sees if learn, and the first voters lags'
// matches with the inbound spectrum go to the estimator.
func (s *suppressor) process(in, out []int16, lags, voters int, gain []float64, e *estimator, learn, ownCancel bool) []int16 {
	if !s.active {
		clear(s.tail) // the windows before were not analysed: start afresh
		s.active = true
	}
	// Inbound spectrum.
	s.loadWindow(s.prev, in)
	s.fft.Coefficients(s.spec, s.x)
	var inTotal float64
	for k, c := range s.spec {
		s.inPow[k] = real(c)*real(c) + imag(c)*imag(c)
		inTotal += s.inPow[k]
	}
	norm := float64(s.win) * float64(s.win) / 4
	silent := activeAmp * activeAmp * norm * float64(s.win)
	if voters > 0 {
		for k, p := range s.inPow {
			s.mag[k] = math.Sqrt(p)
		}
	}
	inSound := inTotal >= silent
	// Reference spectra, the loudest per bin over the lags: the learned delay (the middle
	// lag) teaches the band gains, and while a talkspurt settles every lag votes.
	clear(s.echo)
	s.bandPow = [2][bands]float64{}
	mid := lags / 2
	for i := range lags {
		refTotal, dot := s.lagSpectrum(i, i == mid && learn, i < voters)
		if i < voters {
			// Sound against sound matches by the spectra's shape; silence against
			// silence matches; sound against silence does not.
			switch refSound := refTotal >= silent; {
			case refSound && inSound:
				s.match[i] = dot / math.Sqrt(refTotal*inTotal)
			case refSound == inSound:
				s.match[i] = 1
			default:
				s.match[i] = 0
			}
		}
	}
	if voters > 0 {
		e.addVote(s.match[:voters])
	}
	// Learn each band's gain from frames whose reference band carried sound.
	// A band's power over norm is its mean square in samples² (Parseval, with the window).
	for b := range bands {
		ref, inb := s.bandPow[0][b], s.bandPow[1][b]
		if !learn || ref/norm < activeAmp*activeAmp { // reference band near silence: it says nothing
			continue
		}
		e.learnBand(b, 10*math.Log10((inb+1e-9)/ref))
	}
	// The echo the path predicts per bin: the loudest reference at the lags times the band
	// gains. The canceller, once trusted, offers a second output: what is left after it.
	var lin [bands]float64
	for b, g := range gain {
		lin[b] = math.Pow(10, g/10)
	}
	for k := range s.echo {
		s.echo[k] *= lin[s.bandOf[k]]
	}
	cancelled := s.can.cancel(s, !e.paused(), ownCancel, silent, gain)
	echoSum := s.suppress(s.spec, s.inPow, s.echo)
	s.echoDB = 10*math.Log10(echoSum/(inTotal+1e-9)) + levelOf2(s.prev, in)
	s.synthesize(s.spec, s.tail, out)
	s.residualDB = LevelDB(out)
	s.cancelled = cancelled
	passOn := cancelled && s.residualDB > callerFloorDB
	// Where suppression alone leaves nothing audible there is nothing but echo in the frame,
	// and its silence is the safer answer: a canceller a few samples off (a carrier that ran
	// dry for a moment) leaves some. Where it leaves something, that is the caller, whom the
	// canceller keeps whole.
	if passOn {
		if !s.can.synthesized {
			clear(s.can.tail) // its windows before were not synthesised: start afresh
		}
		s.suppress(s.can.out, s.can.outPow, s.can.echo)
		s.synthesize(s.can.out, s.can.tail, out)
	}
	s.can.synthesized = passOn
	copy(s.prev, in)
	return out
}

// suppress takes off spec (whose power per bin is pow) the echo predicted per bin, spread to
// the neighbours, with overSubtract's margin; it returns the predicted echo's total power.
func (s *suppressor) suppress(spec []complex128, pow, echo []float64) (echoSum float64) {
	for k := range s.spread {
		p := echo[k]
		if k > 0 {
			p = max(p, echo[k-1])
		}
		if k+1 < len(echo) {
			p = max(p, echo[k+1])
		}
		s.spread[k] = p
		echoSum += p
	}
	for k, c := range spec {
		m := pow[k]
		left := m - overSubtract*s.spread[k]
		if left <= 0 || m == 0 {
			spec[k] = 0
			continue
		}
		spec[k] = c * complex(math.Sqrt(left/m), 0)
	}
	return echoSum
}

// synthesize writes spec's window to out: the inverse transform, windowed again, overlapped
// with the last window's second half (tail), which it then replaces.
func (s *suppressor) synthesize(spec []complex128, tail []float64, out []int16) {
	s.fft.Sequence(s.x, spec)
	scale := 1 / float64(s.win)
	for i := range s.frame {
		out[i] = clip16(tail[i] + s.x[i]*s.window[i]*scale)
	}
	for i := range s.frame {
		tail[i] = s.x[s.frame+i] * s.window[s.frame+i] * scale
	}
}

// lagSpectrum takes the reference window at lag i's power spectrum (transforming the window
// unless it is kept): its power goes into the loudest per bin (s.echo), and into the band
// sums the gains are learned from if learn. With vote it returns the window's total power
// and its magnitudes' dot product with the inbound's (s.mag).
func (s *suppressor) lagSpectrum(i int, learn, vote bool) (refTotal, dot float64) {
	kept := &s.kept[s.slot[i]]
	if s.load[i] {
		r := s.refs[i]
		s.loadWindow(r[:s.frame], r[s.frame:])
		s.fft.Coefficients(s.rspec, s.x)
		kept.total = 0
		for k, c := range s.rspec {
			kept.pow[k] = float32(real(c)*real(c) + imag(c)*imag(c))
			kept.total += float64(kept.pow[k])
		}
		s.load[i] = false
	}
	if vote {
		refTotal = kept.total
	}
	for k, p32 := range kept.pow {
		p := float64(p32)
		if vote {
			dot += math.Sqrt(p) * s.mag[k]
		}
		s.echo[k] = max(s.echo[k], p)
		if learn {
			s.bandPow[0][s.bandOf[k]] += p
			s.bandPow[1][s.bandOf[k]] += s.inPow[k]
		}
	}
	return refTotal, dot
}

// levelOf2 is the RMS level in dBFS of a and b together.
func levelOf2(a, b []int16) float64 {
	return 10 * math.Log10((meanSquare(a)+meanSquare(b))/2/(32768*32768))
}

func clip16(v float64) int16 {
	v = math.Round(v)
	switch {
	case v > math.MaxInt16:
		return math.MaxInt16
	case v < math.MinInt16:
		return math.MinInt16
	}
	return int16(v)
}
