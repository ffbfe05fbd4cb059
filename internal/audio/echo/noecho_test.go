package echo_test

import (
	"slices"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/echo"
)

// TestLineThatStartsToEcho: on a line that returns no echo (only a -70 dBFS noise floor),
// once the path is learned the caller's audio passes through untouched, sample for sample;
// when the line starts to echo (a 12 dB path after 120 ms: a caller switching to a
// speakerphone), the envelopes show it and the suppressor takes the echo again.
func TestLineThatStartsToEcho(t *testing.T) {
	const frame, echoFrom = rate / 50, 6 * rate
	agent := audiotest.AtPeakFrame(audiotest.SpeechLike(rate, 14*time.Second, 3), rate, audiotest.TTSPeakFrameDBFS)
	mic := audiotest.WhiteNoise(rate, 14*time.Second, -70, 5)
	delay := rate * 120 / 1000
	loud := audiotest.Gain(agent, -12)
	for i := echoFrom; i < len(mic); i++ {
		mic[i] = max(-32768, min(32767, mic[i]+loud[i-delay]))
	}
	l, err := echo.NewLine(rate, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int16, frame)
	untouched, learnedAt, suppressedAt := 0, -1, -1
	for i := 0; i+frame <= len(agent); i += frame {
		l.Played(int64(i), agent[i:i+frame])
		in := mic[i : i+frame]
		res, f := l.Process(in, out)
		if i < echoFrom {
			if e := l.Estimate(); e.Learned && learnedAt < 0 {
				learnedAt = i
			}
			if learnedAt >= 0 && i > learnedAt+rate {
				if !slices.Equal(res, in) {
					t.Fatalf("at %v a line with no echo changed the audio (%+v, path %+v)",
						time.Duration(i)*time.Second/rate, f, l.Estimate())
				}
				untouched++
			}
			continue
		}
		if f.Suppressed && suppressedAt < 0 {
			suppressedAt = i
		}
	}
	if learnedAt < 0 || untouched == 0 {
		t.Fatalf("the path was never learned before the echo began (learned at %d)", learnedAt)
	}
	if suppressedAt < 0 {
		t.Fatalf("the echo that began at %v was never suppressed (path %+v)",
			time.Duration(echoFrom)*time.Second/rate, l.Estimate())
	}
	took := time.Duration(suppressedAt-echoFrom) * time.Second / rate
	t.Logf("%d frames passed untouched; the echo was suppressed %v after it began (path %+v)", untouched, took, l.Estimate())
	if took > 4*time.Second {
		t.Errorf("the echo took %v to be suppressed, want under 4s", took)
	}
}

// BenchmarkProcess20msNoEcho is the per-frame cost on a line that returns no echo, once
// learned: the envelopes and the delay search, without the suppressor's transforms.
func BenchmarkProcess20msNoEcho(b *testing.B) {
	l, agent, mic, out, pos := learnedOver(func([]int16) []int16 {
		return audiotest.WhiteNoise(rate, 4*time.Second, -70, 5)
	})
	benchSpeaking(b, l, agent, mic, out, pos)
}
