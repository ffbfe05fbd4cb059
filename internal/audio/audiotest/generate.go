package audiotest

import (
	"math"
	"math/rand/v2"
	"time"
)

// fullScale is the reference for dBFS: an RMS of fullScale is 0 dBFS.
const fullScale = 32768.0

// samplesFor is the number of whole samples in d at rate Hz.
func samplesFor(rate int, d time.Duration) int {
	if rate <= 0 || d <= 0 {
		return 0
	}
	return int(int64(d) * int64(rate) / int64(time.Second))
}

// Tone is a sine wave of hz at rate Hz lasting d, starting at phase zero. amp is the peak
// amplitude as a fraction of full scale (1.0 peaks at 32767); values are clipped to int16.
func Tone(rate int, hz float64, d time.Duration, amp float64) []int16 {
	out := make([]int16, samplesFor(rate, d))
	w := 2 * math.Pi * hz / float64(rate)
	for i := range out {
		out[i] = clip(amp * 32767 * math.Sin(w*float64(i)))
	}
	return out
}

// Silence is d of digital silence (zero samples) at rate Hz.
func Silence(rate int, d time.Duration) []int16 {
	return make([]int16, samplesFor(rate, d))
}

// WhiteNoise is d of Gaussian white noise at rate Hz whose RMS is dbfs (for example -40).
// Peaks beyond full scale are clipped, which only matters above about -12 dBFS.
func WhiteNoise(rate int, d time.Duration, dbfs float64, seed int64) []int16 {
	out := make([]int16, samplesFor(rate, d))
	rng := newRand(seed)
	sigma := fullScale * math.Pow(10, dbfs/20)
	for i := range out {
		out[i] = clip(rng.NormFloat64() * sigma)
	}
	return out
}

func newRand(seed int64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), 0x68616e64736574)) // "handset"
}

func clip(v float64) int16 {
	v = math.Round(v)
	if v > math.MaxInt16 {
		return math.MaxInt16
	}
	if v < math.MinInt16 {
		return math.MinInt16
	}
	return int16(v)
}
