package echo_test

import (
	"math"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/audio/vad"
)

// TestTalkspurtsAlignedOnTheirOwn: the carrier starts each talkspurt a few milliseconds
// away from where Handset placed it, differently every time (here -15 to +20 ms). Each
// talkspurt's echo is aligned on its own, so a quiet caller (-34 dBFS, 22 dB under a 12 dB
// echo of a -6 dBFS voice) is heard over the fourth talkspurt within 500 ms, and the echo
// never sets the VAD off.
func TestTalkspurtsAlignedOnTheirOwn(t *testing.T) {
	const frame = rate / 50
	jitters := []time.Duration{0, 20 * time.Millisecond, -15 * time.Millisecond, 10 * time.Millisecond}
	spurtLen, gap := 3*rate, rate // 3 s of speech, then 1 s of silence
	delay := 200 * rate / 1000
	total := len(jitters)*(spurtLen+gap) + rate
	mic := make([]float64, total)
	l, err := echo.NewLine(rate, 0)
	if err != nil {
		t.Fatal(err)
	}
	type placement struct {
		at  int
		pcm []int16
	}
	var placed []placement
	g := math.Pow(10, -12.0/20)
	for i, j := range jitters {
		at := i*(spurtLen+gap) + rate/5
		pcm := audiotest.AtPeakFrame(audiotest.SpeechLike(rate, 3*time.Second, int64(20+i)), rate, audiotest.TTSPeakFrameDBFS)
		placed = append(placed, placement{at, pcm})
		played := at + int(j*rate/time.Second) // where the carrier really played it
		for k, s := range pcm {
			if p := played + delay + k; p < total {
				mic[p] += g * float64(s)
			}
		}
	}
	callerAt := 3*(spurtLen+gap) + rate/5 + 3*rate/2 // 1.5 s into the fourth talkspurt
	caller := audiotest.AtActiveLevel(audiotest.SpeechLike(rate, time.Second, 11), rate, audiotest.QuietCallerDBFS)
	for k, s := range caller {
		mic[callerAt+k] += float64(s)
	}
	noise := audiotest.WhiteNoise(rate, time.Duration(total)*time.Second/rate, -66, 9)
	d, _ := vad.NewEnergy(vad.EnergyConfig{Rate: rate})
	out := make([]int16, frame)
	in := make([]int16, frame)
	heard := -1
	for i := 0; i+frame <= total; i += frame {
		for _, p := range placed { // Handset sends each talkspurt as it goes, a frame at a time
			if i >= p.at && i < p.at+len(p.pcm) {
				l.Played(int64(i), p.pcm[i-p.at:min(len(p.pcm), i-p.at+frame)])
			}
		}
		for k := range in {
			in[k] = g711.DecodeMulawSample(g711.EncodeMulawSample(int16(max(-32768, min(32767, mic[i+k]+float64(noise[i+k]))))))
		}
		res, _ := l.Process(in, out)
		if d.Process(res) != vad.SpeechStart || i < rate {
			continue
		}
		if i+frame < callerAt {
			t.Errorf("the echo set the VAD off at %v", time.Duration(i)*time.Second/rate)
		} else if heard < 0 {
			heard = i + frame - callerAt
		}
	}
	after := time.Duration(heard) * time.Second / rate
	if heard < 0 || after > 500*time.Millisecond {
		t.Errorf("the quiet caller was heard after %v, want within 500ms (path %+v)", after, l.Estimate())
	}
	t.Logf("heard after %v; path %+v", after, l.Estimate())
}
