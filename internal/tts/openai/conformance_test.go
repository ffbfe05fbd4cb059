package openai_test

import (
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/fakeopenaispeech"
	"github.com/handset-voice/handset/internal/tts/openai"
	"github.com/handset-voice/handset/internal/tts/ttstest"
	"github.com/handset-voice/handset/internal/voice"
)

func TestConformance(t *testing.T) {
	ttstest.Run(t, func(t *testing.T) ttstest.Peer {
		// short pauses between chunks: a long text streams for a while, not for minutes; a
		// tone, which the fake makes much faster than its speech-like sound
		fake, err := fakeopenaispeech.Start(fakeopenaispeech.Options{Key: testKey, ChunkEvery: time.Millisecond, ToneHz: 440,
			ChunkBytes: fakeopenaispeech.PCM.Bytes(500 * time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(fake.Close)
		synthesizer := func(t *testing.T, key, base string) voice.Synthesizer {
			// a stalled answer must time out within the suite's patience
			s, err := openai.New(openai.Options{Key: key, BaseURL: base, HTTPClient: fake.Client(), HeaderTimeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		return ttstest.Peer{
			Synthesizer: synthesizer(t, testKey, fake.URL()),
			Formats: []audio.Format{audio.Telephone, {Encoding: audio.PCM16, Rate: 16000},
				{Encoding: audio.PCM16, Rate: openai.PCMRate}, {Encoding: audio.Alaw, Rate: 48000}},
			Streams:  true,
			WrongKey: func(t *testing.T) voice.Synthesizer { return synthesizer(t, "sk-revoked-key-0000", fake.URL()) },
			Unreachable: func(t *testing.T, root string) voice.Synthesizer {
				return synthesizer(t, testKey, root+"/v1")
			},
			ServerErrorText: "Say this. " + fakeopenaispeech.MagicFail500,
			StallText:       "Say this. " + fakeopenaispeech.MagicHang,
			CutText:         "A longer sentence that breaks off halfway. " + fakeopenaispeech.MagicCutoff,
		}
	})
}
