package elevenlabs_test

import (
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/tts/elevenlabs"
	"github.com/handset-voice/handset/internal/tts/ttstest"
	"github.com/handset-voice/handset/internal/voice"
)

func TestConformance(t *testing.T) {
	ttstest.Run(t, func(t *testing.T) ttstest.Peer {
		// a pause between chunks, so a long text streams for a while as the real service's does
		const key = "conformance-key"
		ts := serve(t, fakeelevenlabs.New(fakeelevenlabs.Options{Key: key, ChunkEvery: time.Millisecond}))
		synthesizer := func(key, root string) voice.Synthesizer {
			// a stalled answer must time out within the suite's patience
			return elevenlabs.New(elevenlabs.Options{Key: key, BaseURL: root, HTTPClient: ts.Client(),
				HeaderTimeout: time.Second})
		}
		return ttstest.Peer{
			Synthesizer: synthesizer(key, ts.URL),
			Formats: []audio.Format{audio.Telephone, {Encoding: audio.PCM16, Rate: 16000},
				{Encoding: audio.Alaw, Rate: 8000}, {Encoding: audio.PCM16, Rate: 44100}},
			Streams:         true,
			WrongKey:        func(*testing.T) voice.Synthesizer { return synthesizer("revoked-key", ts.URL) },
			Unreachable:     func(_ *testing.T, root string) voice.Synthesizer { return synthesizer(key, root) },
			ServerErrorText: "Say this. " + fakeelevenlabs.FailText,
			StallText:       "Say this. " + fakeelevenlabs.StallText,
			CutText:         "A longer sentence that breaks off halfway. " + fakeelevenlabs.CutText,
		}
	})
}
