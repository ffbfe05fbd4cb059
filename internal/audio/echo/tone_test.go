package echo_test

import (
	"math"
	"testing"

	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/audio/g711"
)

// toneWords is n samples of words as the fake ElevenLabs speaks them.
func toneWords(n int) []int16 {
	var out []int16
	pitches := []float64{220, 330, 440, 294, 392, 523, 262, 349}
	for w := 0; len(out) < n; w++ {
		words := 800 + (w*337)%1600
		for i := 0; i < words; i++ {
			g := 1.0
			if i < 40 {
				g = float64(i) / 40
			}
			if k := words - 1 - i; k < 40 {
				g = math.Min(g, float64(k)/40)
			}
			out = append(out, int16(23197*g*math.Sin(2*math.Pi*pitches[w%8]*float64(i)/8000)))
		}
		out = append(out, make([]int16, 480)...)
	}
	return out[:n]
}

// TestToneVoiceLeavesNothing: the fake TTS's voice (a tone a word, -6 dBFS frames) over a
// 12 dB echo path is taken out whole: nothing above -45 dBFS reaches the VAD.
func TestToneVoiceLeavesNothing(t *testing.T) {
	agent := toneWords(6 * rate)
	for _, lag := range []int{1600, 1600 + 37} {
		total := len(agent) + rate
		ref := make([]int16, total)
		copy(ref[rate/5:], agent)
		pcm := make([]int16, total)
		g := math.Pow(10, -12.0/20)
		for i := lag; i < total; i++ {
			pcm[i] = g711.DecodeMulawSample(g711.EncodeMulawSample(int16(g * float64(g711.DecodeMulawSample(g711.EncodeMulawSample(ref[i-lag]))))))
		}
		l, _ := echo.NewLine(rate, 0)
		out := make([]int16, 160)
		leaks := 0
		worst := math.Inf(-1)
		for i := 0; i+160 <= total; i += 160 {
			l.Played(int64(i), ref[i:i+160])
			_, f := l.Process(pcm[i:i+160], out)
			if i > 2*rate && f.ResidualDB > -45 {
				leaks++
			}
			if i > 2*rate {
				worst = math.Max(worst, f.ResidualDB)
			}
		}
		if leaks > 0 {
			t.Errorf("echo after %d samples: %d frames above -45 dBFS left (worst %.1f dBFS); path %+v", lag, leaks, worst, l.Estimate())
		}
	}
}
