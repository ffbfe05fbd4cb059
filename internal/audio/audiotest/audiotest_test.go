package audiotest

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.3f, want %.3f ± %.3f", what, got, want, tol)
	}
}

func TestToneLengthAndLevel(t *testing.T) {
	for _, rate := range []int{8000, 16000, 24000, 48000} {
		pcm := Tone(rate, 1000, time.Second, 0.5)
		if len(pcm) != rate {
			t.Fatalf("Tone(%d, 1 s) has %d samples", rate, len(pcm))
		}
		want := 20 * math.Log10(0.5*32767/math.Sqrt2/32768)
		near(t, "RMSDBFS(tone)", RMSDBFS(pcm), want, 0.01)
		near(t, "ToneLevelDB(tone, 1 kHz)", ToneLevelDB(pcm, rate, 1000), want, 0.05)
		if l := ToneLevelDB(pcm, rate, 2500); l > want-60 {
			t.Errorf("rate %d: level at 2.5 kHz of a 1 kHz tone = %.1f dBFS, want < %.1f", rate, l, want-60)
		}
	}
	if n := len(Tone(8000, 440, 20*time.Millisecond, 1)); n != 160 {
		t.Errorf("20 ms at 8 kHz = %d samples, want 160", n)
	}
}

func TestGoertzelOffBinAndShortWindow(t *testing.T) {
	// 1234.5 Hz is not a DFT bin of 20 ms; Goertzel at the exact frequency must still read
	// the level, and a neighbour 300 Hz away must not.
	pcm := Tone(16000, 1234.5, 20*time.Millisecond, 0.25)
	want := 20 * math.Log10(0.25*32767/math.Sqrt2/32768)
	near(t, "level at 1234.5 Hz", ToneLevelDB(pcm, 16000, 1234.5), want, 0.3)
	if l := ToneLevelDB(pcm, 16000, 1534.5); l > want-30 {
		t.Errorf("level 300 Hz away = %.1f dBFS, want < %.1f", l, want-30)
	}
	if g := Goertzel(nil, 8000, 1000); g != 0 {
		t.Errorf("Goertzel(nil) = %v, want 0", g)
	}
}

func TestSilence(t *testing.T) {
	s := Silence(16000, 100*time.Millisecond)
	if len(s) != 1600 {
		t.Fatalf("len = %d, want 1600", len(s))
	}
	for _, v := range s {
		if v != 0 {
			t.Fatal("Silence has a non-zero sample")
		}
	}
	if l := RMSDBFS(s); !math.IsInf(l, -1) {
		t.Errorf("RMSDBFS(silence) = %v, want -Inf", l)
	}
}

func TestWhiteNoise(t *testing.T) {
	a := WhiteNoise(8000, 2*time.Second, -40, 1)
	near(t, "RMSDBFS(noise -40)", RMSDBFS(a), -40, 0.1)
	near(t, "RMSDBFS(noise -10)", RMSDBFS(WhiteNoise(16000, time.Second, -10, 2)), -10, 0.2)
	b := WhiteNoise(8000, 2*time.Second, -40, 1)
	c := WhiteNoise(8000, 2*time.Second, -40, 2)
	same, diff := true, false
	for i := range a {
		same = same && a[i] == b[i]
		diff = diff || a[i] != c[i]
	}
	if !same || !diff {
		t.Errorf("same seed same noise = %v, other seed differs = %v; want both true", same, diff)
	}
	// White: equal power in a low and a high band. One Goertzel reading of noise is very
	// noisy, so average 200 of them (40 segments of 50 ms, 5 frequencies per band).
	var lo, hi float64
	for seg := 0; seg+400 <= len(a); seg += 400 {
		for f := 400.0; f < 900; f += 100 {
			lo += Goertzel(a[seg:seg+400], 8000, f)
			hi += Goertzel(a[seg:seg+400], 8000, f+2500)
		}
	}
	near(t, "low/high band ratio (dB)", 10*math.Log10(lo/hi), 0, 1)
}

