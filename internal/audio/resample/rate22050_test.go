package resample

import (
	"math"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
)

// The conversions to and from 22050 Hz (espeak-ng's rate) have ratios such as 160/441,
// far from the small integer ratios between the other rates, so these tests check them
// more strictly than the generic tests above: the exact pitch, the level, and that
// nothing but the tone comes out.

// pairs22050 are the conversions that involve 22050 Hz.
func pairs22050() []pair {
	var ps []pair
	for _, r := range Rates {
		if r != 22050 {
			ps = append(ps, pair{22050, r}, pair{r, 22050})
		}
	}
	return ps
}

// sineFit fits a·sin + b·cos + c at hz to pcm (at rate Hz) by least squares and returns
// the fitted tone's RMS level and the RMS level of what is left over, both in dBFS.
func sineFit(pcm []int16, rate int, hz float64) (toneDB, restDB float64) {
	w := 2 * math.Pi * hz / float64(rate)
	// Normal equations for the basis (sin, cos, 1).
	var m [3][3]float64
	var v [3]float64
	for i, s := range pcm {
		b := [3]float64{math.Sin(w * float64(i)), math.Cos(w * float64(i)), 1}
		for r := range 3 {
			for c := range 3 {
				m[r][c] += b[r] * b[c]
			}
			v[r] += b[r] * float64(s)
		}
	}
	x := solve3(m, v)
	var rest float64
	for i, s := range pcm {
		fit := x[0]*math.Sin(w*float64(i)) + x[1]*math.Cos(w*float64(i)) + x[2]
		d := float64(s) - fit
		rest += d * d
	}
	amp := math.Hypot(x[0], x[1])
	toneDB = 20 * math.Log10(amp/math.Sqrt2/32768)
	restDB = 10 * math.Log10(rest/float64(len(pcm))/(32768*32768))
	return toneDB, restDB
}

// solve3 solves m·x = v by Cramer's rule.
func solve3(m [3][3]float64, v [3]float64) [3]float64 {
	det := func(a [3][3]float64) float64 {
		return a[0][0]*(a[1][1]*a[2][2]-a[1][2]*a[2][1]) -
			a[0][1]*(a[1][0]*a[2][2]-a[1][2]*a[2][0]) +
			a[0][2]*(a[1][0]*a[2][1]-a[1][1]*a[2][0])
	}
	d := det(m)
	var x [3]float64
	for c := range 3 {
		mc := m
		for r := range 3 {
			mc[r][c] = v[r]
		}
		x[c] = det(mc) / d
	}
	return x
}

// pitch measures the frequency of the tone in pcm (at rate Hz) from its first and last
// upward zero crossings, interpolated between samples.
func pitch(pcm []int16, rate int) float64 {
	first, last, n := -1.0, -1.0, 0
	for i := 1; i < len(pcm); i++ {
		a, b := float64(pcm[i-1]), float64(pcm[i])
		if a < 0 && b >= 0 {
			at := float64(i-1) + a/(a-b)
			if first < 0 {
				first = at
			}
			last = at
			n++
		}
	}
	if n < 2 {
		return 0
	}
	return float64(n-1) * float64(rate) / (last - first)
}

func TestRate22050TonePitchLevelAndPurity(t *testing.T) {
	for _, p := range pairs22050() {
		low := float64(min(p.from, p.to))
		for _, hz := range []float64{200, 1000, 0.4 * low} {
			r := mustNew(t, p.from, p.to)
			in := audiotest.Tone(p.from, hz, time.Second, 0.5)
			out := steady(r, process(r, in, []int{p.from / 50}))

			// A wrong ratio would be off by at least 1/441 (0.23 %); interpolating the
			// zero crossings of a tone at 0.4 of the rate is good to about 1e-5.
			if got := pitch(out, p.to); math.Abs(got-hz) > 1e-4*hz {
				t.Errorf("%v: %.0f Hz tone came out at %.3f Hz", p, hz, got)
			}
			inDB, _ := sineFit(in, p.from, hz)
			outDB, restDB := sineFit(out, p.to, hz)
			if math.Abs(outDB-inDB) > 0.1 {
				t.Errorf("%v: %.0f Hz tone %.3f dBFS in, %.3f dBFS out; want within 0.1 dB", p, hz, inDB, outDB)
			}
			// Images, aliases and distortion all show up as a residue besides the tone.
			if outDB-restDB < 60 {
				t.Errorf("%v: %.0f Hz tone: residue only %.1f dB below the tone", p, hz, outDB-restDB)
			}
			t.Logf("%v: %.0f Hz: level %+.3f dB, residue %.1f dB below", p, hz, outDB-inDB, outDB-restDB)
		}
	}
}

func TestRate22050DownsamplingRejectsAliases(t *testing.T) {
	for _, p := range pairs22050() {
		if p.to >= p.from {
			continue
		}
		// From just above the new Nyquist frequency (where the stopband starts) to near
		// the old one.
		lo, hi := float64(p.to)/2*1.02, float64(p.from)/2*0.96
		for _, hz := range []float64{lo, (lo + hi) / 2, hi} {
			r := mustNew(t, p.from, p.to)
			in := audiotest.Tone(p.from, hz, 500*time.Millisecond, 0.5)
			out := steady(r, process(r, in, []int{p.from / 50}))
			atten := audiotest.RMSDBFS(in) - audiotest.RMSDBFS(out)
			if atten < 60 {
				t.Errorf("%v: %.0f Hz tone (alias at %.0f Hz) attenuated by only %.1f dB", p, hz, float64(p.to)-hz, atten)
			}
			t.Logf("%v: %.0f Hz attenuated by %.1f dB", p, hz, atten)
		}
	}
}

func TestRate22050UpsamplingRejectsImages(t *testing.T) {
	for _, p := range pairs22050() {
		if p.to <= p.from {
			continue
		}
		const hz = 1000
		r := mustNew(t, p.from, p.to)
		out := steady(r, process(r, audiotest.Tone(p.from, hz, 500*time.Millisecond, 0.5), []int{p.from / 50}))
		tone := audiotest.ToneLevelDB(out, p.to, hz)
		// The images of a tone at hz sit at k·from ± hz; those above the output's Nyquist
		// frequency would fold back to to - image.
		for k := 1; float64(k*p.from-hz) < float64(p.to); k++ {
			for _, image := range []float64{float64(k*p.from - hz), float64(k*p.from + hz)} {
				at := image
				if at > float64(p.to)/2 {
					at = float64(p.to) - at
				}
				if at <= 0 || at >= float64(p.to)/2 {
					continue
				}
				l := audiotest.ToneLevelDB(out, p.to, at)
				if tone-l < 60 {
					t.Errorf("%v: image of %d Hz at %.0f Hz only %.1f dB below the tone", p, hz, at, tone-l)
				}
				t.Logf("%v: image at %.0f Hz %.1f dB below the tone", p, at, tone-l)
			}
		}
	}
}

func BenchmarkProcess20ms22050(b *testing.B) {
	for _, p := range pairs22050() {
		b.Run(p.String(), func(b *testing.B) {
			r := mustNew(b, p.from, p.to)
			src := audiotest.SpeechLike(p.from, 20*time.Millisecond, 1)
			dst := make([]int16, 0, r.MaxOut(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				dst = r.Process(dst, src)
			}
		})
	}
}

func BenchmarkNew22050(b *testing.B) {
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := New(22050, 8000); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("design", func(b *testing.B) {
		for b.Loop() {
			design(22050, 160, 441)
		}
	})
}
