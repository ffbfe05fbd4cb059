package resample

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
)

type pair struct{ from, to int }

func (p pair) String() string { return fmt.Sprintf("%dto%d", p.from/1000, p.to/1000) }

func allPairs() []pair {
	var ps []pair
	for _, a := range Rates {
		for _, b := range Rates {
			ps = append(ps, pair{a, b})
		}
	}
	return ps
}

func mustNew(t testing.TB, from, to int) *Resampler {
	t.Helper()
	r, err := New(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewRejectsUnsupportedRates(t *testing.T) {
	for _, c := range []pair{{44100, 8000}, {8000, 11025}, {0, 8000}, {16000, -1}} {
		_, err := New(c.from, c.to)
		if !errors.Is(err, ErrUnsupportedRate) {
			t.Fatalf("New(%d, %d) error = %v, want ErrUnsupportedRate", c.from, c.to, err)
		}
		bad := c.from
		if supported(bad) {
			bad = c.to
		}
		if !strings.Contains(err.Error(), fmt.Sprint(bad)) {
			t.Errorf("error %q does not name the rate %d", err, bad)
		}
	}
	for _, p := range allPairs() {
		r := mustNew(t, p.from, p.to)
		if want := fmt.Sprintf("resample %d->%d", p.from, p.to); r.String() != want {
			t.Errorf("String() = %q, want %q", r.String(), want)
		}
		if r.From() != p.from || r.To() != p.to {
			t.Errorf("%v: From/To = %d/%d", p, r.From(), r.To())
		}
	}
}

// process feeds src through r in chunks of the given sizes (cycled) and joins the output.
func process(r *Resampler, src []int16, sizes []int) []int16 {
	var out []int16
	dst := make([]int16, 0, 64)
	for i, k := 0, 0; i < len(src); k++ {
		n := min(sizes[k%len(sizes)], len(src)-i)
		dst = r.Process(dst, src[i:i+n])
		out = append(out, dst...)
		i += n
	}
	return out
}

func TestLengthOverManyChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := make([]int, 97)
	for i := range sizes {
		sizes[i] = rng.IntN(400) // includes empty and tiny chunks
	}
	for _, p := range allPairs() {
		src := audiotest.WhiteNoise(p.from, 3*time.Second+7*time.Millisecond, -20, 1)
		src = src[:len(src)-3] // not a whole number of anything
		out := process(mustNew(t, p.from, p.to), src, sizes)
		want := float64(len(src)) * float64(p.to) / float64(p.from)
		if math.Abs(float64(len(out))-want) > 1 {
			t.Errorf("%v: %d in gave %d out, want %.2f ± 1", p, len(src), len(out), want)
		}
	}
}

func TestChunkedEqualsWhole(t *testing.T) {
	for _, p := range allPairs() {
		src := audiotest.SpeechLike(p.from, 500*time.Millisecond, 2)
		whole := mustNew(t, p.from, p.to).Process(nil, src)
		frame := p.from / 50
		for _, sizes := range [][]int{{frame}, {1}, {0, 7, 333, 1, 2000}, {block + 1}} {
			got := process(mustNew(t, p.from, p.to), src, sizes)
			if i := firstDiff(got, whole); i >= 0 {
				t.Fatalf("%v chunks %v: differs from whole buffer at output %d (len %d vs %d)",
					p, sizes, i, len(got), len(whole))
			}
		}
	}
}

func firstDiff(a, b []int16) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// steady drops the filter's start-up transient (its whole length, twice its delay) from out.
func steady(r *Resampler, out []int16) []int16 {
	skip := int(2*r.Delay().Seconds()*float64(r.To())) + 2
	return out[skip:]
}

func TestToneKeepsLevelAndPitch(t *testing.T) {
	for _, p := range allPairs() {
		r := mustNew(t, p.from, p.to)
		in := audiotest.Tone(p.from, 1000, 500*time.Millisecond, 0.5)
		out := steady(r, process(r, in, []int{p.from / 50}))
		want := audiotest.ToneLevelDB(in, p.from, 1000)
		got := audiotest.ToneLevelDB(out, p.to, 1000)
		if math.Abs(got-want) > 1 {
			t.Errorf("%v: 1 kHz tone %.2f dBFS in, %.2f dBFS out; want within 1 dB", p, want, got)
		}
		// Everything in the output is that tone: nothing at a wrong pitch.
		if total := audiotest.RMSDBFS(out); math.Abs(total-got) > 0.1 {
			t.Errorf("%v: output RMS %.2f dBFS but 1 kHz component %.2f dBFS", p, total, got)
		}
	}
}

func TestPassbandIsFlat(t *testing.T) {
	for _, p := range allPairs() {
		low := float64(min(p.from, p.to))
		for _, hz := range []float64{300, 0.25 * low, 0.4 * low, passEdge * low} {
			r := mustNew(t, p.from, p.to)
			in := audiotest.Tone(p.from, hz, 300*time.Millisecond, 0.5)
			out := steady(r, process(r, in, []int{p.from / 50}))
			want := audiotest.ToneLevelDB(in, p.from, hz)
			if got := audiotest.ToneLevelDB(out, p.to, hz); math.Abs(got-want) > 0.1 {
				t.Errorf("%v: %.0f Hz tone %.3f dBFS in, %.3f dBFS out; want within 0.1 dB", p, hz, want, got)
			}
		}
	}
}

func TestDownsamplingRemovesAliases(t *testing.T) {
	for _, p := range allPairs() {
		if p.to >= p.from {
			continue
		}
		// Tones between the new Nyquist frequency and the old one, including one just
		// above the new Nyquist, where the stopband starts.
		for _, hz := range []float64{0.52 * float64(p.to), 0.75 * float64(p.to), 0.45 * float64(p.from)} {
			if hz <= float64(p.to)/2 || hz >= 0.48*float64(p.from) {
				continue // not between the two Nyquist frequencies
			}
			r := mustNew(t, p.from, p.to)
			in := audiotest.Tone(p.from, hz, 500*time.Millisecond, 0.5)
			out := steady(r, process(r, in, []int{p.from / 50}))
			atten := audiotest.RMSDBFS(in) - audiotest.RMSDBFS(out)
			if atten < 40 {
				t.Errorf("%v: %.0f Hz tone attenuated by %.1f dB, want >= 40", p, hz, atten)
			}
			t.Logf("%v: %.0f Hz attenuated by %.1f dB", p, hz, atten)
		}
	}
}

func TestUpsamplingRemovesImages(t *testing.T) {
	for _, p := range allPairs() {
		if p.to <= p.from {
			continue
		}
		r := mustNew(t, p.from, p.to)
		in := audiotest.Tone(p.from, 1000, 500*time.Millisecond, 0.5)
		out := steady(r, process(r, in, []int{p.from / 50}))
		tone := audiotest.ToneLevelDB(out, p.to, 1000)
		for image := float64(p.from) - 1000; image < float64(p.to)/2; image += float64(p.from) {
			if l := audiotest.ToneLevelDB(out, p.to, image); tone-l < 40 {
				t.Errorf("%v: image at %.0f Hz only %.1f dB below the tone", p, image, tone-l)
			}
		}
	}
}

func TestDCPassesWithoutRippleOrDrift(t *testing.T) {
	for _, p := range allPairs() {
		for _, dc := range []int16{10000, -12345} {
			r := mustNew(t, p.from, p.to)
			in := make([]int16, p.from) // 1 s
			for i := range in {
				in[i] = dc
			}
			out := steady(r, process(r, in, []int{p.from / 50}))
			for i, v := range out {
				if d := int(v) - int(dc); d < -1 || d > 1 {
					t.Fatalf("%v: DC %d came out as %d at sample %d", p, dc, v, i)
				}
			}
		}
		// The mean of a signal passes unchanged: rounding adds no offset. The last Delay()
		// of the input is still inside the filter when the input ends, so it is left out
		// of the input's sum (for the 22050 Hz noise here, that tail alone moves the mean
		// by up to 1.2).
		r := mustNew(t, p.from, p.to)
		in := audiotest.WhiteNoise(p.from, 2*time.Second, -20, 4)
		inside := int(r.Delay().Seconds() * float64(p.from))
		want := mean(in[:len(in)-inside]) * float64(len(in)-inside) / float64(len(in))
		if d := mean(process(r, in, []int{p.from / 50})) - want; math.Abs(d) > 0.5 {
			t.Errorf("%v: mean moved by %.2f", p, d)
		}
	}
}

func mean(pcm []int16) float64 {
	var sum float64
	for _, v := range pcm {
		sum += float64(v)
	}
	return sum / float64(len(pcm))
}

func TestDelayMatchesImpulseResponse(t *testing.T) {
	for _, p := range allPairs() {
		r := mustNew(t, p.from, p.to)
		in := make([]int16, p.from/10)
		in[0] = 30000
		out := process(r, in, []int{len(in)})
		peak := 0
		for i, v := range out {
			if v > out[peak] {
				peak = i
			}
		}
		want := r.Delay().Seconds() * float64(p.to)
		if math.Abs(float64(peak)-want) > 1 {
			t.Errorf("%v: impulse peak at output %d, Delay() says %.1f", p, peak, want)
		}
	}
}

func TestResetStartsFresh(t *testing.T) {
	src := audiotest.SpeechLike(16000, 300*time.Millisecond, 5)
	fresh := mustNew(t, 16000, 8000).Process(nil, src)
	r := mustNew(t, 16000, 8000)
	r.Process(nil, audiotest.WhiteNoise(16000, 77*time.Millisecond, -10, 1))
	r.Reset()
	if i := firstDiff(r.Process(nil, src), fresh); i >= 0 {
		t.Errorf("after Reset output differs from a fresh resampler at %d", i)
	}
}

func TestProcessDoesNotAllocateWithRoom(t *testing.T) {
	for _, p := range allPairs() {
		r := mustNew(t, p.from, p.to)
		src := audiotest.SpeechLike(p.from, 20*time.Millisecond, 1)
		dst := make([]int16, 0, r.MaxOut(len(src)))
		if n := testing.AllocsPerRun(50, func() { dst = r.Process(dst, src) }); n != 0 {
			t.Errorf("%v: %.0f allocations per 20 ms frame", p, n)
		}
	}
}

func BenchmarkProcess20ms(b *testing.B) {
	for _, p := range []pair{
		{8000, 16000}, {16000, 8000}, {8000, 24000}, {24000, 8000},
		{16000, 48000}, {48000, 16000}, {24000, 16000}, {8000, 48000}, {48000, 8000},
	} {
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
