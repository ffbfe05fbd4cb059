package echo

import (
	"math"

	"gonum.org/v1/gonum/dsp/fourier"
)

// The suppressor removes the predicted echo from 40 ms windows (the previous and the
// current frame) hopping by 20 ms: for each frequency bin the echo predicted there, the
// reference's power at the learned delay (the loudest of three delays around it, and of the
// bin's neighbours) times the band's learned gain, is taken off the inbound power with a
// 3 dB margin, and what is left is resynthesised with square-root Hann windows that add
// back to the original where nothing is taken. Its output lags the input by one frame.
const overSubtract = 2.0 // 3 dB: echo is taken off as if it were twice as strong

type suppressor struct {
	frame, win int
	fft        *fourier.FFT
	window     []float64
	prev       []int16          // the previous inbound frame
	x          []float64        // windowed samples
	spec       []complex128     // the inbound spectrum
	rspec      []complex128     // a reference spectrum
	refs       [maxLags][]int16 // reference windows at the lags
	echo       []float64        // predicted echo power per bin
	spread     []float64        // echo power after spreading to neighbours
	inPow      []float64        // inbound power per bin
	tail       []float64        // the second half of the last window, still to be added
	active     bool             // the last frame went through the suppressor
	echoDB     float64          // the echo predicted in the last frame (dBFS)
	bandOf     []int            // band of each bin
	bandPow    [2][bands]float64
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
	s.echo = make([]float64, bins)
	s.spread = make([]float64, bins)
	s.inPow = make([]float64, bins)
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

// refBuf is the buffer for the reference window at lag i.
func (s *suppressor) refBuf(i int) []int16 { return s.refs[i] }

// idle notes a frame that did not go through the suppressor, so the next window that does
// starts from it.
func (s *suppressor) idle(in []int16) {
	s.active = false
	copy(s.prev, in)
}

// window fills x with the windowed samples of a then b.
func (s *suppressor) load(a, b []int16) {
	for i, v := range a {
		s.x[i] = float64(v) * s.window[i]
	}
	for i, v := range b {
		s.x[len(a)+i] = float64(v) * s.window[len(a)+i]
	}
}

// process suppresses the echo in in (the current frame), writing the previous frame's
// cleaned samples to out, from the reference windows at the first lags lags (the middle
// one at the learned delay), and learns the bands' gains from what it sees if learn.
func (s *suppressor) process(in, out []int16, lags int, gain []float64, e *estimator, learn bool) []int16 {
	if !s.active {
		clear(s.tail) // the windows before were not analysed: start afresh
		s.active = true
	}
	// Inbound spectrum.
	s.load(s.prev, in)
	s.fft.Coefficients(s.spec, s.x)
	for k, c := range s.spec {
		s.inPow[k] = real(c)*real(c) + imag(c)*imag(c)
	}
	// Reference spectra; the loudest per bin over the three lags.
	clear(s.echo)
	s.bandPow = [2][bands]float64{}
	for i, r := range s.refs[:lags] {
		s.load(r[:s.frame], r[s.frame:])
		s.fft.Coefficients(s.rspec, s.x)
		for k, c := range s.rspec {
			p := real(c)*real(c) + imag(c)*imag(c)
			s.echo[k] = max(s.echo[k], p)
			if i == lags/2 { // the learned delay itself: what the gains are learned from
				s.bandPow[0][s.bandOf[k]] += p
				s.bandPow[1][s.bandOf[k]] += s.inPow[k]
			}
		}
	}
	// Learn each band's gain from frames whose reference band carried sound.
	// A band's power over norm is its mean square in samples² (Parseval, with the window).
	norm := float64(s.win) * float64(s.win) / 4
	for b := range bands {
		ref, inb := s.bandPow[0][b], s.bandPow[1][b]
		if !learn || ref/norm < activeAmp*activeAmp { // reference band near silence: it says nothing
			continue
		}
		e.learnBand(b, 10*math.Log10((inb+1e-9)/ref))
	}
	// Predicted echo per bin, spread to the neighbours, and the suppression.
	var echoSum, inSum float64
	var lin [bands]float64
	for b, g := range gain {
		lin[b] = math.Pow(10, g/10)
	}
	for k := range s.echo {
		s.echo[k] *= lin[s.bandOf[k]]
	}
	for k := range s.spread {
		p := s.echo[k]
		if k > 0 {
			p = max(p, s.echo[k-1])
		}
		if k+1 < len(s.echo) {
			p = max(p, s.echo[k+1])
		}
		s.spread[k] = p
		echoSum += p
		inSum += s.inPow[k]
	}
	for k, c := range s.spec {
		m := s.inPow[k]
		left := m - overSubtract*s.spread[k]
		if left <= 0 || m == 0 {
			s.spec[k] = 0
			continue
		}
		s.spec[k] = c * complex(math.Sqrt(left/m), 0)
	}
	s.echoDB = 10*math.Log10(echoSum/(inSum+1e-9)) + levelOf2(s.prev, in)
	// Resynthesis: the inverse transform, windowed again, overlapped with the last tail.
	s.fft.Sequence(s.x, s.spec)
	scale := 1 / float64(s.win)
	for i := range s.frame {
		v := s.tail[i] + s.x[i]*s.window[i]*scale
		out[i] = clip16(v)
	}
	for i := range s.frame {
		s.tail[i] = s.x[s.frame+i] * s.window[s.frame+i] * scale
	}
	copy(s.prev, in)
	return out
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
