package g722

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
)

// codecDelay is the encoder-plus-decoder delay in samples: the two 24-tap QMF filters.
const codecDelay = 22

func toPCM(samples []int16) []byte {
	pcm := make([]byte, 0, 2*len(samples))
	for _, s := range samples {
		pcm = append(pcm, byte(s), byte(uint16(s)>>8))
	}
	return pcm
}

func fromPCM(pcm []byte) []int16 {
	out := make([]int16, len(pcm)/2)
	for i := range out {
		out[i] = int16(uint16(pcm[2*i]) | uint16(pcm[2*i+1])<<8)
	}
	return out
}

func roundTrip(in []int16) []int16 {
	code := NewEncoder().Encode(nil, toPCM(in))
	return fromPCM(NewDecoder().Decode(nil, code))
}

// snrDB compares out, delayed by codecDelay, with in, skipping the first 50 ms while the
// adaptation settles.
func snrDB(in, out []int16) float64 {
	var sig, noise float64
	for i := 800; i+codecDelay < len(out); i++ {
		s := float64(in[i])
		e := float64(out[i+codecDelay]) - s
		sig += s * s
		noise += e * e
	}
	return 10 * math.Log10(sig/noise)
}

// segmentalSNRDB is the mean SNR of the 20 ms frames that carry sound (above -50 dBFS),
// each clamped to [-10, 60] dB as is usual, so loud frames cannot hide bad quiet ones.
func segmentalSNRDB(in, out []int16) float64 {
	const frame = 320
	var sum float64
	var frames int
	for start := frame; start+frame+codecDelay <= len(out); start += frame {
		var sig, noise float64
		for i := start; i < start+frame; i++ {
			s := float64(in[i])
			e := float64(out[i+codecDelay]) - s
			sig += s * s
			noise += e * e
		}
		if 10*math.Log10(sig/frame/(32768*32768)) < -50 {
			continue
		}
		snr := 60.0
		if noise > 0 {
			snr = min(60, max(-10, 10*math.Log10(sig/noise)))
		}
		sum += snr
		frames++
	}
	return sum / float64(frames)
}

// sweep is a sine whose frequency rises linearly from lo to hi Hz over d at 16 kHz.
func sweep(lo, hi float64, d time.Duration, amp float64) []int16 {
	n := int(d.Seconds() * 16000)
	out := make([]int16, n)
	var phase float64
	for i := range out {
		f := lo + (hi-lo)*float64(i)/float64(n)
		phase += 2 * math.Pi * f / 16000
		out[i] = int16(amp * 32767 * math.Sin(phase))
	}
	return out
}

func TestToneSweepRoundTrip(t *testing.T) {
	// Measured: 28.6 dB over 100-7000 Hz at -10 dBFS peak; the bound leaves margin but
	// fails on a swapped band, a wrong table entry or a QMF off by a sample (< 10 dB).
	in := sweep(100, 7000, 3*time.Second, 0.3)
	if got := segmentalSNRDB(in, roundTrip(in)); got < 22 {
		t.Errorf("sweep segmental SNR = %.1f dB, want >= 22", got)
	} else {
		t.Logf("sweep segmental SNR %.1f dB", got)
	}
}

func TestTonesRoundTrip(t *testing.T) {
	// Measured at -10 dBFS peak: 300 Hz 62 dB, 1 kHz 47, 3 kHz 41, 5 kHz 22, 6.5 kHz 26.
	// A 5 kHz tone is the point of G.722: G.711 at 8 kHz cannot carry it at all.
	cases := []struct {
		hz   float64
		want float64
	}{{300, 50}, {1000, 40}, {3000, 35}, {5000, 17}, {6500, 20}}
	for _, c := range cases {
		in := audiotest.Tone(16000, c.hz, time.Second, 0.3)
		out := roundTrip(in)
		if got := snrDB(in, out); got < c.want {
			t.Errorf("%v Hz: SNR %.1f dB, want >= %v", c.hz, got, c.want)
		}
		if in, out := audiotest.Goertzel(in, 16000, c.hz), audiotest.Goertzel(out, 16000, c.hz); math.Abs(10*math.Log10(out/in)) > 0.5 {
			t.Errorf("%v Hz: level changed by %.2f dB", c.hz, 10*math.Log10(out/in))
		}
	}
}

func TestSpeechRoundTrip(t *testing.T) {
	// Synthetic speech, needing no peer (TestRecordedSpeechRoundTrip has real voices):
	// harmonics, formants, breath noise and a syllable envelope. Measured: 31 dB segmental.
	for seed := int64(1); seed <= 3; seed++ {
		in := audiotest.SpeechLike(16000, 4*time.Second, seed)
		if got := segmentalSNRDB(in, roundTrip(in)); got < 24 {
			t.Errorf("speech seed %d: segmental SNR %.1f dB, want >= 24", seed, got)
		} else {
			t.Logf("speech seed %d: segmental SNR %.1f dB", seed, got)
		}
	}
}

