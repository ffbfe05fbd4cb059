package echo

import (
	"math"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g711"
)

// agentVoice is a speech-like agent voice at a cloud TTS's level.
func agentVoice(d time.Duration, seed int64) []int16 {
	return audiotest.AtPeakFrame(audiotest.SpeechLike(8000, d, seed), 8000, audiotest.TTSPeakFrameDBFS)
}

// lineCall plays talkspurts sent at their positions (samples) over an echo path lossDB down
// after delay samples, with the caller from callerAt (none when caller is nil), through μ-law
// as a carrier's line would, into a Line; each frame's result goes to each.
func lineCall(t *testing.T, spurts map[int][]int16, delay int, lossDB float64, caller []int16, callerAt, total int, each func(i int, f Frame, l *Line)) {
	t.Helper()
	mic := make([]float64, total)
	g := math.Pow(10, -lossDB/20)
	for at, a := range spurts {
		for i, v := range a {
			if j := at + delay + i; j < total {
				mic[j] += g * float64(v)
			}
		}
	}
	for i, v := range caller {
		if callerAt+i < total {
			mic[callerAt+i] += float64(v)
		}
	}
	l, err := NewLine(8000, 0)
	if err != nil {
		t.Fatal(err)
	}
	in, out := make([]int16, 160), make([]int16, 160)
	for i := 0; i+160 <= total; i += 160 {
		for at, a := range spurts {
			if off := i - at; off >= 0 && off < len(a) {
				l.Played(int64(i), a[off:min(off+160, len(a))])
			}
		}
		for j := range in {
			in[j] = g711.DecodeMulawSample(g711.EncodeMulawSample(int16(max(-32768, min(32767, mic[i+j])))))
		}
		_, f := l.Process(in, out)
		each(i, f, l)
	}
}

// TestCancellerFindsTheEchoToTheSample: over a linear echo 12 dB down after 201.6 ms (not a
// whole 5 ms block), the canceller aligns to the very sample, learns to leave the echo more
// than 25 dB further down in the voice's bands, and takes over every frame of agent audio
// once it has: nothing above -50 dBFS reaches the VAD.
func TestCancellerFindsTheEchoToTheSample(t *testing.T) {
	const delay = 1613
	agent := agentVoice(8*time.Second, 3)
	used, frames, worst := 0, 0, math.Inf(-1)
	var l *Line
	lineCall(t, map[int][]int16{0: agent}, delay, 12, nil, 0, len(agent)+delay, func(i int, f Frame, line *Line) {
		l = line
		if i < 3*8000 || f.LevelDB < -50 {
			return
		}
		frames++
		if line.sup.cancelled {
			used++
		}
		worst = max(worst, f.ResidualDB)
	})
	c := &l.sup.can
	if c.delay != delay {
		t.Errorf("aligned at %d samples, want %d", c.delay, delay)
	}
	for b, r := range c.residual[:3] {
		if r > -25 {
			t.Errorf("band %d: the canceller leaves %.1f dB of the reference, want under -25 (bands %.1f)", b, r, c.residual)
		}
	}
	if used < frames*9/10 {
		t.Errorf("the canceller took %d of %d frames of agent audio after 3 s, want nearly all", used, frames)
	}
	if worst > -50 {
		t.Errorf("echo reached the VAD at %.1f dBFS, want under -50", worst)
	}
}

// TestCancellerLeavesTheCaller: a quiet caller (-34 dBFS) talking over the agent's speech-like
// voice returned 12 dB down (16 dB and more louder than the caller) reaches the VAD near
// their own level: within 3 dB on average over their first half second, at most three frames
// more than 6 dB off (the onset and soft frames, where suppression alone left nothing
// audible and its output is passed on). With suppression alone they were 5.9 dB off on
// average and seven frames more than 6 dB off (up to 13.5 dB).
func TestCancellerLeavesTheCaller(t *testing.T) {
	const delay = 1600
	spurts := map[int][]int16{1600: agentVoice(2*time.Second, 1), 32000: agentVoice(2*time.Second, 2), 48400: agentVoice(3*time.Second, 3)}
	caller := audiotest.AtActiveLevel(audiotest.SpeechLike(8000, 1500*time.Millisecond, 11), 8000, audiotest.QuietCallerDBFS)
	callerAt := 48400 + delay + 2400 // 300 ms into the last sentence
	var diffs []float64
	lineCall(t, spurts, delay, 12, caller, callerAt, 48400+4*8000, func(i int, f Frame, _ *Line) {
		// The output lags the input by a frame: compare it with the caller's frame before.
		j := i - callerAt - 160
		if j < 0 || j+160 > 4000 {
			return
		}
		if c := audiotest.RMSDBFS(caller[j : j+160]); c > -45 {
			diffs = append(diffs, f.ResidualDB-c)
		}
	})
	if len(diffs) < 5 {
		t.Fatalf("only %d frames of the caller's first half second were audible", len(diffs))
	}
	var sum float64
	lost := 0
	for _, d := range diffs {
		sum += math.Abs(d)
		if math.Abs(d) > 6 {
			lost++
		}
	}
	if mean := sum / float64(len(diffs)); mean > 3 || lost > 3 {
		t.Errorf("the caller's frames reached the VAD %.1f dB off their level on average, %d of them more than 6 dB off; want within 3 dB and at most 3 (all: %.1f)", mean, lost, diffs)
	}
}
