package echo

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The estimator keeps its loudest block as blocks come in and picks the delay only when
// its sums changed: both must give what searching the whole envelope and picking every
// frame give, over speech-like reference with pauses, fades and double talk.
func TestEstimatorShortcutsMatchTheFullSearch(t *testing.T) {
	const frame, block, maxLag = 160, 40, 80
	var fast, full estimator
	fast.init(maxLag, frame/block)
	full.init(maxLag, frame/block)
	rng := rand.New(rand.NewPCG(7, 9))
	ref, in := make([]int16, frame), make([]int16, frame)
	var history [][]int16
	for f := range 3000 {
		// Talkspurts of random length and level, fading out, with silences between.
		phase := f % 150
		level := 0.0
		if phase < 90 {
			level = 8000 * math.Exp(-float64(phase)/30) * (0.5 + rng.Float64())
		}
		for i := range ref {
			ref[i] = int16(level * math.Sin(float64(f*frame+i)*0.07) * rng.Float64())
		}
		history = append(history, append([]int16(nil), ref...))
		echoOf := history[max(0, len(history)-6)] // 120 ms late, 12 dB down
		for i := range in {
			in[i] = echoOf[i] / 4
			if f%400 > 350 { // the caller talks over it now and then
				in[i] += int16(3000 * math.Sin(float64(i)*0.3))
			}
		}
		talk := f%400 > 350
		fast.doubleTalk(talk)
		full.doubleTalk(talk)
		fast.addFrame(ref, in, block)
		full.addFrame(ref, in, block)
		if full.learned && !full.paused() {
			full.pickDelay()
		}
		peak := 0.0
		for _, x := range full.env {
			peak = math.Max(peak, x)
		}
		if want := 20 * math.Log10(peak/32768); fast.loudestDB != want {
			t.Fatalf("frame %d: loudest %.3f dB, the whole envelope's %.3f dB", f, fast.loudestDB, want)
		}
		if fast.delay != full.delay || fast.corr != full.corr {
			t.Fatalf("frame %d: delay %d (corr %.4f), picking every frame gives %d (%.4f)",
				f, fast.delay, fast.corr, full.delay, full.corr)
		}
	}
	if !fast.learned || fast.delay < 20 || fast.delay > 28 {
		t.Fatalf("learned %v, delay %d blocks; the echo is 24 blocks late", fast.learned, fast.delay)
	}
}

// addBlock's ring walk gives, lag by lag, what the plain definition gives: every sum
// forgets a little and adds the reference envelope that many blocks back (silence before
// the call's first block) against the inbound one; a talkspurt's sums add it unforgotten.
func TestAddBlockMatchesItsDefinition(t *testing.T) {
	const maxLag, perFrame = 60, 4
	rng := rand.New(rand.NewPCG(1, 2))
	var e estimator
	e.init(maxLag, perFrame)
	e.spurt = newSums(maxLag + 1)
	n := int64(len(e.env))
	for step := range 400 {
		e.block = int64(step)
		if step > 200 {
			e.block = int64(step) * 7 // jumps land anywhere in the ring
		}
		e.inSpurt = step%3 == 0
		for i := range e.env {
			e.env[i] = rng.Float64() * 1000
		}
		for _, s := range []*sums{&e.long, &e.spurt} {
			for l := range s.x {
				s.x[l], s.xx[l], s.xy[l] = rng.Float64(), rng.Float64(), rng.Float64()
			}
		}
		long, spurt := newSums(maxLag+1), newSums(maxLag+1)
		long.copyFrom(&e.long)
		spurt.copyFrom(&e.spurt)
		y := rng.Float64() * 1000
		e.addBlock(y)
		for lag := 0; lag <= maxLag; lag++ {
			x := 0.0
			if b := e.block - int64(lag); b >= 0 {
				x = e.env[b%n]
			}
			// The sums are weight times their value.
			w0, w1 := long.weight, e.long.weight
			want := [3]float64{long.x[lag]/w0*forget + x, long.xx[lag]/w0*forget + x*x, long.xy[lag]/w0*forget + x*y}
			if got := [3]float64{e.long.x[lag] / w1, e.long.xx[lag] / w1, e.long.xy[lag] / w1}; !near(got, want) {
				t.Fatalf("block %d lag %d: long sums %v, want %v", e.block, lag, got, want)
			}
			if e.inSpurt {
				want = [3]float64{spurt.x[lag] + x, spurt.xx[lag] + x*x, spurt.xy[lag] + x*y}
			} else {
				want = [3]float64{spurt.x[lag], spurt.xx[lag], spurt.xy[lag]}
			}
			if got := [3]float64{e.spurt.x[lag], e.spurt.xx[lag], e.spurt.xy[lag]}; got != want {
				t.Fatalf("block %d lag %d (spurt %v): spurt sums %v, want %v", e.block, lag, e.inSpurt, got, want)
			}
		}
	}
}

// A forgetting sum's weight is folded back into it before it can overflow, leaving what
// the sums say (their ratios to the weight) as it was.
func TestSumsFoldTheirWeightBack(t *testing.T) {
	s := newSums(3)
	s.weight = maxWeight * forget * 0.999999
	for l := range s.x {
		s.x[l], s.xx[l], s.xy[l] = float64(l+1)*s.weight, float64(l+2)*s.weight, float64(l+3)*s.weight
	}
	s.w, s.y, s.yy = 4*s.weight, 5*s.weight, 6*s.weight
	s.forgetBlock() // still under maxWeight: nothing folded
	if s.weight == 1 {
		t.Fatal("the weight was folded back early")
	}
	s.forgetBlock()
	if s.weight != 1 {
		t.Fatalf("weight %g after passing maxWeight, want 1", s.weight)
	}
	for l := range s.x {
		want := [3]float64{float64(l+1) * forget * forget, float64(l+2) * forget * forget, float64(l+3) * forget * forget}
		if got := [3]float64{s.x[l], s.xx[l], s.xy[l]}; !near(got, want) {
			t.Fatalf("lag %d: %v after folding, want %v", l, got, want)
		}
	}
	if got, want := [3]float64{s.w, s.y, s.yy}, [3]float64{4 * forget * forget, 5 * forget * forget, 6 * forget * forget}; !near(got, want) {
		t.Fatalf("w, y, yy %v after folding, want %v", got, want)
	}
}

// near: a and b agree to 12 significant digits (the weighted sums round differently).
func near(a, b [3]float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12*math.Max(math.Abs(a[i]), math.Abs(b[i])) {
			return false
		}
	}
	return true
}

// BenchmarkAddBlock is one 5 ms block against every lag of a 640 ms window.

func BenchmarkAddBlock(b *testing.B) {
	var e estimator
	e.init(128, 4)
	e.block = 1000
	for i := range e.env {
		e.env[i] = float64(i)
	}
	for b.Loop() {
		e.block++
		e.addBlock(3)
	}
}
