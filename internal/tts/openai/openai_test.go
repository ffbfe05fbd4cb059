package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/sim/fakeopenaispeech"
	"github.com/handset-voice/handset/internal/tts/openai"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hangGuard bounds waits that must end promptly; reaching it means the code under test hung.
const hangGuard = 10 * time.Second

const testKey = "sk-test-key-0123456789"

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// setup starts a fake (with testKey unless fo.Key is set) and a Synthesizer on it.
func setup(t *testing.T, fo fakeopenaispeech.Options, o openai.Options) (*fakeopenaispeech.Server, *openai.Synthesizer) {
	t.Helper()
	if fo.Key == "" {
		fo.Key = testKey
	}
	if fo.ChunkEvery == 0 {
		fo.ChunkEvery = -1 // no pauses unless a test wants them
	}
	fake, err := fakeopenaispeech.Start(fo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	if o.Key == "" {
		o.Key = fo.Key
	}
	o.BaseURL = fake.URL()
	if o.HTTPClient == nil {
		o.HTTPClient = fake.Client()
	}
	s, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return fake, s
}

func providerError(t *testing.T, err error) *voice.ProviderError {
	t.Helper()
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *voice.ProviderError", err, err)
	}
	if pe.Provider != "openai" {
		t.Errorf("Provider = %q, want openai", pe.Provider)
	}
	return pe
}

