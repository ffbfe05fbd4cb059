package fakeelevenlabs

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// post sends one request straight to the handler and returns the recorded answer.
func post(t *testing.T, s *Server, path, key, body string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set("xi-api-key", key)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

func textBody(text string) string {
	b, _ := json.Marshal(map[string]any{"text": text, "model_id": "eleven_flash_v2_5"})
	return string(b)
}

const streamULaw = "/v1/text-to-speech/voice1/stream?output_format=ulaw_8000"

// detail decodes an ElevenLabs error body.
func detail(t *testing.T, w *httptest.ResponseRecorder) (status, msg string) {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", w.Body.String(), err)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	return e.Detail.Status, e.Detail.Message
}

func TestAuth(t *testing.T) {
	cases := []struct {
		name      string
		serverKey string
		sent      string
		want      int
	}{
		{"no key configured", "", "", http.StatusOK},
		{"no key configured, one sent", "", "anything", http.StatusOK},
		{"missing", "sekret", "", http.StatusUnauthorized},
		{"wrong", "sekret", "guess", http.StatusUnauthorized},
		{"right", "sekret", "sekret", http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Options{Key: c.serverKey})
			w := post(t, s, streamULaw, c.sent, textBody("hello"))
			if w.Code != c.want {
				t.Fatalf("status = %d, want %d (body %q)", w.Code, c.want, w.Body.String())
			}
			if c.want == http.StatusUnauthorized {
				status, msg := detail(t, w)
				if status != "invalid_api_key" || msg != "Invalid API key" {
					t.Errorf("detail = %q %q, want invalid_api_key \"Invalid API key\"", status, msg)
				}
			}
			reqs := s.Requests()
			if len(reqs) != 1 || reqs[0].KeyPresent != (c.sent != "") || reqs[0].Status != c.want {
				t.Errorf("recorded %+v, want one request with KeyPresent=%v Status=%d", reqs, c.sent != "", c.want)
			}
		})
	}
}

func TestVoices(t *testing.T) {
	s := New(Options{Voices: []string{"known"}})
	w := post(t, s, "/v1/text-to-speech/stranger/stream?output_format=ulaw_8000", "", textBody("hi"))
	if w.Code != http.StatusNotFound {
		t.Fatalf("unknown voice: status = %d, want 404", w.Code)
	}
	if status, msg := detail(t, w); status != "voice_not_found" || !strings.Contains(msg, "stranger") {
		t.Errorf("detail = %q %q, want voice_not_found naming the voice", status, msg)
	}
	if w := post(t, s, "/v1/text-to-speech/known/stream?output_format=ulaw_8000", "", textBody("hi")); w.Code != http.StatusOK {
		t.Errorf("known voice: status = %d, want 200", w.Code)
	}
}

func TestOutputFormats(t *testing.T) {
	const text = "The quick brown fox."
	for name, f := range outputFormats {
		t.Run(name, func(t *testing.T) {
			s := New(Options{})
			w := post(t, s, "/v1/text-to-speech/v/stream?output_format="+name, "", textBody(text))
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200 (%s)", w.Code, w.Body.String())
			}
			wantLen := f.Bytes(time.Duration(len(text)) * DefaultMsPerChar * time.Millisecond)
			if w.Body.Len() != wantLen || s.AudioBytes(text, f) != wantLen {
				t.Errorf("got %d bytes, AudioBytes = %d, want %d", w.Body.Len(), s.AudioBytes(text, f), wantLen)
			}
			if got, want := w.Header().Get("Content-Type"), contentTypes[f.Encoding]; got != want {
				t.Errorf("Content-Type = %q, want %q", got, want)
			}
			if got := s.Requests()[0].Format; got != name {
				t.Errorf("recorded format %q, want %q", got, name)
			}
		})
	}
	for _, bad := range []string{"", "mp3_44100_128", "opus_48000_64", "wav", "pcm_11025", "ULAW_8000"} {
		t.Run("bad "+bad, func(t *testing.T) {
			w := post(t, New(Options{}), "/v1/text-to-speech/v/stream?output_format="+bad, "", textBody(text))
			if w.Code != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400", w.Code)
			}
			status, msg := detail(t, w)
			if status != "invalid_output_format" || msg == "" {
				t.Errorf("detail = %q %q, want invalid_output_format with a message", status, msg)
			}
			if bad != "" && !strings.Contains(msg, bad) {
				t.Errorf("message %q does not name %q", msg, bad)
			}
		})
	}
}

