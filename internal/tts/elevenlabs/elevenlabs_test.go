package elevenlabs_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/tts/elevenlabs"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hangGuard bounds waits that must end promptly; reaching it means the code under test hung.
const hangGuard = 10 * time.Second

// serve starts h on a test server that is shut down (and checked not to hang) at cleanup.
func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Client().CloseIdleConnections()
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.Close()
		}()
		select {
		case <-done:
		case <-time.After(hangGuard):
			t.Errorf("test server still busy %v after the test: a request was not stopped", hangGuard)
		}
	})
	return srv
}

// setup returns a fake ElevenLabs and a provider pointed at it with the right key.
func setup(t *testing.T, fo fakeelevenlabs.Options, po elevenlabs.Options) (*fakeelevenlabs.Server, *elevenlabs.Synthesizer) {
	t.Helper()
	if fo.Key == "" {
		fo.Key = "test-key"
	}
	fake := fakeelevenlabs.New(fo)
	srv := serve(t, fake)
	if po.Key == "" {
		po.Key = fo.Key
	}
	po.BaseURL = srv.URL
	if po.HTTPClient == nil {
		po.HTTPClient = srv.Client()
	}
	return fake, elevenlabs.New(po)
}

func providerError(t *testing.T, err error) *voice.ProviderError {
	t.Helper()
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *voice.ProviderError", err, err)
	}
	if pe.Provider != "elevenlabs" {
		t.Errorf("Provider = %q, want elevenlabs", pe.Provider)
	}
	return pe
}

// rmsDBFS is the loudness of samples relative to full scale.
func rmsDBFS(pcm []int16) float64 {
	var sum float64
	for _, v := range pcm {
		sum += float64(v) * float64(v)
	}
	return 20 * math.Log10(math.Sqrt(sum/float64(len(pcm)))/32768+1e-12)
}

func TestName(t *testing.T) {
	if got := elevenlabs.New(elevenlabs.Options{}).Name(); got != "elevenlabs" {
		t.Errorf("Name() = %q", got)
	}
}