// synth speaks text in f and returns all of the audio.
func synth(t *testing.T, s *openai.Synthesizer, text string, f audio.Format) []byte {
	t.Helper()
	rc, err := s.Synthesize(testContext(t), text, f)
	if err != nil {
		t.Fatalf("Synthesize(%q, %v): %v", text, f, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %v: %v", f, err)
	}
	return b
}

func TestNameAndNew(t *testing.T) {
	s, err := openai.New(openai.Options{})
	if err != nil || s.Name() != "openai" {
		t.Fatalf("New(zero) = %v, %v", s, err)
	}
	for _, base := range []string{"ws://example.com/v1", "http://", "example.com", "http://x/v1#frag"} {
		if _, err := openai.New(openai.Options{BaseURL: base}); err == nil || !strings.Contains(err.Error(), "base URL") {
			t.Errorf("New(BaseURL %q) error = %v, want a base URL error", base, err)
		}
	}
	if _, err := openai.New(openai.Options{Key: "a\r\nb"}); err == nil {
		t.Error("a key with a line break was accepted")
	}
}

func TestSpeaksTelephoneAudio(t *testing.T) {
	fake, s := setup(t, fakeopenaispeech.Options{}, openai.Options{})
	const text = "Hello, this is a test call."
	b := synth(t, s, text, audio.Telephone)
	want := fake.AudioDuration(text)
	if got := audio.Telephone.Duration(len(b)); got != want {
		t.Errorf("got %v of audio (%d bytes), want %v", got, len(b), want)
	}
	// The fake voice is normalised as a cloud TTS is; the telephone conversion keeps it.
	if db := audiotest.PeakFrameDBFS(audiotest.Decode(audio.Telephone, b), audio.Telephone.Rate); math.Abs(db-audiotest.TTSPeakFrameDBFS) > 1.5 {
		t.Errorf("loudest frame at %.1f dBFS, want about %.0f", db, audiotest.TTSPeakFrameDBFS)
	}
	sp := fake.Speeches()
	if len(sp) != 1 {
		t.Fatalf("%d requests", len(sp))
	}
	if r := sp[0]; r.Model != "tts-1" || r.Voice != "alloy" || r.ResponseFormat != "pcm" || r.Input != text ||
		r.Speed != 1 || !r.KeyPresent || r.Status != 200 || r.Bytes != fake.AudioBytes(text) {
		t.Errorf("request = %+v", r)
	}
}

func TestModelVoiceAndNoKey(t *testing.T) {
	fake, err := fakeopenaispeech.Start(fakeopenaispeech.Options{Models: []string{"kokoro"}, Voices: []string{"af_heart"}, ChunkEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	s, err := openai.New(openai.Options{BaseURL: fake.URL(), Model: "kokoro", Voice: "af_heart", HTTPClient: fake.Client()})
	if err != nil {
		t.Fatal(err)
	}
	synth(t, s, "Hi.", audio.Telephone)
	if r := fake.Speeches()[0]; r.Model != "kokoro" || r.Voice != "af_heart" || r.KeyPresent {
		t.Errorf("request = %+v, want kokoro/af_heart without Authorization", r)
	}
}

func TestFormatConversions(t *testing.T) {
	const text = "Twenty-four chars long!!" // 24 characters: 1.44 s
	cases := []audio.Format{
		audio.Telephone,
		{Encoding: audio.Alaw, Rate: 8000},
		{Encoding: audio.Mulaw, Rate: 16000},
		{Encoding: audio.PCM16, Rate: 8000},
		{Encoding: audio.PCM16, Rate: 16000},
		{Encoding: audio.PCM16, Rate: 24000},
		{Encoding: audio.PCM16, Rate: 48000},
	}
	fake, s := setup(t, fakeopenaispeech.Options{ToneHz: 1000, ChunkBytes: 997}, openai.Options{})
	d := fake.AudioDuration(text)
	for _, f := range cases {
		b := synth(t, s, text, f)
		if got := f.Duration(len(b)); got != d || len(b) != f.Bytes(d) {
			t.Errorf("%v: %v of audio (%d bytes), want %v (%d bytes)", f, got, len(b), d, f.Bytes(d))
			continue
		}
		pcm := audiotest.Decode(f, b)
		mid := pcm[len(pcm)/10 : len(pcm)*9/10] // away from the edges of the tone
		db := audiotest.ToneLevelDB(mid, f.Rate, 1000)
		if math.Abs(db-(-6.0)) > 0.5 {
			t.Errorf("%v: 1 kHz at %.2f dBFS, want -6 (a -3 dBFS peak sine)", f, db)
		}
		if other := audiotest.ToneLevelDB(mid, f.Rate, 3000); other > db-33 {
			t.Errorf("%v: 3 kHz at %.1f dBFS: the conversion is not clean", f, other)
		}
	}
}

func TestOddChunkBoundaries(t *testing.T) {
	const text = "The same words, cut differently."
	var outs [][]byte
	for _, chunk := range []int{4800, 4801, 1, 333} {
		_, s := setup(t, fakeopenaispeech.Options{ChunkBytes: chunk}, openai.Options{})
		for _, f := range []audio.Format{audio.Telephone, {Encoding: audio.PCM16, Rate: 24000}} {
			outs = append(outs, synth(t, s, text, f))
		}
	}
	for i := 2; i < len(outs); i++ {
		if !bytes.Equal(outs[i], outs[i%2]) {
			t.Errorf("case %d: the audio depends on how the server cut its chunks", i)
		}
	}
	// The 24 kHz answer is passed through untouched.
	fake, _ := setup(t, fakeopenaispeech.Options{}, openai.Options{})
	if len(outs[1]) != fake.AudioBytes(text) {
		t.Errorf("24 kHz pass-through: %d bytes, want %d", len(outs[1]), fake.AudioBytes(text))
	}
}

func TestSmallReads(t *testing.T) {
	fake, s := setup(t, fakeopenaispeech.Options{ChunkBytes: 333}, openai.Options{})
	const text = "Read me one byte at a time."
	rc, err := s.Synthesize(testContext(t), text, audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got []byte
	p := make([]byte, 1)
	for {
		n, err := rc.Read(p)
		got = append(got, p[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := rc.Read(p); n != 0 {
		t.Error("read after EOF returned data")
	}
	if want := audio.Telephone.Bytes(fake.AudioDuration(text)); len(got) != want {
		t.Errorf("%d bytes, want %d", len(got), want)
	}
}

func TestUnsupportedInputMakesNoRequest(t *testing.T) {
	fake, s := setup(t, fakeopenaispeech.Options{}, openai.Options{})
	for _, f := range []audio.Format{
		{Encoding: audio.PCM16, Rate: 11025},
		{Encoding: audio.Mulaw, Rate: 44100},
		{Encoding: 0, Rate: 8000},
		{Encoding: audio.Alaw, Rate: 0},
	} {
		_, err := s.Synthesize(context.Background(), "Hello.", f)
		if pe := providerError(t, err); pe.Kind != voice.KindBadInput || !strings.Contains(err.Error(), f.String()) {
			t.Errorf("%v: %v, want bad_input naming the format", f, err)
		}
	}
	_, err := s.Synthesize(context.Background(), " \n", audio.Telephone)
	if pe := providerError(t, err); pe.Kind != voice.KindBadInput {
		t.Errorf("blank text: %v", err)
	}
	if n := len(fake.Speeches()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

func TestVendorErrors(t *testing.T) {
	cases := []struct {
		name     string
		fake     fakeopenaispeech.Options
		key      string
		text     string
		kind     voice.ErrorKind
		status   int
		message  string
		requests int
	}{
		{"wrong key", fakeopenaispeech.Options{Key: "sk-right-key-123456"}, "sk-wrong-key-654321", "Hello.", voice.KindAuth, 401, "Incorrect API key", 1},
		{"unknown model", fakeopenaispeech.Options{Models: []string{"tts-1-hd"}}, "", "Hello.", voice.KindBadInput, 404, "does not exist", 1},
		{"unknown voice", fakeopenaispeech.Options{Voices: []string{"nova"}}, "", "Hello.", voice.KindBadInput, 400, "Invalid value: 'alloy'", 1},
		{"refused", fakeopenaispeech.Options{}, "", "FAIL400 please", voice.KindBadInput, 400, "FAIL400", 1},
		{"rate limited", fakeopenaispeech.Options{}, "", "FAIL429 please", voice.KindQuota, 429, "Rate limit", 1},
		{"too long", fakeopenaispeech.Options{}, "", strings.Repeat("a", 4097), voice.KindBadInput, 400, "string too long", 1},
		{"persistent 5xx", fakeopenaispeech.Options{}, "", "FAIL500 please", voice.KindTransient, 500, "server had an error", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake, s := setup(t, c.fake, openai.Options{Key: c.key})
			rc, err := s.Synthesize(testContext(t), c.text, audio.Telephone)
			if err == nil {
				rc.Close()
				t.Fatal("Synthesize succeeded, want an error")
			}
			pe := providerError(t, err)
			if pe.Kind != c.kind || pe.Status != c.status || !strings.Contains(pe.Err.Error(), c.message) {
				t.Errorf("got %v, want kind %v, HTTP %d and message %q", err, c.kind, c.status, c.message)
			}
			if strings.Contains(err.Error(), "654321") {
				t.Errorf("error %q shows the key", err)
			}
			if n := len(fake.Speeches()); n != c.requests {
				t.Errorf("%d requests, want %d", n, c.requests)
			}
		})
	}
}

func TestTransientFailureRetriedOnce(t *testing.T) {
	fake, s := setup(t, fakeopenaispeech.Options{}, openai.Options{})
	const text = "FAILONCE then speak."
	b := synth(t, s, text, audio.Telephone)
	if want := audio.Telephone.Bytes(fake.AudioDuration(text)); len(b) != want {
		t.Errorf("%d bytes, want %d", len(b), want)
	}
	var statuses []int
	for _, r := range fake.Speeches() {
		statuses = append(statuses, r.Status)
	}
	if len(statuses) != 2 || statuses[0] != 500 || statuses[1] != 200 {
		t.Errorf("statuses %v, want [500 200]", statuses)
	}
}

// flakyTransport fails the first fail round trips with a connection error, then passes
// the rest to next (or fails them too when next is nil).
type flakyTransport struct {
	fail  int32
	calls atomic.Int32
	next  http.RoundTripper
}

func (f *flakyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if n := f.calls.Add(1); n <= f.fail || f.next == nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, errors.New("connection reset by peer")
	}
	return f.next.RoundTrip(r)
}

func TestConnectionErrors(t *testing.T) {
	t.Run("retried once", func(t *testing.T) {
		fake, _ := setup(t, fakeopenaispeech.Options{}, openai.Options{})
		tr := &flakyTransport{fail: 1, next: fake.Client().Transport}
		s, _ := openai.New(openai.Options{BaseURL: fake.URL(), Key: testKey, HTTPClient: &http.Client{Transport: tr}})
		synth(t, s, "Hello.", audio.Telephone)
		if n, m := tr.calls.Load(), len(fake.Speeches()); n != 2 || m != 1 {
			t.Errorf("%d attempts and %d requests served, want 2 and 1", n, m)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		tr := &flakyTransport{}
		s, _ := openai.New(openai.Options{BaseURL: "http://openai.invalid/v1", HTTPClient: &http.Client{Transport: tr}})
		_, err := s.Synthesize(testContext(t), "Hello.", audio.Telephone)
		if pe := providerError(t, err); pe.Kind != voice.KindTransient || !strings.Contains(err.Error(), "connection reset") {
			t.Errorf("got %v, want a transient connection error", err)
		}
		if n := tr.calls.Load(); n != 2 {
			t.Errorf("%d attempts, want 2", n)
		}
	})
}

// serve starts h on a test server closed at cleanup.
func serve(t *testing.T, h http.Handler) (*httptest.Server, *openai.Synthesizer) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1/", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return srv, s
}

func TestBodyFailsBeforeAnyAudio(t *testing.T) {
	pcm := make([]byte, 4800) // 100 ms of 24 kHz silence
	for _, c := range []struct {
		name     string
		failures int32
		wantErr  bool
	}{{"retried", 1, false}, {"gives up", 2, true}} {
		t.Run(c.name, func(t *testing.T) {
			var attempts atomic.Int32
			_, s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/audio/speech" {
					t.Errorf("path %s", r.URL.Path)
				}
				w.Header().Set("Content-Type", "audio/pcm")
				if attempts.Add(1) <= c.failures {
					w.WriteHeader(200)
					w.(http.Flusher).Flush()
					panic(http.ErrAbortHandler) // headers, then a dropped connection
				}
				_, _ = w.Write(pcm)
			}))
			rc, err := s.Synthesize(testContext(t), "Hello.", audio.Telephone)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if c.wantErr {
				if pe := providerError(t, err); pe.Kind != voice.KindTransient {
					t.Errorf("got %v, want transient", err)
				}
			} else if err != nil || len(b) != 800 {
				t.Errorf("read %d bytes, %v; want 800 (100 ms of telephone audio)", len(b), err)
			}
			if n := attempts.Load(); n != 2 {
				t.Errorf("%d attempts, want 2", n)
			}
		})
	}
}

func TestStreamCutShortIsNotRetried(t *testing.T) {
	fake, s := setup(t, fakeopenaispeech.Options{}, openai.Options{})
	const text = "CUTOFF in the middle of this rather long sentence."
	rc, err := s.Synthesize(testContext(t), text, audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if pe := providerError(t, err); pe.Kind != voice.KindTransient {
		t.Errorf("got %v, want transient", err)
	}
	if len(b) == 0 || len(b) > audio.Telephone.Bytes(fake.AudioDuration(text))/2+100 {
		t.Errorf("%d bytes before the cut", len(b))
	}
	if n := len(fake.Speeches()); n != 1 {
		t.Errorf("%d requests, want 1 (audio had begun)", n)
	}
}

func TestOddAnswers(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		ctype    string
		body     string
		kind     voice.ErrorKind
		message  string
		attempts int32
	}{
		{"mp3 instead of pcm", 200, "audio/mpeg", "ID3...", voice.KindProtocol, "audio/mpeg", 1},
		{"wav instead of pcm", 200, "audio/wav", "RIFF....WAVE", voice.KindProtocol, "audio/wav", 1},
		{"JSON instead of audio", 200, "application/json", `{"audio":"..."}`, voice.KindProtocol, "JSON", 1},
		{"HTML page", 200, "text/html", `<html>`, voice.KindProtocol, "text/html", 1},
		{"Kokoro 400", 400, "application/json", `{"detail":{"error":"validation_error","message":"Voice 'alloy' not found.","type":"invalid_request_error"}}`, voice.KindBadInput, "Voice 'alloy' not found.", 1},
		{"FastAPI 422", 422, "application/json", `{"detail":[{"loc":["body","input"],"msg":"Field required","type":"missing"}]}`, voice.KindBadInput, "Field required", 1},
		{"plain 503", 503, "text/plain", "overloaded", voice.KindTransient, "overloaded", 2},
		{"gateway timeout", 504, "text/html", "<html>", voice.KindTimeout, "Gateway Timeout", 1},
		{"redirect", 304, "", "", voice.KindProtocol, "Not Modified", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var attempts atomic.Int32
			_, s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				attempts.Add(1)
				var req map[string]any
				if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req["response_format"] != "pcm" || req["model"] != "tts-1" {
					t.Errorf("request %v (%v)", req, err)
				}
				if c.ctype != "" {
					w.Header().Set("Content-Type", c.ctype)
				}
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			}))
			rc, err := s.Synthesize(testContext(t), "Hello.", audio.Telephone)
			if err == nil {
				rc.Close()
				t.Fatal("Synthesize succeeded, want an error")
			}
			if pe := providerError(t, err); pe.Kind != c.kind || !strings.Contains(err.Error(), c.message) {
				t.Errorf("got %v, want kind %v with %q", err, c.kind, c.message)
			}
			if n := attempts.Load(); n != c.attempts {
				t.Errorf("%d attempts, want %d", n, c.attempts)
			}
		})
	}
}