func TestBadBody(t *testing.T) {
	for _, c := range []struct{ name, body, status string }{
		{"empty text", textBody(""), "invalid_text"},
		{"blank text", textBody(" \n "), "invalid_text"},
		{"no text", `{"model_id":"m"}`, "invalid_text"},
		{"not json", `text=hello`, "invalid_request"},
		{"text not a string", `{"text":5}`, "invalid_request"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := post(t, New(Options{}), streamULaw, "", c.body)
			if w.Code != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400", w.Code)
			}
			if status, _ := detail(t, w); status != c.status {
				t.Errorf("detail.status = %q, want %q", status, c.status)
			}
		})
	}
}

func TestMagicFailures(t *testing.T) {
	s := New(Options{})
	codes := func(text string, n int) []int {
		var got []int
		for range n {
			w := post(t, s, streamULaw, "", textBody(text))
			if w.Code == http.StatusInternalServerError {
				if status, _ := detail(t, w); status != "internal_error" {
					t.Errorf("500 detail.status = %q, want internal_error", status)
				}
			}
			got = append(got, w.Code)
		}
		return got
	}
	if diff := cmp.Diff([]int{500, 500, 500}, codes("Say TTSFAIL please", 3)); diff != "" {
		t.Errorf("TTSFAIL codes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{500, 200, 200}, codes("TTSFAILONCE hello", 3)); diff != "" {
		t.Errorf("TTSFAILONCE codes (-want +got):\n%s", diff)
	}
	// Another text gets its own first failure.
	if diff := cmp.Diff([]int{500, 200}, codes("TTSFAILONCE goodbye", 2)); diff != "" {
		t.Errorf("second TTSFAILONCE text codes (-want +got):\n%s", diff)
	}
}

func TestRecordsRequest(t *testing.T) {
	s := New(Options{})
	body := `{"text":"Hello there.","model_id":"eleven_turbo_v2_5","previous_text":"Hi.","next_text":"Bye.","voice_settings":{"stability":0.5}}`
	post(t, s, "/v1/text-to-speech/abc/stream?output_format=pcm_16000", "k", body)
	post(t, s, "/v1/text-to-speech/abc?output_format=alaw_8000", "", textBody("Whole."))
	want := []Request{
		{Voice: "abc", Model: "eleven_turbo_v2_5", Format: "pcm_16000", Text: "Hello there.",
			PreviousText: "Hi.", NextText: "Bye.", KeyPresent: true, Stream: true, Status: 200},
		{Voice: "abc", Model: "eleven_flash_v2_5", Format: "alaw_8000", Text: "Whole.", Status: 200},
	}
	if diff := cmp.Diff(want, s.Requests()); diff != "" {
		t.Errorf("Requests() (-want +got):\n%s", diff)
	}
}

func TestWrongMethod(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, streamULaw, nil)
	w := httptest.NewRecorder()
	New(Options{}).ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET status = %d, want 405", w.Code)
	}
}

func TestWholeFileEndpoint(t *testing.T) {
	s := New(Options{ChunkEvery: time.Hour}) // pauses apply to streaming only
	const text = "Not streamed at all."
	w := post(t, s, "/v1/text-to-speech/v?output_format=pcm_24000", "", textBody(text))
	f := audio.Format{Encoding: audio.PCM16, Rate: 24000}
	want := s.AudioBytes(text, f)
	if w.Code != 200 || w.Body.Len() != want || w.Header().Get("Content-Length") != fmt.Sprint(want) {
		t.Errorf("status %d, %d bytes, Content-Length %q; want 200 and %d", w.Code, w.Body.Len(), w.Header().Get("Content-Length"), want)
	}
}

