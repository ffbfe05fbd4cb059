package resample

import (
	"math"
	"sync"
)

// Filter design parameters; see the package comment.
const (
	passEdge    = 0.42 // passband edge as a fraction of the lower rate
	stopEdge    = 0.50 // stopband edge as a fraction of the lower rate
	stopAttenDB = 60.0 // minimum stopband attenuation
)

// designs caches the coefficients of every conversion designed so far, keyed by
// designKey. A table is read-only once designed, so all Resamplers of one conversion share
// it: the 22050 Hz conversions need up to 20 000 coefficients (80 KB), which take a few
// milliseconds to design, and a TTS stream opens one Resampler per utterance.
var designs sync.Map

type designKey struct{ from, l, m int }

type designed struct {
	coef []float32
	taps int
}

// designFor is design through the cache.
func designFor(from, l, m int) (coef []float32, taps int) {
	k := designKey{from, l, m}
	if d, ok := designs.Load(k); ok {
		return d.(designed).coef, d.(designed).taps
	}
	coef, taps = design(from, l, m)
	d, _ := designs.LoadOrStore(k, designed{coef, taps})
	return d.(designed).coef, d.(designed).taps
}

// design returns the polyphase coefficients for interpolating by l and decimating by m
// from rate from: l branches of taps coefficients each, branch p at [p*taps, (p+1)*taps).
// Branch p holds h[p], h[p+l], h[p+2l]... in reverse order so that the output is a plain
// dot product with the last taps input samples, oldest first.
func design(from, l, m int) (coef []float32, taps int) {
	up := float64(from * l) // rate of the virtual up-sampled signal
	low := math.Min(float64(from), float64(from*l/m))
	width := (stopEdge - passEdge) * low / up                           // transition, cycles per up-sample
	cutoff := (passEdge + stopEdge) / 2 * low / up                      // -6 dB point, cycles per up-sample
	beta := 0.1102 * (stopAttenDB - 8.7)                                // Kaiser's formula for A > 50 dB
	n := int(math.Ceil((stopAttenDB-7.95)/(2.285*2*math.Pi*width))) + 1 // Kaiser's length estimate
	taps = (n + l - 1) / l
	n = taps * l
	proto := make([]float64, n)
	centre := float64(n-1) / 2
	for i := range proto {
		x := float64(i) - centre
		proto[i] = sinc(2*cutoff*x) * kaiser(x/centre, beta)
	}
	coef = make([]float32, n)
	for p := range l {
		var sum float64
		for k := range taps {
			sum += proto[p+k*l]
		}
		for k := range taps {
			coef[p*taps+taps-1-k] = float32(proto[p+k*l] / sum)
		}
	}
	return coef, taps
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// kaiser is the Kaiser window at x in [-1, 1].
func kaiser(x, beta float64) float64 {
	return bessel0(beta*math.Sqrt(max(0, 1-x*x))) / bessel0(beta)
}

// bessel0 is the zeroth-order modified Bessel function of the first kind, by its series.
func bessel0(x float64) float64 {
	sum, term := 1.0, 1.0
	for k := 1; term > 1e-12*sum; k++ {
		term *= (x / (2 * float64(k))) * (x / (2 * float64(k)))
		sum += term
	}
	return sum
}