func TestUnlabelledAudioIsAccepted(t *testing.T) {
	for _, ctype := range []string{"", "application/octet-stream", "audio/l16; rate=24000"} {
		_, s := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			if ctype != "" {
				w.Header().Set("Content-Type", ctype)
			}
			_, _ = w.Write(make([]byte, 2400))
		}))
		rc, err := s.Synthesize(testContext(t), "Hello.", audio.Telephone)
		if err != nil {
			t.Errorf("%q: %v", ctype, err)
			continue
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || len(b) != 400 {
			t.Errorf("%q: %d bytes, %v", ctype, len(b), err)
		}
	}
}

func TestHeaderTimeout(t *testing.T) {
	fake, s := setup(t, fakeopenaispeech.Options{}, openai.Options{HeaderTimeout: 100 * time.Millisecond})
	begin := time.Now()
	_, err := s.Synthesize(testContext(t), "SLOW to start.", audio.Telephone)
	if pe := providerError(t, err); pe.Kind != voice.KindTimeout {
		t.Errorf("got %v, want a timeout", err)
	}
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("gave up after %v, want about 100 ms", d)
	}
	if n := len(fake.Speeches()); n != 1 {
		t.Errorf("%d requests, want 1 (a timeout is not retried)", n)
	}
	// The default SLOW delay is 2 s; within a longer header timeout it just speaks.
	fake2, s2 := setup(t, fakeopenaispeech.Options{FirstByteDelay: 50 * time.Millisecond, SlowDelay: 100 * time.Millisecond}, openai.Options{HeaderTimeout: 5 * time.Second})
	if b := synth(t, s2, "SLOW but fine.", audio.Telephone); len(b) != audio.Telephone.Bytes(fake2.AudioDuration("SLOW but fine.")) {
		t.Errorf("%d bytes", len(b))
	}
}