// decode turns audio bytes back into samples.
func decode(t *testing.T, f audio.Format, b []byte) []int16 {
	t.Helper()
	switch f.Encoding {
	case audio.Mulaw:
		return g711.DecodeMulaw(make([]int16, len(b)), b)
	case audio.Alaw:
		return g711.DecodeAlaw(make([]int16, len(b)), b)
	}
	if len(b)%2 != 0 {
		t.Fatalf("odd PCM16 length %d", len(b))
	}
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out
}

// bursts splits samples into 10 ms windows and returns the runs of loud windows as
// [start, end) window indexes, plus the RMS (dBFS) of the loudest window.
func bursts(pcm []int16, rate int) (runs [][2]int, loudest float64) {
	win := rate / 100
	loudest = math.Inf(-1)
	start := -1
	n := len(pcm) / win
	for i := range n {
		var sum float64
		for _, v := range pcm[i*win : (i+1)*win] {
			sum += float64(v) * float64(v)
		}
		db := 20 * math.Log10(math.Sqrt(sum/float64(win))/32768+1e-12)
		loudest = max(loudest, db)
		loud := db > -40
		switch {
		case loud && start < 0:
			start = i
		case !loud && start >= 0:
			runs = append(runs, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		runs = append(runs, [2]int{start, n})
	}
	return runs, loudest
}

func TestAudioSoundsLikeWords(t *testing.T) {
	const text = "one two three four five six seven eight nine"
	for _, name := range []string{"ulaw_8000", "alaw_8000", "pcm_16000", "pcm_44100"} {
		t.Run(name, func(t *testing.T) {
			f := outputFormats[name]
			s := New(Options{})
			w := post(t, s, "/v1/text-to-speech/v/stream?output_format="+name, "", textBody(text))
			pcm := decode(t, f, w.Body.Bytes())
			if got, want := f.Duration(w.Body.Len()), time.Duration(len(text))*55*time.Millisecond; got != want {
				t.Errorf("duration = %v, want %v", got, want)
			}
			runs, loudest := bursts(pcm, f.Rate)
			if len(runs) != 9 {
				t.Errorf("heard %d bursts of sound (%v), want one per word (9)", len(runs), runs)
			}
			// A sine peaking at -3 dBFS has an RMS of about -6 dBFS: a cloud TTS voice's level.
			if loudest < -7 || loudest > -5 {
				t.Errorf("loudest 10 ms RMS = %.1f dBFS, want about -6", loudest)
			}
			if len(runs) > 0 && runs[0][0] != 0 {
				t.Errorf("speech starts at window %d, want immediately", runs[0][0])
			}
			if len(runs) > 0 && runs[len(runs)-1][1] == len(pcm)/(f.Rate/100) {
				t.Errorf("audio ends mid-word, want a trailing gap")
			}
			if again := post(t, s, "/v1/text-to-speech/v/stream?output_format="+name, "", textBody(text)); !bytes.Equal(again.Body.Bytes(), w.Body.Bytes()) {
				t.Errorf("the same text gave different audio")
			}
		})
	}
}

func TestDurationOptions(t *testing.T) {
	cases := []struct {
		msPerChar int
		text      string
		want      time.Duration
	}{
		{0, "Hi", MinDuration},
		{0, "Hello world", 11 * 55 * time.Millisecond},
		{10, strings.Repeat("a", 100), time.Second},
		{10, "short", MinDuration},
		{0, "héllo wörld", 11 * 55 * time.Millisecond}, // characters, not bytes
	}
	for _, c := range cases {
		s := New(Options{MsPerChar: c.msPerChar})
		if got := s.AudioDuration(c.text); got != c.want {
			t.Errorf("MsPerChar %d, %q: AudioDuration = %v, want %v", c.msPerChar, c.text, got, c.want)
		}
		w := post(t, s, streamULaw, "", textBody(c.text))
		if got := audio.Telephone.Duration(w.Body.Len()); got != c.want {
			t.Errorf("MsPerChar %d, %q: served %v of audio, want %v", c.msPerChar, c.text, got, c.want)
		}
	}
}

// chunkWriter is a streaming ResponseWriter that remembers the size of every write.
type chunkWriter struct {
	header  http.Header
	status  int
	writes  []int
	flushes int
	first   chan struct{} // closed on the first write
}

func newChunkWriter() *chunkWriter {
	return &chunkWriter{header: http.Header{}, first: make(chan struct{})}
}

func (w *chunkWriter) Header() http.Header { return w.header }
func (w *chunkWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *chunkWriter) Flush() { w.flushes++ }
func (w *chunkWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if len(w.writes) == 0 {
		close(w.first)
	}
	w.writes = append(w.writes, len(p))
	return len(p), nil
}

func TestStreamChunks(t *testing.T) {
	cases := []struct {
		name       string
		format     string
		chunkBytes int
		text       string // 20 characters = 1.1 s at 55 ms
		want       []int
	}{
		{"default 100 ms ulaw", "ulaw_8000", 0, "twenty characters!!!", repeat(800, 11)},
		{"default 100 ms pcm16k", "pcm_16000", 0, "twenty characters!!!", repeat(3200, 11)},
		{"500 bytes ulaw", "ulaw_8000", 500, "twenty characters!!!", append(repeat(500, 17), 300)},
		{"odd size rounds to samples", "pcm_8000", 1001, "twenty characters!!!", append(repeat(1000, 17), 600)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Options{ChunkBytes: c.chunkBytes})
			w := newChunkWriter()
			r := httptest.NewRequest(http.MethodPost, "/v1/text-to-speech/v/stream?output_format="+c.format, strings.NewReader(textBody(c.text)))
			s.ServeHTTP(w, r)
			if diff := cmp.Diff(c.want, w.writes); diff != "" {
				t.Errorf("write sizes (-want +got):\n%s", diff)
			}
			if w.flushes != len(w.writes) {
				t.Errorf("%d flushes for %d writes, want one each", w.flushes, len(w.writes))
			}
		})
	}
}

