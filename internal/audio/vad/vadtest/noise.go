package vadtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/resample"
)

// Noise is a kind of background noise.
type Noise uint8

// Noises. Pink is pink-ish: power falling about 3 dB per octave from 20 Hz to 8 kHz.
const (
	Clean Noise = iota
	White
	Pink
)

func (n Noise) String() string {
	switch n {
	case Clean:
		return "clean"
	case White:
		return "white"
	case Pink:
		return "pink"
	}
	return fmt.Sprintf("noise(%d)", uint8(n))
}

// Condition is how a track is degraded before a detector hears it.
type Condition struct {
	Noise Noise
	// SNR is the active speech level over the noise level in dB: the RMS of the clean
	// track's speech frames against the RMS of the noise (ignored for Clean).
	SNR float64
	// Phone sends the track through the telephone path after the noise: down to 8 kHz
	// and a G.711 mu-law encode and decode.
	Phone bool
}

func (c Condition) String() string {
	s := c.Noise.String()
	if c.Noise != Clean {
		s = fmt.Sprintf("%s %g dB", s, c.SNR)
	}
	if c.Phone {
		s += ", 8k mu-law"
	}
	return s
}

// SNRs are the signal-to-noise ratios the harness measures, in dB.
var SNRs = []float64{20, 10, 5, 0}

// Conditions are clean audio then white and pink noise at each of SNRs, at 16 kHz when
// phone is false, through the telephone path when true.
func Conditions(phone bool) []Condition {
	cs := []Condition{{Noise: Clean, Phone: phone}}
	for _, n := range []Noise{White, Pink} {
		for _, snr := range SNRs {
			cs = append(cs, Condition{Noise: n, SNR: snr, Phone: phone})
		}
	}
	return cs
}

// noiseSeed fixes the noise, so every detector hears the same samples.
const noiseSeed = 20240611

// Apply returns t degraded by c (t must be a clean 16 kHz track from BuildTrack). The
// labels carry over unchanged: they describe the clean speech.
func (t Track) Apply(c Condition) (Track, error) {
	out := t
	if c.Noise != Clean {
		noise := cachedNoise(c.Noise, len(t.PCM), t.Rate)
		out.PCM = mixAtSNR(t.PCM, noise, t.Speech, t.FrameLen(), c.SNR)
	}
	if c.Phone {
		pcm, err := Telephone(out.PCM, out.Rate)
		if err != nil {
			return Track{}, err
		}
		out.PCM, out.Rate = pcm, 8000
	}
	return out, nil
}

type noiseKey struct {
	kind    Noise
	n, rate int
}

var (
	noiseMu    sync.Mutex
	noiseCache = map[noiseKey][]float64{}
)

// cachedNoise is NoiseSignal with the harness's seed, generated once per process.
func cachedNoise(kind Noise, n, rate int) []float64 {
	noiseMu.Lock()
	defer noiseMu.Unlock()
	k := noiseKey{kind, n, rate}
	if _, ok := noiseCache[k]; !ok {
		noiseCache[k] = NoiseSignal(kind, n, rate, noiseSeed+int64(kind))
	}
	return noiseCache[k]
}

// NoiseSignal is n samples of noise of kind at rate Hz with an RMS of about -20 dBFS.
func NoiseSignal(kind Noise, n, rate int, seed int64) []float64 {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x766164)) // "vad"
	out := make([]float64, n)
	switch kind {
	case White:
		for i := range out {
			out[i] = rng.NormFloat64()
		}
	case Pink:
		pinkish(out, rate, rng)
	default:
		return out
	}
	var sum float64
	for _, v := range out {
		sum += v * v
	}
	g := 0.1 * 32768 / math.Sqrt(sum/float64(max(1, n)))
	for i := range out {
		out[i] *= g
	}
	return out
}

// pinkish fills out with the sum of one-pole low-passed white noises whose corners are an
// octave apart from 20 Hz up to 8 kHz (or the Nyquist frequency), each weighted by
// 1/sqrt(corner). A single section has flat power below its corner and falls 6 dB per octave
// above; summed this way the power at any frequency is dominated by the sections with
// corners nearest it and comes out proportional to 1/f within a dB or so.
func pinkish(out []float64, rate int, rng *rand.Rand) {
	type section struct{ a, w, y float64 }
	var secs []section
	for fc := 20.0; fc <= min(8000, float64(rate)/2); fc *= 2 {
		a := math.Exp(-2 * math.Pi * fc / float64(rate))
		// (1-a) makes each section's gain 1 at DC; 1/sqrt(fc) weights its power by 1/fc.
		secs = append(secs, section{a: a, w: (1 - a) / math.Sqrt(fc)})
	}
	for i := range out {
		var v float64
		for k := range secs {
			s := &secs[k]
			s.y = s.a*s.y + s.w*rng.NormFloat64()
			v += s.y
		}
		out[i] = v
	}
}

// mixAtSNR adds noise to pcm scaled so that the RMS of pcm's speech frames over the RMS of
// the noise is snr dB.
func mixAtSNR(pcm []int16, noise []float64, speech []bool, frame int, snr float64) []int16 {
	var ps, pn float64
	var ns int
	for i, sp := range speech {
		if !sp {
			continue
		}
		for _, s := range pcm[i*frame : (i+1)*frame] {
			ps += float64(s) * float64(s)
		}
		ns += frame
	}
	for _, v := range noise {
		pn += v * v
	}
	out := make([]int16, len(pcm))
	if ns == 0 || pn == 0 {
		copy(out, pcm)
		return out
	}
	g := math.Sqrt(ps / float64(ns) / (pn / float64(len(noise))) / math.Pow(10, snr/10))
	for i, s := range pcm {
		out[i] = clip(float64(s) + g*noise[i])
	}
	return out
}

// Telephone sends pcm (at rate Hz) down the phone path: resampled to 8 kHz, mu-law
// encoded and decoded. The resampler's delay is removed, so frame i of the result is the
// same audio as frame i of pcm.
func Telephone(pcm []int16, rate int) ([]int16, error) {
	r, err := resample.New(rate, 8000)
	if err != nil {
		return nil, fmt.Errorf("vadtest: telephone path: %w", err)
	}
	delay := int(math.Round(r.Delay().Seconds() * 8000))
	tail := make([]int16, (delay+1)*rate/8000+1) // flushes the delayed end out
	var down []int16
	down = r.Process(down, pcm)
	down = append(down, r.Process(nil, tail)...)
	n := len(pcm) * 8000 / rate
	down = down[delay : delay+n]
	mu := g711.EncodeMulaw(make([]byte, n), down)
	return g711.DecodeMulaw(make([]int16, n), mu), nil
}
