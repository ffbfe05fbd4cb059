package vadtest

import (
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/vad"
)

// EndLag runs the first utterance of SpeechTrack and then two seconds of silence through d
// (made for 16 kHz), in 20 ms frames: how long after the utterance's last labelled frame d
// said SpeechEnd. It is how a test sees a detector's end-of-speech setting at work. ok is
// false when d did not say SpeechStart and then SpeechEnd.
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
