package vad

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
)

const frameDur = 20 * time.Millisecond

// speechTrack is about total of speech-like utterances (0.8-3 s) separated by pauses
// (0.5-2 s), starting with a pause, with the truth for each 20 ms frame.
func speechTrack(rate int, total time.Duration, seed int64) ([]int16, []bool) {
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	frames := func(lo, hi int) int { return lo + rng.IntN(hi-lo+1) } // in 20 ms frames
	var pcm []int16
	var truth []bool
	for i := 0; time.Duration(len(truth))*frameDur < total; i++ {
		gap := frames(25, 100)
		if i == 0 {
			gap = 50
		}
		utt := frames(40, 150)
		pcm = append(pcm, audiotest.Silence(rate, time.Duration(gap)*frameDur)...)
		pcm = append(pcm, audiotest.SpeechLike(rate, time.Duration(utt)*frameDur, seed*1000+int64(i))...)
		for range gap {
			truth = append(truth, false)
		}
		for range utt {
			truth = append(truth, true)
		}
	}
	return pcm, truth
}

type score struct{ tp, fp, fn int }

func (s *score) add(got, want bool) {
	switch {
	case got && want:
		s.tp++
	case got:
		s.fp++
	case want:
		s.fn++
	}
}

func (s score) precision() float64 { return float64(s.tp) / float64(max(1, s.tp+s.fp)) }
func (s score) recall() float64    { return float64(s.tp) / float64(max(1, s.tp+s.fn)) }
func (s score) f1() float64 {
	p, r := s.precision(), s.recall()
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

func (s score) String() string {
	return fmt.Sprintf("precision %.3f recall %.3f F1 %.3f", s.precision(), s.recall(), s.f1())
}

// accuracy runs e over pcm in 20 ms frames and scores three views against truth:
//   - frame: the per-frame level decision before any smoothing;
//   - state: InSpeech after each frame, as the call engine sees it live (late by
//     StartAfter at the start and by EndAfter at the end, by design);
//   - segment: the speech segments the events describe once each edge is moved back by
//     its known delay (StartAfter, EndAfter), which is the audio the engine recovers from
//     its inbound ring and hands to STT.
func accuracy(e *Energy, pcm []int16, truth []bool) (frame, state, segment score) {
	n := e.SampleRate() / 50
	cfg := e.Config()
	startLag, endLag := int(cfg.StartAfter/frameDur), int(cfg.EndAfter/frameDur)
	seg := make([]bool, len(truth))
	open := -1
	for i := range truth {
		ev := e.Process(pcm[i*n : (i+1)*n])
		l := e.LevelDBFS()
		frame.add(l >= cfg.MinLevelDBFS && l > e.NoiseFloorDBFS()+cfg.ThresholdDB, truth[i])
		state.add(e.InSpeech(), truth[i])
		switch ev {
		case SpeechStart:
			open = max(0, i-startLag+1)
		case SpeechEnd:
			for j := open; j <= i-endLag; j++ {
				seg[j] = true
			}
			open = -1
		}
	}
	for j := open; open >= 0 && j < len(seg); j++ {
		seg[j] = true
	}
	for i := range truth {
		segment.add(seg[i], truth[i])
	}
	return frame, state, segment
}

func TestAccuracyOnSpeechLikeTrack(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		clean, truth := speechTrack(rate, 90*time.Second, 11)
		for _, snr := range []float64{0, 20, 10} { // 0 means clean
			pcm := clean
			name := "clean"
			if snr != 0 {
				noise := audiotest.WhiteNoise(rate, time.Duration(len(clean))*time.Second/time.Duration(rate),
					audiotest.SpeechLevelDBFS-snr, 12)
				pcm = audiotest.Mix(clean, noise)
				name = fmt.Sprintf("SNR %.0f dB", snr)
			}
			e := newEnergy(t, EnergyConfig{Rate: rate})
			frame, state, segment := accuracy(e, pcm, truth)
			t.Logf("%5d Hz %-9s frame: %v | state: %v | segment: %v", rate, name, frame, state, segment)
			if snr == 0 && segment.f1() < 0.9 {
				t.Errorf("%d Hz clean: segment F1 %.3f, want >= 0.9", rate, segment.f1())
			}
			if segment.precision() < 0.95 {
				t.Errorf("%d Hz %s: segment precision %.3f, want >= 0.95 (noise taken for speech)", rate, name, segment.precision())
			}
		}
	}
}