func TestSpeechLikeLevelEnvelopeAndPitch(t *testing.T) {
	const rate = 16000
	pcm := SpeechLike(rate, 10*time.Second, 7)
	if len(pcm) != 10*rate {
		t.Fatalf("len = %d", len(pcm))
	}
	near(t, "RMSDBFS(speech)", RMSDBFS(pcm), SpeechLevelDBFS, 0.2)

	// Syllables: count rises of the 20 ms frame level through -30 dBFS.
	frame := rate / 50
	var rises int
	loud := false
	for i := 0; i+frame <= len(pcm); i += frame {
		l := RMSDBFS(pcm[i : i+frame])
		if !loud && l > -30 {
			rises++
		}
		loud = l > -30
	}
	if rate := float64(rises) / 10; rate < 3.3 || rate > 6 {
		t.Errorf("syllable rate = %.1f per second, want about 4-5", rate)
	}

	// Pitch: the autocorrelation of a voiced stretch peaks at a lag of 120-220 Hz.
	peak := loudestFrame(pcm, frame)
	seg := pcm[peak : peak+2*frame]
	best, bestLag := math.Inf(-1), 0
	for lag := rate / 240; lag <= rate/100; lag++ {
		var r float64
		for i := 0; i+lag < len(seg); i++ {
			r += float64(seg[i]) * float64(seg[i+lag])
		}
		if r > best {
			best, bestLag = r, lag
		}
	}
	if f0 := float64(rate) / float64(bestLag); f0 < 110 || f0 > 230 {
		t.Errorf("fundamental = %.0f Hz, want 120-220", f0)
	}
	// Energy sits in the voice band: little above 4 kHz.
	if hi := ToneLevelDB(pcm, rate, 6000); hi > SpeechLevelDBFS-40 {
		t.Errorf("level at 6 kHz = %.1f dBFS, want well below the voice band", hi)
	}
}

func loudestFrame(pcm []int16, frame int) int {
	best, at := math.Inf(-1), 0
	for i := 0; i+3*frame <= len(pcm); i += frame {
		if l := RMSDBFS(pcm[i : i+frame]); l > best {
			best, at = l, i
		}
	}
	return at
}

func TestSpeechLikeDeterministic(t *testing.T) {
	a := SpeechLike(8000, time.Second, 3)
	b := SpeechLike(8000, time.Second, 3)
	c := SpeechLike(8000, time.Second, 4)
	diff := false
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed gave different speech")
		}
		diff = diff || a[i] != c[i]
	}
	if !diff {
		t.Error("different seeds gave the same speech")
	}
}

func TestMixAtSNR(t *testing.T) {
	sig := SpeechLike(8000, 3*time.Second, 1)
	noise := WhiteNoise(8000, time.Second, -30, 9) // shorter: repeats
	for _, snr := range []float64{20, 10, 0} {
		mix := MixAtSNR(sig, noise, snr)
		if len(mix) != len(sig) {
			t.Fatalf("len = %d, want %d", len(mix), len(sig))
		}
		resid := make([]int16, len(mix))
		for i := range mix {
			resid[i] = mix[i] - sig[i]
		}
		near(t, "measured SNR", RMSDBFS(sig)-RMSDBFS(resid), snr, 0.05)
	}
	if got := MixAtSNR(sig[:10], nil, 10); got[3] != sig[3] {
		t.Error("MixAtSNR without noise changed the signal")
	}
}

func TestMixConcatMulaw(t *testing.T) {
	m := Mix([]int16{30000, -5, 1}, []int16{10000, 5})
	want := []int16{32767, 0, 1}
	for i := range want {
		if m[i] != want[i] {
			t.Fatalf("Mix = %v, want %v", m, want)
		}
	}
	c := Concat([]int16{1, 2}, nil, []int16{3})
	if len(c) != 3 || c[0] != 1 || c[2] != 3 {
		t.Errorf("Concat = %v", c)
	}
	pcm := Tone(8000, 1000, 10*time.Millisecond, 0.3)
	mu := Mulaw(pcm)
	if len(mu) != len(pcm) {
		t.Fatalf("Mulaw len = %d", len(mu))
	}
	for i := range pcm {
		if mu[i] != g711.EncodeMulawSample(pcm[i]) {
			t.Fatalf("Mulaw[%d] differs from g711", i)
		}
	}
}

func TestDecodeUndoesEachEncoding(t *testing.T) {
	pcm := SpeechLike(8000, 100*time.Millisecond, 5)
	le := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		le[2*i], le[2*i+1] = byte(v), byte(uint16(v)>>8)
	}
	for _, c := range []struct {
		f   audio.Format
		b   []byte
		tol float64 // dB: G.711 keeps about 38 dB of signal to quantisation noise
	}{
		{audio.Format{Encoding: audio.PCM16, Rate: 8000}, le, 0},
		{audio.Telephone, Mulaw(pcm), 0.1},
		{audio.Format{Encoding: audio.Alaw, Rate: 8000}, g711.EncodeAlaw(make([]byte, len(pcm)), pcm), 0.1},
	} {
		got := Decode(c.f, c.b)
		if len(got) != len(pcm) {
			t.Fatalf("%v: %d samples, want %d", c.f, len(got), len(pcm))
		}
		near(t, c.f.String()+" level", RMSDBFS(got), RMSDBFS(pcm), c.tol)
		if c.tol == 0 && !slices.Equal(got, pcm) {
			t.Errorf("%v: samples differ", c.f)
		}
	}
}
