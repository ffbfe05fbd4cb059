package vadtest

import (
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/vad"
)

// EndLag runs the first utterance of SpeechTrack and then two seconds of silence through d
// (made for 16 kHz), in 20 ms frames: how long after the utterance's last labelled frame d
// said SpeechEnd. ok is false when d did not say SpeechStart and then SpeechEnd.
func EndLag(t testing.TB, d vad.Detector) (lag time.Duration, ok bool) {
	t.Helper()
	tr := SpeechTrack(t)
	frame := tr.Rate / int(time.Second/FrameDuration)
	end := tr.Utterances[0].End * frame
	pcm := append(tr.PCM[:end:end], make([]int16, 2*tr.Rate)...)
	started := false
	for pos := 0; pos+frame <= len(pcm); pos += frame {
		switch d.Process(pcm[pos : pos+frame]) {
		case vad.SpeechStart:
			started = true
		case vad.SpeechEnd:
			if started && pos+frame > end {
				return time.Duration(pos+frame-end) * time.Second / time.Duration(tr.Rate), true
			}
		}
	}
	return 0, false
}

// CheckEndSetting fails t unless detectors at 16 kHz from newDetector, given the silence
// that ends speech (HANDSET_VAD_END), take it: 300 ms and 900 ms must end the same
// utterance about 600 ms apart. It is how a test sees that a VAD built from settings reads
// that one.
func CheckEndSetting(t testing.TB, newDetector func(end time.Duration) vad.Detector) {
	t.Helper()
	lag := func(end time.Duration) time.Duration {
		t.Helper()
		l, ok := EndLag(t, newDetector(end))
		if !ok {
			t.Fatalf("ending speech after %v: the detector did not hear the utterance start and end", end)
		}
		return l
	}
	short, long := lag(300*time.Millisecond), lag(900*time.Millisecond)
	if diff := long - short; diff < 500*time.Millisecond || diff > 700*time.Millisecond {
		t.Errorf("speech ended %v after the utterance with 300ms and %v with 900ms: want 600ms between them", short, long)
	}
}