func TestCanceledBeforeStart(t *testing.T) {
	fake, s := setup(t, fakeopenaispeech.Options{}, openai.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Synthesize(ctx, "Hello.", audio.Telephone)
	if got := voice.KindOf(err); got != voice.KindCanceled {
		t.Errorf("got %v (kind %v), want canceled", err, got)
	}
	if n := len(fake.Speeches()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

// startStalled opens a stream whose server sends one chunk and then holds, and reads that
// first chunk.
func startStalled(t *testing.T, ctx context.Context) (*fakeopenaispeech.Server, io.ReadCloser) {
	t.Helper()
	fake, s := setup(t, fakeopenaispeech.Options{}, openai.Options{})
	rc, err := s.Synthesize(ctx, "STALL: a long answer that takes a while to speak.", audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rc.Read(make([]byte, 4096)); n == 0 || err != nil {
		t.Fatalf("first read: %d bytes, %v", n, err)
	}
	held := func(_ []fakeopenaispeech.Upload, sps []fakeopenaispeech.Speech) bool {
		return len(sps) == 1 && sps[0].Held
	}
	if err := fake.WaitFor(testContext(t), held); err != nil {
		t.Fatal(err)
	}
	return fake, rc
}

// readErr reads rc until an error and fails the test if that takes past hangGuard.
func readErr(t *testing.T, rc io.Reader) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, rc)
		if err == nil {
			err = io.EOF
		}
		errc <- err
	}()
	select {
	case err := <-errc:
		return err
	case <-time.After(hangGuard):
		t.Fatalf("read still blocked %v after the stream was stopped", hangGuard)
		return nil
	}
}

// aborted waits until the fake has seen the client go away.
func aborted(t *testing.T, fake *fakeopenaispeech.Server) {
	t.Helper()
	if err := fake.AwaitSpeechesDone(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	if sp := fake.Speeches()[0]; !sp.Aborted {
		t.Errorf("speech = %+v, want aborted", sp)
	}
}

func TestCancelMidStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake, rc := startStalled(t, ctx)
	defer rc.Close()
	cancel()
	err := readErr(t, rc)
	if pe := providerError(t, err); pe.Kind != voice.KindCanceled {
		t.Errorf("read after cancel: %v, want canceled", err)
	}
	aborted(t, fake)
}

func TestCloseMidStream(t *testing.T) {
	fake, rc := startStalled(t, context.Background())
	errc := make(chan error, 1)
	go func() { errc <- readErr(t, rc) }() // a reader blocked when Close comes
	time.Sleep(20 * time.Millisecond)
	if err := rc.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := rc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if pe := providerError(t, <-errc); pe.Kind != voice.KindCanceled {
		t.Errorf("blocked read after Close: %v, want canceled", pe)
	}
	if _, err := rc.Read(make([]byte, 10)); voice.KindOf(err) != voice.KindCanceled {
		t.Errorf("read after Close: %v, want canceled", err)
	}
	aborted(t, fake)
}

func TestConcurrentSyntheses(t *testing.T) {
	fake, s := setup(t, fakeopenaispeech.Options{ChunkEvery: time.Millisecond}, openai.Options{})
	texts := []string{"One.", "Two, two.", "Three, three, three.", "Four."}
	errc := make(chan error, len(texts))
	for _, text := range texts {
		go func() {
			rc, err := s.Synthesize(testContext(t), text, audio.Telephone)
			if err != nil {
				errc <- err
				return
			}
			defer rc.Close()
			b, err := io.ReadAll(rc)
			if err == nil && len(b) != audio.Telephone.Bytes(fake.AudioDuration(text)) {
				err = errors.New(text + ": wrong length")
			}
			errc <- err
		}()
	}
	for range texts {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}
