//go:build embedded

package flite_test

import (
	"testing"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/tts/flite"
	"github.com/handset-voice/handset/internal/tts/ttstest"
)

// flite runs in this process: it has no credentials to refuse, no address to miss and no
// connection to break, so those cases do not apply (their Peer fields stay empty).
func TestConformance(t *testing.T) {
	ttstest.Run(t, func(t *testing.T) ttstest.Peer {
		s, err := flite.New(flite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return ttstest.Peer{
			Synthesizer: s,
			// rates above 8 kHz, which one voice speaks (8 kHz has a voice of its own)
			Formats: []audio.Format{{Encoding: audio.PCM16, Rate: 16000}, {Encoding: audio.PCM16, Rate: 24000},
				{Encoding: audio.Alaw, Rate: 48000}},
			Streams: true,
		}
	})
}
