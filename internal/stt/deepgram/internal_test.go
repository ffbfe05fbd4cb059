package deepgram

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/voice"
)

// TestRingMatchesModel drives the ring and a plain slice with the same random operations,
// in a ring smaller than its first buffer and in one that has to grow to its limit.
func TestRingMatchesModel(t *testing.T) {
	for _, size := range []int{37, 3*initialRing + 7} {
		ringMatchesModel(t, size)
	}
}

func ringMatchesModel(t *testing.T, size int) {
	rng := rand.New(rand.NewPCG(1, uint64(size)))
	q := newRing(size)
	var model []byte
	var head int64
	next := byte(0)
	for i := range 5000 {
		switch rng.IntN(4) {
		case 0, 1: // write
			p := make([]byte, rng.IntN(2*size))
			for j := range p {
				p[j] = next
				next++
			}
			dropped := q.write(p)
			model = append(model, p...)
			wantDrop := max(len(model)-size, 0)
			model = model[wantDrop:]
			head += int64(wantDrop)
			if dropped != wantDrop {
				t.Fatalf("op %d: write dropped %d, want %d", i, dropped, wantDrop)
			}
		case 2: // read
			p := make([]byte, rng.IntN(size+5))
			n := q.read(p)
			want := min(len(p), len(model))
			if n != want || !bytes.Equal(p[:n], model[:n]) {
				t.Fatalf("op %d: read %v, want %v", i, p[:n], model[:want])
			}
			model = model[n:]
			head += int64(n)
		case 3: // peek at an offset, then discard to another
			off := head + int64(rng.IntN(size+3)) - 2
			p := make([]byte, rng.IntN(size))
			n := q.copyFrom(off, p)
			skip := int(min(max(off-head, 0), int64(len(model))))
			want := model[skip:][:min(len(p), len(model)-skip)]
			if !bytes.Equal(p[:n], want) {
				t.Fatalf("op %d: copyFrom(%d) = %v, want %v", i, off, p[:n], want)
			}
			to := head + int64(rng.IntN(size/2))
			q.discardTo(to)
			k := int(min(to-head, int64(len(model))))
			model = model[k:]
			head += int64(k)
		}
		if q.len() != len(model) || q.head != head || q.tail() != head+int64(len(model)) {
			t.Fatalf("op %d: ring len %d head %d, model %d %d", i, q.len(), q.head, len(model), head)
		}
	}
}

