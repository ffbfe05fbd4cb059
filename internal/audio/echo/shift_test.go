package echo_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/vad"
)

// TestEchoShiftingUnderTheCanceller: forty calls of six sentences each (tone words or a
// speech-like voice) over a 6 or 12 dB echo after 60, 200 or 400 ms, where each sentence
// plays up to 5 ms earlier or later than it was placed and, once within it, the carrier ran
// dry for up to 10 ms and the rest plays that much later: the canceller, aligned to the
// sample before the shift, is a few samples off after it. The energy VAD (the most eager)
// never starts on the echo.
func TestEchoShiftingUnderTheCanceller(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	falses := 0
	for trial := 0; trial < 40; trial++ {
		voiceTone := trial%2 == 0
		delay := []int{480, 1600, 3200}[trial%3]
		loss := []float64{6, 12}[(trial/3)%2]
		// talkspurts: greeting then several sentences with pauses
		type sp struct {
			at int
			a  []int16
		}
		var spurts []sp
		at := 1600
		for k := 0; k < 6; k++ {
			d := time.Duration(1500+rng.IntN(1500)) * time.Millisecond
			var a []int16
			if voiceTone {
				a = toneWords(int(d * rate / time.Second))
			} else {
				a = audiotest.AtPeakFrame(audiotest.SpeechLike(rate, d, int64(trial*10+k)), rate, audiotest.TTSPeakFrameDBFS)
			}
			spurts = append(spurts, sp{at, a})
			at += len(a) + 160*(1+rng.IntN(20))
		}
		total := at + rate
		// the echo path: each talkspurt shifted by a few ms, and once mid-talkspurt an
		// underrun shifts the rest by a few ms more
		mic := make([]float64, total)
		g := math.Pow(10, -loss/20)
		for _, s := range spurts {
			shift := rng.IntN(81) - 40
			cut := rng.IntN(len(s.a))
			extra := rng.IntN(81)
			for i, v := range s.a {
				j := s.at + delay + shift + i
				if i >= cut {
					j += extra
				}
				if j >= 0 && j < total {
					mic[j] += g * float64(v)
				}
			}
		}
		noise := audiotest.WhiteNoise(rate, time.Duration(total)*time.Second/rate, -66, int64(trial))
		pcm := make([]int16, total)
		for i := range mic {
			pcm[i] = g711.DecodeMulawSample(g711.EncodeMulawSample(int16(max(-32768, min(32767, mic[i]+float64(noise[i]))))))
		}
		l, _ := echo.NewLine(rate, 0)
		d, _ := vad.NewEnergy(vad.EnergyConfig{Rate: rate})
		out := make([]int16, 160)
		for i := 0; i+160 <= total; i += 160 {
			for _, s := range spurts {
				if off := i - s.at; off >= 0 && off < len(s.a) {
					l.Played(int64(i), s.a[off:min(off+160, len(s.a))])
				}
			}
			res, _ := l.Process(pcm[i:i+160], out)
			if d.Process(res) == vad.SpeechStart {
				falses++
				t.Errorf("call %d (tone words %v, delay %d samples, loss %v dB): the VAD started at %.2fs on the echo", trial, voiceTone, delay, loss, float64(i)/rate)
			}
		}
	}
}
