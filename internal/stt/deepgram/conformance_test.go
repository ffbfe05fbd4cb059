package deepgram_test

import (
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/stt/deepgram"
	"github.com/handset-voice/handset/internal/stt/stttest"
	"github.com/handset-voice/handset/internal/voice"
)

// conformanceWords is what the fake makes of every utterance the suite says.
const conformanceWords = "Hello from the conformance suite."

func TestConformance(t *testing.T) {
	stttest.Run(t, func(t *testing.T) stttest.Peer {
		fake := fakedeepgram.New(fakedeepgram.Options{Key: testKey,
			Transcripts: slices.Repeat([]string{conformanceWords}, 20)})
		ts := httptest.NewServer(fake)
		t.Cleanup(func() {
			ts.Close()
			fake.Close()
		})
		recognizer := func(t *testing.T, key, baseURL string) voice.Recognizer {
			// the suite writes faster than a caller speaks: a queue that holds it all
			r, err := deepgram.New(deepgram.Options{Key: key, BaseURL: baseURL, QueueAudio: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		return stttest.Peer{
			Recognizer:  recognizer(t, testKey, ts.URL),
			Format:      audio.Telephone,
			Utterance:   audiotest.Mulaw(audiotest.SpeechLike(8000, 1500*time.Millisecond, 3)),
			Words:       conformanceWords,
			Partials:    true,
			WrongKey:    func(t *testing.T) voice.Recognizer { return recognizer(t, "revoked-key", ts.URL) },
			Unreachable: func(t *testing.T, root string) voice.Recognizer { return recognizer(t, testKey, root) },
			Drop:        fake.DropAll,
		}
	})
}