// TestRecordedSpeechRoundTrip codes real 16 kHz recordings (Debian's pocketsphinx
// test data: read sentences, card names and commands from several speakers). A missing
// package is a missing peer. The bound is measured minus margin, per recording.
func TestRecordedSpeechRoundTrip(t *testing.T) {
	for _, rec := range vadtest.Recordings(t) {
		got := segmentalSNRDB(rec.PCM, roundTrip(rec.PCM))
		t.Logf("%s: segmental SNR %.1f dB", rec.Name, got)
		if got < 20 {
			t.Errorf("%s: segmental SNR %.1f dB, want >= 20", rec.Name, got)
		}
	}
}

func peak(s []int16) int {
	m := 0
	for _, v := range s {
		m = max(m, abs(int(v)))
	}
	return m
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func TestSilenceDecodesToSilence(t *testing.T) {
	code := NewEncoder().Encode(nil, make([]byte, 2*16000))
	if got := peak(fromPCM(NewDecoder().Decode(nil, code))); got > 4 {
		t.Errorf("silence decodes with peak %d, want <= 4", got)
	}
}

// TestStableOnHarshInput: full-scale squares and loud noise must not drive the
// predictors into oscillation; the proof is that silence afterwards decays to silence.
func TestStableOnHarshInput(t *testing.T) {
	square := func(hz int) []int16 {
		s := make([]int16, 16000)
		for i := range s {
			s[i] = 32767
			if (i*hz*2/16000)%2 == 1 {
				s[i] = -32768
			}
		}
		return s
	}
	inputs := map[string][]int16{
		"square 50 Hz":   square(50),
		"square 1 kHz":   square(1000),
		"square 7.9 kHz": square(7900),
		"noise -3 dBFS":  audiotest.WhiteNoise(16000, time.Second, -3, 7),
	}
	for name, loud := range inputs {
		in := append(append([]int16{}, loud...), make([]int16, 16000)...)
		out := roundTrip(in)
		if got := snrDB(loud, out[:len(loud)]); got < 3 {
			t.Errorf("%s: SNR %.1f dB while loud, want >= 3", name, got)
		}
		if got := peak(out[len(out)-8000:]); got > 8 {
			t.Errorf("%s: last 500 ms of silence after it peak at %d, want <= 8", name, got)
		}
	}
}

func TestAnyCutEncodesTheSame(t *testing.T) {
	pcm := toPCM(audiotest.SpeechLike(16000, 500*time.Millisecond, 4))
	whole := NewEncoder().Encode(nil, pcm)
	e := NewEncoder()
	var cut []byte
	for rest, n := pcm, 1; len(rest) > 0; n = n%7 + 1 {
		k := min(n, len(rest))
		cut = e.Encode(cut, rest[:k])
		rest = rest[k:]
	}
	if !bytes.Equal(whole, cut) {
		t.Error("encoding in cuts of 1-7 bytes differs from encoding at once")
	}
	if len(whole) != len(pcm)/4 {
		t.Errorf("%d PCM bytes gave %d code bytes, want %d", len(pcm), len(whole), len(pcm)/4)
	}
}

func TestResetStartsOver(t *testing.T) {
	pcm := toPCM(audiotest.SpeechLike(16000, 300*time.Millisecond, 5))
	e, d := NewEncoder(), NewDecoder()
	first := e.Encode(nil, pcm[:len(pcm)-1]) // leaves a carried byte behind
	firstPCM := d.Decode(nil, first)
	e.Reset()
	d.Reset()
	if again := e.Encode(nil, pcm[:len(pcm)-1]); !bytes.Equal(first, again) {
		t.Error("encoder after Reset differs from a new one")
	}
	if again := d.Decode(nil, first); !bytes.Equal(firstPCM, again) {
		t.Error("decoder after Reset differs from a new one")
	}
}

func TestFramesDoNotAllocate(t *testing.T) {
	pcm := toPCM(audiotest.SpeechLike(16000, 20*time.Millisecond, 6))
	e, d := NewEncoder(), NewDecoder()
	code := make([]byte, 0, 160)
	out := make([]byte, 0, 640)
	allocs := testing.AllocsPerRun(100, func() {
		code = e.Encode(code[:0], pcm)
		out = d.Decode(out[:0], code)
	})
	if allocs != 0 {
		t.Errorf("a 20 ms frame allocates %v times, want 0", allocs)
	}
}

func BenchmarkEncodeFrame(b *testing.B) {
	pcm := toPCM(audiotest.SpeechLike(16000, 20*time.Millisecond, 8))
	e := NewEncoder()
	code := make([]byte, 0, 160)
	b.ReportAllocs()
	for b.Loop() {
		code = e.Encode(code[:0], pcm)
	}
}

func BenchmarkDecodeFrame(b *testing.B) {
	code := NewEncoder().Encode(nil, toPCM(audiotest.SpeechLike(16000, 20*time.Millisecond, 8)))
	d := NewDecoder()
	out := make([]byte, 0, 640)
	b.ReportAllocs()
	for b.Loop() {
		out = d.Decode(out[:0], code)
	}
}