func TestParseServerMessage(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     serverMessage
		bad      bool
	}{
		{name: "interim", in: `{"type":"Results","channel_index":[0,1],"start":1.5,"duration":0.75,"is_final":false,` +
			`"channel":{"alternatives":[{"transcript":" hi there ","confidence":0.9,"words":[]}]}}`,
			want: serverMessage{Type: "Results", Transcript: "hi there", Start: 1.5, Duration: 0.75}},
		{name: "speech final", in: `{"type":"Results","start":0,"duration":2,"is_final":true,"speech_final":true,"from_finalize":true,` +
			`"channel":{"alternatives":[{"transcript":"done"}]},"metadata":{"request_id":"r"}}`,
			want: serverMessage{Type: "Results", Transcript: "done", Duration: 2, IsFinal: true, SpeechFinal: true, FromFinalize: true}},
		{name: "no alternatives", in: `{"type":"Results","start":0,"duration":1,"is_final":true,"channel":{"alternatives":[]}}`,
			want: serverMessage{Type: "Results", Duration: 1, IsFinal: true}},
		{name: "utterance end", in: `{"type":"UtteranceEnd","channel":[0,1],"last_word_end":3.25}`,
			want: serverMessage{Type: "UtteranceEnd", LastWordEnd: 3.25}},
		{name: "metadata", in: `{"type":"Metadata","request_id":"r","duration":4,"channels":1}`, want: serverMessage{Type: "Metadata"}},
		{name: "unknown type", in: `{"type":"SomethingNew","x":1}`, want: serverMessage{Type: "SomethingNew"}},
		{name: "not json", in: `Results`, bad: true},
		{name: "array", in: `[1,2]`, bad: true},
		{name: "no type", in: `{"start":1}`, bad: true},
		{name: "results without start", in: `{"type":"Results","duration":1,"channel":{"alternatives":[]}}`, bad: true},
		{name: "results without channel", in: `{"type":"Results","start":0,"duration":1}`, bad: true},
		{name: "negative start", in: `{"type":"Results","start":-1,"duration":1,"channel":{}}`, bad: true},
		{name: "absurd duration", in: `{"type":"Results","start":0,"duration":1e300,"channel":{}}`, bad: true},
		{name: "string start", in: `{"type":"Results","start":"0","duration":1,"channel":{}}`, bad: true},
		{name: "transcript not a string", in: `{"type":"Results","start":0,"duration":1,"channel":{"alternatives":[{"transcript":5}]}}`, bad: true},
		{name: "negative last word end", in: `{"type":"UtteranceEnd","last_word_end":-2}`, bad: true},
	} {
		got, err := parseServerMessage([]byte(tc.in))
		if tc.bad {
			if err == nil {
				t.Errorf("%s: parsed %+v, want an error", tc.name, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// FuzzParseServerMessage: any input is either rejected or gives a message whose times are
// usable as replay offsets; nothing panics.
func FuzzParseServerMessage(f *testing.F) {
	f.Add([]byte(`{"type":"Results","start":0,"duration":1,"is_final":true,"channel":{"alternatives":[{"transcript":"x"}]}}`))
	f.Add([]byte(`{"type":"UtteranceEnd","last_word_end":1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseServerMessage(data)
		if err != nil {
			return
		}
		if m.Type == "" {
			t.Fatalf("accepted a message without a type: %q", data)
		}
		if !validTime(m.Start) || !validTime(m.Duration) || !validTime(m.LastWordEnd) {
			t.Fatalf("accepted impossible times %+v from %q", m, data)
		}
		if m.Transcript != strings.TrimSpace(m.Transcript) {
			t.Fatalf("untrimmed transcript %q", m.Transcript)
		}
		// Re-encoding what we read as a Results message parses back to the same thing.
		if m.Type == typeResults {
			again, err := json.Marshal(map[string]any{
				"type": m.Type, "start": m.Start, "duration": m.Duration, "is_final": m.IsFinal,
				"speech_final": m.SpeechFinal, "from_finalize": m.FromFinalize,
				"channel": map[string]any{"alternatives": []any{map[string]any{"transcript": m.Transcript}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			m2, err := parseServerMessage(again)
			if err != nil || m2 != m {
				t.Fatalf("round trip of %+v gave %+v, %v", m, m2, err)
			}
		}
	})
}

func TestNewBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                            "wss://api.deepgram.com/v1/listen",
		"https://api.deepgram.com":    "wss://api.deepgram.com/v1/listen",
		"http://127.0.0.1:9/":         "ws://127.0.0.1:9/v1/listen",
		"https://proxy.example/dg/":   "wss://proxy.example/dg/v1/listen",
		"ws://localhost:8080?x=1#top": "ws://localhost:8080/v1/listen",
	} {
		r, err := New(Options{BaseURL: in})
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if got := r.base.String(); got != want {
			t.Errorf("%q: listen URL %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"ftp://x", "https://", "::"} {
		if _, err := New(Options{BaseURL: bad}); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

func TestVendorError(t *testing.T) {
	for _, tc := range []struct {
		body, header, want string
		status             int
	}{
		{`{"err_code":"INVALID_AUTH","err_msg":"Invalid credentials.","request_id":"r1"}`, "", "INVALID_AUTH: Invalid credentials. (request_id r1)", 401},
		{`{"category":"INSUFFICIENT_PERMISSIONS","message":"Project lacks access."}`, "", "INSUFFICIENT_PERMISSIONS: Project lacks access.", 403},
		{`<html>nope</html>`, "", "<html>nope</html>", 502},
		{``, "Bad sample rate", "Bad sample rate", 400},
		{``, "", "Too Many Requests", 429},
	} {
		resp := &http.Response{StatusCode: tc.status, Header: http.Header{}, Body: http.NoBody}
		if tc.body != "" {
			resp.Body = ioNopCloser(tc.body)
		}
		if tc.header != "" {
			resp.Header.Set("dg-error", tc.header)
		}
		if got := vendorError(resp).Error(); got != tc.want {
			t.Errorf("vendorError(%d %q) = %q, want %q", tc.status, tc.body, got, tc.want)
		}
	}
}

// A huge error answer (a proxy echoing the request) is cut to a few hundred bytes, on a rune.
func TestVendorErrorIsBounded(t *testing.T) {
	huge := strings.Repeat("é", 2000) // Deepgram's answer is read up to 4 KB
	for _, body := range []string{`{"err_code":"X","err_msg":"` + huge + `","request_id":"r1"}`, huge} {
		resp := &http.Response{StatusCode: 400, Header: http.Header{}, Body: ioNopCloser(body)}
		msg := vendorError(resp).Error()
		if len(msg) > 300 || !strings.HasSuffix(msg, "é…") || !utf8.ValidString(msg) {
			t.Errorf("vendorError(%.40s…) is %d bytes: %.80q", body, len(msg), msg)
		}
	}
}

func TestEncodingParam(t *testing.T) {
	for f, want := range map[audio.Format]string{
		audio.Telephone:                      "mulaw",
		{Encoding: audio.Alaw, Rate: 8000}:   "alaw",
		{Encoding: audio.PCM16, Rate: 16000}: "linear16",
		{Encoding: audio.PCM16, Rate: 24000}: "linear16",
		{Encoding: audio.Mulaw, Rate: 16000}: "",
		{Encoding: audio.PCM16, Rate: 0}:     "",
	} {
		got, err := encodingParam(f)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("%v: %q, %v; want %q", f, got, err, want)
		}
	}
}

// Interims give way when Results is full; finals never do while the stream lives.
func TestDeliverPolicy(t *testing.T) {
	s := &LiveStream{results: make(chan voice.Transcript, 2), log: discard()}
	ctx, cancel := testCtx()
	defer cancel()
	s.ctx = ctx
	s.deliver(voice.Transcript{Text: "a"})
	s.deliver(voice.Transcript{Text: "b"})
	s.deliver(voice.Transcript{Text: "c"}) // full: dropped
	if n := s.droppedInterims.Load(); n != 1 {
		t.Fatalf("droppedInterims = %d, want 1", n)
	}
	delivered := make(chan struct{})
	go func() {
		s.deliver(voice.Transcript{Text: "abc", Final: true})
		close(delivered)
	}()
	select {
	case <-delivered:
		t.Fatal("a final was dropped or overtook a full channel")
	case got := <-s.results:
		if got.Text != "a" {
			t.Fatalf("first result %q", got.Text)
		}
	}
	<-delivered
	if got := []voice.Transcript{<-s.results, <-s.results}; got[1] != (voice.Transcript{Text: "abc", Final: true}) {
		t.Fatalf("results %+v, want the final last", got)
	}
}

func ioNopCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func testCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// BenchmarkQueueFrame is a 20 ms mu-law frame through the send queue: written by the call,
// read by the writer (in 60 ms batches), kept for replay.
func BenchmarkQueueFrame(b *testing.B) {
	q, replay := newRing(16000), newRing(80000)
	frame := make([]byte, 160)
	chunk := make([]byte, 800)
	b.ReportAllocs()
	b.SetBytes(160)
	i := 0
	for b.Loop() {
		q.write(frame)
		if i++; i%3 == 0 {
			n := q.read(chunk)
			replay.write(chunk[:n])
			replay.discardTo(replay.tail() - 8000) // a final moves the replay point on
		}
	}
}
