package espeak_test

import (
	"testing"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/tts/espeak"
	"github.com/handset-voice/handset/internal/tts/ttstest"
)

// espeak-ng runs on this machine: it has no credentials to refuse, no address to miss and
// no connection to break, so those cases do not apply (their Peer fields stay empty).
func TestConformance(t *testing.T) {
	testpeer.Program(t, espeak.DefaultBinary, testpeer.Espeak)
	ttstest.Run(t, func(t *testing.T) ttstest.Peer {
		s, err := espeak.New(espeak.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return ttstest.Peer{
			Synthesizer: s,
			Formats: []audio.Format{audio.Telephone, {Encoding: audio.PCM16, Rate: 16000},
				{Encoding: audio.Alaw, Rate: 8000}, {Encoding: audio.PCM16, Rate: 48000}},
			Streams: true,
		}
	})
}
