//go:build embedded

package sphinx_test

import (
	"testing"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/transcode"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/stt/sphinx"
	"github.com/handset-voice/handset/internal/stt/stttest"
	"github.com/handset-voice/handset/internal/testpeer"
)

// The engine runs on this machine: it has no credentials to refuse, no address to miss
// and no connection to drop, so those cases do not apply (their Peer fields stay nil).
func TestConformance(t *testing.T) {
	testpeer.Slow(t, "loads a PocketSphinx decoder for every case")
	if err := sphinx.CheckModel(sphinx.DefaultModelDir); err != nil {
		testpeer.Missing(t, testpeer.SphinxEnUS, err)
	}
	wide := audio.Format{Encoding: audio.PCM16, Rate: vadtest.SpeechRate}
	enc, err := transcode.New(vadtest.SpeechRate, wide)
	if err != nil {
		t.Fatal(err)
	}
	// a card name read by a person ("…queen of clubs"): recorded speech at its own level
	var utterance []byte
	for _, rec := range vadtest.Recordings(t) {
		if rec.Name == "cards/001.wav" {
			utterance = append(utterance, enc.Encode(rec.PCM)...)
		}
	}
	stttest.Run(t, func(t *testing.T) stttest.Peer {
		r, err := sphinx.New(sphinx.Options{Decoders: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return stttest.Peer{
			Recognizer: r,
			Format:     wide,
			Utterance:  utterance,
			Partials:   true,
			// Words stays empty: a demo-grade model's exact words cannot be promised
		}
	})
}
