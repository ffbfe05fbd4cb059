package openai_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/sim/fakeopenaispeech"
	"github.com/handset-voice/handset/internal/stt/openai"
	"github.com/handset-voice/handset/internal/stt/stttest"
	"github.com/handset-voice/handset/internal/voice"
)

// conformanceWords is what the fake answers for every utterance the suite says.
const conformanceWords = "Hello from the conformance suite."

func TestConformance(t *testing.T) {
	wide := audio.Format{Encoding: audio.PCM16, Rate: 16000}
	stttest.Run(t, func(t *testing.T) stttest.Peer {
		fake := fakeopenaispeech.New(fakeopenaispeech.Options{Key: testKey,
			Transcripts: slices.Repeat([]string{conformanceWords}, 20)})
		// dropNext ends the next transcription request without an answer, as a dying
		// network path does; the fake itself always answers
		var dropNext atomic.Bool
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if dropNext.CompareAndSwap(true, false) {
				panic(http.ErrAbortHandler)
			}
			fake.ServeHTTP(w, r)
		}))
		t.Cleanup(func() {
			fake.Close()
			ts.Close()
		})
		recognizer := func(t *testing.T, key, root string) voice.Recognizer {
			r, err := openai.New(openai.Options{Key: key, BaseURL: root + "/v1", HTTPClient: ts.Client()})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		return stttest.Peer{
			Recognizer:  recognizer(t, testKey, ts.URL),
			Format:      wide,
			Utterance:   speech(wide, 1500*time.Millisecond),
			Words:       conformanceWords,
			Partials:    false, // whole utterances are uploaded after Finalize
			WrongKey:    func(t *testing.T) voice.Recognizer { return recognizer(t, "sk-revoked-key-0000", ts.URL) },
			Unreachable: func(t *testing.T, root string) voice.Recognizer { return recognizer(t, testKey, root) },
			Drop:        func() { dropNext.Store(true) },
		}
	})
}
