package audiotest

import (
	"math"
	"math/rand/v2"
	"time"
)

// SpeechLevelDBFS is the RMS level of SpeechLike output over its whole length.
const SpeechLevelDBFS = -20.0

// SpeechLike is d of a synthetic voiced signal at rate Hz that an energy VAD and a listener
// would both call speech: a glottal-like harmonic series with a fundamental between 120 and
// 220 Hz, harmonics shaped by vowel formants, a little breath noise, and an amplitude
// envelope of syllables at about 4.5 per second (each 150-300 ms, with a short dip between
// them). The whole clip is scaled to SpeechLevelDBFS RMS. The same seed gives the same clip.
func SpeechLike(rate int, d time.Duration, seed int64) []int16 {
	n := samplesFor(rate, d)
	sig := make([]float64, n)
	rng := newRand(seed)
	var phase float64
	for pos := 0; pos < n; {
		syl := newSyllable(rng, rate)
		end := min(pos+syl.samples, n)
		phase = syl.render(sig[pos:end], rng, rate, phase)
		pos = end
	}
	return normalise(sig, SpeechLevelDBFS)
}

// syllable is one voiced unit: a fundamental glide and a vowel's formant weights.
type syllable struct {
	samples      int
	voiced       int // samples of the envelope bump; the rest is a dip
	f0a, f0b     float64
	weights      []float64 // amplitude of harmonic k+1
	breath       float64
	maxHarmonics int
}

// vowels are rough first and second formant frequencies (Hz) of a few vowels.
var vowels = [][2]float64{{730, 1090}, {270, 2290}, {530, 1840}, {570, 840}, {300, 870}, {660, 1720}}

func newSyllable(rng *rand.Rand, rate int) syllable {
	dur := 150 + rng.IntN(151) // ms
	s := syllable{samples: rate * dur / 1000}
	s.voiced = s.samples * (75 + rng.IntN(15)) / 100
	s.f0a = 120 + 100*rng.Float64()
	s.f0b = math.Min(220, math.Max(120, s.f0a+40*(rng.Float64()-0.5)))
	s.breath = 0.02 + 0.03*rng.Float64()
	v := vowels[rng.IntN(len(vowels))]
	top := math.Min(3800, 0.45*float64(rate))
	for k := 1; float64(k)*s.f0a < top; k++ {
		f := float64(k) * s.f0a
		w := formant(f, v[0], 90) + 0.7*formant(f, v[1], 120) + 0.3*formant(f, 2500, 200)
		s.weights = append(s.weights, w/math.Sqrt(float64(k))) // -3 dB/octave tilt
	}
	s.maxHarmonics = len(s.weights)
	return s
}

// formant is a resonance's gain at f: 1 at the centre, falling off over bandwidth bw.
func formant(f, centre, bw float64) float64 {
	x := (f - centre) / bw
	return 1 / (1 + x*x)
}

// render writes the syllable into out starting at the given fundamental phase (radians)
// and returns the phase at its end, so consecutive syllables join without a click.
func (s syllable) render(out []float64, rng *rand.Rand, rate int, phase float64) float64 {
	for i := range out {
		frac := float64(i) / float64(len(out))
		f0 := s.f0a + (s.f0b-s.f0a)*frac
		phase += 2 * math.Pi * f0 / float64(rate)
		if phase > 2*math.Pi {
			phase -= 2 * math.Pi
		}
		env := 0.0
		if i < s.voiced {
			e := math.Sin(math.Pi * float64(i) / float64(s.voiced))
			env = e * e
		}
		if env == 0 {
			continue
		}
		var v float64
		for k := range s.maxHarmonics {
			v += s.weights[k] * math.Sin(float64(k+1)*phase)
		}
		out[i] = env * (v + s.breath*rng.NormFloat64())
	}
	return phase
}

// normalise scales sig to an RMS of dbfs and converts it to int16.
func normalise(sig []float64, dbfs float64) []int16 {
	out := make([]int16, len(sig))
	var sum float64
	for _, v := range sig {
		sum += v * v
	}
	if sum == 0 {
		return out
	}
	g := fullScale * math.Pow(10, dbfs/20) / math.Sqrt(sum/float64(len(sig)))
	for i, v := range sig {
		out[i] = clip(v * g)
	}
	return out
}