func repeat(n, times int) []int {
	out := make([]int, times)
	for i := range out {
		out[i] = n
	}
	return out
}

// serveUntilCancel runs one streaming request, cancels it once ready is closed (or at once
// when ready is nil) and fails the test if the handler does not return.
func serveUntilCancel(t *testing.T, s *Server, w *chunkWriter, ready <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, streamULaw, strings.NewReader(textBody("a fairly long sentence to speak")))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeHTTP(w, r)
	}()
	if ready != nil {
		<-ready
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("handler still running 10 s after the client went away")
	}
}

func TestStreamStopsWhenClientGoes(t *testing.T) {
	s := New(Options{ChunkEvery: time.Hour})
	w := newChunkWriter()
	serveUntilCancel(t, s, w, w.first)
	if len(w.writes) != 1 {
		t.Errorf("%d writes, want 1 (the handler should stop in the pause after the first chunk)", len(w.writes))
	}
}

func TestFirstByteDelayStopsWhenClientGoes(t *testing.T) {
	s := New(Options{FirstByteDelay: time.Hour})
	w := newChunkWriter()
	serveUntilCancel(t, s, w, nil)
	if len(w.writes) != 0 || w.status != 0 {
		t.Errorf("status %d and %d writes, want nothing written", w.status, len(w.writes))
	}
}

func TestConcurrentOverHTTP(t *testing.T) {
	s := New(Options{Key: "k", ChunkBytes: 160})
	srv := httptest.NewServer(s)
	defer srv.Close()
	client := srv.Client()
	defer client.CloseIdleConnections()

	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			text := fmt.Sprintf("caller number %d speaking", i)
			req, _ := http.NewRequest(http.MethodPost, srv.URL+streamULaw, strings.NewReader(textBody(text)))
			req.Header.Set("xi-api-key", "k")
			resp, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			_ = s.Requests() // read the log while others write it
			b, err := io.ReadAll(resp.Body)
			if err == nil && len(b) != s.AudioBytes(text, audio.Telephone) {
				err = fmt.Errorf("%q: %d bytes, want %d", text, len(b), s.AudioBytes(text, audio.Telephone))
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := len(s.Requests()); got != n {
		t.Errorf("recorded %d requests, want %d", got, n)
	}
}
