package fakedeepgram

import (
	"net/url"
	"testing"
)

// FuzzParseParams: any handshake query is refused with an error or gives parameters the
// connection can run with; nothing panics.
func FuzzParseParams(f *testing.F) {
	f.Add("encoding=mulaw&sample_rate=8000&channels=1&interim_results=true&utterance_end_ms=1000")
	f.Add("encoding=linear16&sample_rate=16000&endpointing=false")
	f.Add("encoding=opus")
	f.Fuzz(func(t *testing.T, query string) {
		q, err := url.ParseQuery(query)
		if err != nil {
			return
		}
		p, err := parseParams(q)
		if err != nil {
			return
		}
		switch p.encoding {
		case "mulaw", "alaw", "linear16":
		default:
			t.Fatalf("accepted encoding %q", p.encoding)
		}
		if p.rate < 50 || p.rate > 192000 || p.utteranceEndMS < 0 || (p.utteranceEndMS > 0 && !p.interim) {
			t.Fatalf("accepted unusable parameters %+v from %q", p, query)
		}
		d := newDetector(p, Options{InterimAfter: DefaultInterimAfter, EndSilence: DefaultEndSilence, SpeechLevel: DefaultSpeechLevel})
		d.feed([]byte{1, 2, 3}, nil)
	})
}