func TestSpeaksTelephoneAudio(t *testing.T) {
	fake, s := setup(t, fakeelevenlabs.Options{Voices: []string{elevenlabs.DefaultVoice}}, elevenlabs.Options{})
	const text = "Hello, this is a test call."
	rc, err := s.Synthesize(context.Background(), text, audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	wantDur := time.Duration(len(text)) * fakeelevenlabs.DefaultMsPerChar * time.Millisecond
	if got := audio.Telephone.Duration(len(b)); got != wantDur {
		t.Errorf("got %v of audio (%d bytes), want %v", got, len(b), wantDur)
	}
	if db := rmsDBFS(g711.DecodeMulaw(make([]int16, len(b)), b)); db < -30 {
		t.Errorf("audio RMS %.1f dBFS: silence where speech was expected", db)
	}
	want := []fakeelevenlabs.Request{{
		Voice: elevenlabs.DefaultVoice, Model: elevenlabs.DefaultModel, Format: "ulaw_8000",
		Text: text, KeyPresent: true, Stream: true, Status: 200,
	}}
	if diff := cmp.Diff(want, fake.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestVoiceAndModelOptions(t *testing.T) {
	fake, s := setup(t, fakeelevenlabs.Options{}, elevenlabs.Options{Voice: "my voice/1", Model: "eleven_turbo_v2_5"})
	rc, err := s.Synthesize(context.Background(), "Hi.", audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	rc.Close()
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Voice != "my voice/1" || reqs[0].Model != "eleven_turbo_v2_5" {
		t.Errorf("requests = %+v, want voice %q and model eleven_turbo_v2_5", reqs, "my voice/1")
	}
}

func TestOutputFormats(t *testing.T) {
	const text = "twenty characters!!!" // 1.1 s at 55 ms a character
	cases := []struct {
		f        audio.Format
		name     string
		perSec   int // bytes per second of audio
		wantSize int
	}{
		{audio.Telephone, "ulaw_8000", 8000, 8800},
		{audio.Format{Encoding: audio.Alaw, Rate: 8000}, "alaw_8000", 8000, 8800},
		{audio.Format{Encoding: audio.PCM16, Rate: 8000}, "pcm_8000", 16000, 17600},
		{audio.Format{Encoding: audio.PCM16, Rate: 16000}, "pcm_16000", 32000, 35200},
		{audio.Format{Encoding: audio.PCM16, Rate: 22050}, "pcm_22050", 44100, 48510},
		{audio.Format{Encoding: audio.PCM16, Rate: 24000}, "pcm_24000", 48000, 52800},
		{audio.Format{Encoding: audio.PCM16, Rate: 32000}, "pcm_32000", 64000, 70400},
		{audio.Format{Encoding: audio.PCM16, Rate: 44100}, "pcm_44100", 88200, 97020},
		{audio.Format{Encoding: audio.PCM16, Rate: 48000}, "pcm_48000", 96000, 105600},
	}
	fake, s := setup(t, fakeelevenlabs.Options{}, elevenlabs.Options{})
	for i, c := range cases {
		rc, err := s.Synthesize(context.Background(), text, c.f)
		if err != nil {
			t.Errorf("%s: %v", c.f, err)
			continue
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Errorf("%s: read: %v", c.f, err)
		}
		if len(b) != c.wantSize || len(b)*10 != c.perSec*11 {
			t.Errorf("%s: %d bytes, want %d (1.1 s at %d bytes a second)", c.f, len(b), c.wantSize, c.perSec)
		}
		if got := fake.Requests()[i].Format; got != c.name {
			t.Errorf("%s: asked for output_format %q, want %q", c.f, got, c.name)
		}
	}
}

func TestUnsupportedInputMakesNoRequest(t *testing.T) {
	fake, s := setup(t, fakeelevenlabs.Options{}, elevenlabs.Options{})
	for _, f := range []audio.Format{
		{Encoding: audio.PCM16, Rate: 11025},
		{Encoding: audio.Mulaw, Rate: 16000},
		{Encoding: audio.Alaw, Rate: 48000},
		{Encoding: 0, Rate: 8000},
	} {
		_, err := s.Synthesize(context.Background(), "Hello.", f)
		if pe := providerError(t, err); pe.Kind != voice.KindBadInput || !strings.Contains(err.Error(), f.String()) {
			t.Errorf("%s: error %v, want bad_input naming the format", f, err)
		}
	}
	_, err := s.Synthesize(context.Background(), "  ", audio.Telephone)
	if pe := providerError(t, err); pe.Kind != voice.KindBadInput {
		t.Errorf("blank text: kind %v, want bad_input", pe.Kind)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests reached ElevenLabs, want none", n)
	}
}

func TestVendorErrors(t *testing.T) {
	cases := []struct {
		name     string
		fake     fakeelevenlabs.Options
		key      string
		kind     voice.ErrorKind
		status   int
		message  string
		requests int
	}{
		{"wrong key", fakeelevenlabs.Options{Key: "right"}, "wrong", voice.KindAuth, 401, "Invalid API key", 1},
		{"unknown voice", fakeelevenlabs.Options{Voices: []string{"someone-else"}}, "", voice.KindBadInput, 404, "was not found", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake, s := setup(t, c.fake, elevenlabs.Options{Key: c.key})
			rc, err := s.Synthesize(context.Background(), "Hello.", audio.Telephone)
			if err == nil {
				rc.Close()
				t.Fatal("Synthesize succeeded, want an error")
			}
			pe := providerError(t, err)
			if pe.Kind != c.kind || pe.Status != c.status || !strings.Contains(pe.Err.Error(), c.message) {
				t.Errorf("got %v, want kind %v, HTTP %d and message %q", err, c.kind, c.status, c.message)
			}
			if n := len(fake.Requests()); n != c.requests {
				t.Errorf("%d requests, want %d", n, c.requests)
			}
		})
	}
}

func TestTransientFailureRetriedOnce(t *testing.T) {
	fake, s := setup(t, fakeelevenlabs.Options{}, elevenlabs.Options{})
	const text = "TTSFAILONCE then speak."
	rc, err := s.Synthesize(context.Background(), text, audio.Telephone)
	if err != nil {
		t.Fatalf("Synthesize after one failure: %v", err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || len(b) != fake.AudioBytes(text, audio.Telephone) {
		t.Errorf("read %d bytes (err %v), want %d", len(b), err, fake.AudioBytes(text, audio.Telephone))
	}
	var statuses []int
	for _, r := range fake.Requests() {
		statuses = append(statuses, r.Status)
	}
	if diff := cmp.Diff([]int{500, 200}, statuses); diff != "" {
		t.Errorf("request statuses (-want +got):\n%s", diff)
	}
}

func TestPersistentFailureGivesUpAfterOneRetry(t *testing.T) {
	fake, s := setup(t, fakeelevenlabs.Options{}, elevenlabs.Options{})
	_, err := s.Synthesize(context.Background(), "TTSFAIL always", audio.Telephone)
	pe := providerError(t, err)
	if pe.Kind != voice.KindTransient || pe.Status != 500 || !pe.Retryable() {
		t.Errorf("got %v, want a transient HTTP 500", err)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (one retry)", n)
	}
}

// flakyTransport fails the first `fail` round trips with a connection error, then passes
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
		fake := fakeelevenlabs.New(fakeelevenlabs.Options{})
		srv := serve(t, fake)
		tr := &flakyTransport{fail: 1, next: srv.Client().Transport}
		s := elevenlabs.New(elevenlabs.Options{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: tr}})
		rc, err := s.Synthesize(context.Background(), "Hello.", audio.Telephone)
		if err != nil {
			t.Fatalf("Synthesize after one connection error: %v", err)
		}
		rc.Close()
		if n, m := tr.calls.Load(), len(fake.Requests()); n != 2 || m != 1 {
			t.Errorf("%d attempts and %d requests served, want 2 and 1", n, m)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		tr := &flakyTransport{}
		s := elevenlabs.New(elevenlabs.Options{BaseURL: "http://elevenlabs.invalid", HTTPClient: &http.Client{Transport: tr}})
		_, err := s.Synthesize(context.Background(), "Hello.", audio.Telephone)
		if pe := providerError(t, err); pe.Kind != voice.KindTransient || !strings.Contains(err.Error(), "connection reset") {
			t.Errorf("got %v, want a transient connection error", err)
		}
		if n := tr.calls.Load(); n != 2 {
			t.Errorf("%d attempts, want 2", n)
		}
	})
}

func TestHeaderTimeout(t *testing.T) {
	fake, s := setup(t, fakeelevenlabs.Options{FirstByteDelay: time.Hour}, elevenlabs.Options{HeaderTimeout: 50 * time.Millisecond})
	_, err := s.Synthesize(context.Background(), "Hello.", audio.Telephone)
	if pe := providerError(t, err); pe.Kind != voice.KindTimeout {
		t.Errorf("got %v, want a timeout", err)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (a timeout is not retried here)", n)
	}
}

func TestCanceledBeforeStart(t *testing.T) {
	fake, s := setup(t, fakeelevenlabs.Options{}, elevenlabs.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Synthesize(ctx, "Hello.", audio.Telephone)
	if got := voice.KindOf(err); got != voice.KindCanceled {
		t.Errorf("got %v (kind %v), want canceled", err, got)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

// startStalledStream opens a stream whose server sends one chunk and then pauses for an
// hour, and reads that first chunk.
func startStalledStream(t *testing.T, ctx context.Context) io.ReadCloser {
	t.Helper()
	_, s := setup(t, fakeelevenlabs.Options{ChunkEvery: time.Hour}, elevenlabs.Options{})
	rc, err := s.Synthesize(ctx, "A long answer that takes a while to speak.", audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rc.Read(make([]byte, 4096)); n == 0 || err != nil {
		t.Fatalf("first read: %d bytes, %v", n, err)
	}
	return rc
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

func TestCancelMidStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc := startStalledStream(t, ctx)
	defer rc.Close()
	cancel()
	err := readErr(t, rc)
	if pe := providerError(t, err); pe.Kind != voice.KindCanceled {
		t.Errorf("read after cancel: %v, want canceled", err)
	}
}

func TestCloseMidStream(t *testing.T) {
	rc := startStalledStream(t, context.Background())
	if err := rc.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := rc.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// serve's cleanup fails the test if the server is still streaming.
}

func TestStreamCutShort(t *testing.T) {
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/basic")
		_, _ = w.Write(make([]byte, 800))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // drop the connection mid-stream
	}))
	s := elevenlabs.New(elevenlabs.Options{BaseURL: srv.URL, HTTPClient: srv.Client()})
	rc, err := s.Synthesize(context.Background(), "Hello.", audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	err = readErr(t, rc)
	if pe := providerError(t, err); pe.Kind != voice.KindTransient {
		t.Errorf("read of a dropped stream: %v, want transient", err)
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
		{"plain text 503", 503, "text/plain", "upstream down", voice.KindTransient, "Service Unavailable", 2},
		{"validation 422", 422, "application/json", `{"detail":[{"loc":["body","text"],"msg":"field required","type":"value_error.missing"}]}`, voice.KindBadInput, "field required", 1},
		{"quota 429", 429, "application/json", `{"detail":{"status":"too_many_concurrent_requests","message":"Too many concurrent requests."}}`, voice.KindQuota, "Too many concurrent requests.", 1},
		{"gateway timeout", 504, "text/html", "<html>", voice.KindTimeout, "Gateway Timeout", 1},
		{"JSON instead of audio", 200, "application/json", `{"audio":"..."}`, voice.KindProtocol, "JSON", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var attempts atomic.Int32
			srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				attempts.Add(1)
				w.Header().Set("Content-Type", c.ctype)
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			}))
			s := elevenlabs.New(elevenlabs.Options{BaseURL: srv.URL + "/", HTTPClient: srv.Client()})
			rc, err := s.Synthesize(context.Background(), "Hello.", audio.Telephone)
			if err == nil {
				rc.Close()
				t.Fatal("Synthesize succeeded, want an error")
			}
			pe := providerError(t, err)
			if pe.Kind != c.kind || !strings.Contains(err.Error(), c.message) {
				t.Errorf("got %v, want kind %v with %q", err, c.kind, c.message)
			}
			if n := attempts.Load(); n != c.attempts {
				t.Errorf("%d attempts, want %d", n, c.attempts)
			}
		})
	}
}
