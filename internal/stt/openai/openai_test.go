package openai_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/sim/fakeopenaispeech"
	"github.com/handset-voice/handset/internal/stt/openai"
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

// setup starts a fake (with testKey unless fo.Key is set) and a Recognizer on it.
func setup(t *testing.T, fo fakeopenaispeech.Options, o openai.Options) (*fakeopenaispeech.Server, *openai.Recognizer) {
	t.Helper()
	if fo.Key == "" {
		fo.Key = testKey
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
	r, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return fake, r
}

func open(t *testing.T, ctx context.Context, r *openai.Recognizer, f audio.Format) voice.RecognizerStream {
	t.Helper()
	st, err := r.Stream(ctx, f, voice.StreamOptions{CallID: "call-1"})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// encode renders pcm in encoding enc.
func encode(enc audio.Encoding, pcm []int16) []byte {
	switch enc {
	case audio.Mulaw:
		return g711.EncodeMulaw(make([]byte, len(pcm)), pcm)
	case audio.Alaw:
		return g711.EncodeAlaw(make([]byte, len(pcm)), pcm)
	}
	b := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return b
}

// speech is d of speech-like audio in f.
func speech(f audio.Format, d time.Duration) []byte {
	return encode(f.Encoding, audiotest.SpeechLike(f.Rate, d, 7))
}

// feed writes a in 20 ms frames.
func feed(t *testing.T, st voice.RecognizerStream, f audio.Format, a []byte) {
	t.Helper()
	for frame := f.FrameBytes(); len(a) > 0; {
		n := min(frame, len(a))
		if err := st.Write(a[:n]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		a = a[n:]
	}
}

// next waits for the next transcript; ok is false when Results was closed.
func next(t *testing.T, st voice.RecognizerStream) (voice.Transcript, bool) {
	t.Helper()
	select {
	case tr, ok := <-st.Results():
		if ok && !tr.Final {
			t.Errorf("transcript %+v is not final", tr)
		}
		return tr, ok
	case <-time.After(hangGuard):
		t.Fatal("no transcript in time")
		return voice.Transcript{}, false
	}
}

func finals(t *testing.T, st voice.RecognizerStream, n int) []string {
	t.Helper()
	var out []string
	for range n {
		tr, ok := next(t, st)
		if !ok {
			t.Fatalf("Results closed after %d of %d transcripts", len(out), n)
		}
		out = append(out, tr.Text)
	}
	return out
}

// closed waits for Results to be closed, failing on any transcript.
func closed(t *testing.T, st voice.RecognizerStream) {
	t.Helper()
	if tr, ok := next(t, st); ok {
		t.Fatalf("got %+v, want Results closed", tr)
	}
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

// logs is a slog handler that keeps the records, for checking what was logged.
type logs struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logs) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logs) WithGroup(string) slog.Handler      { return l }

// find returns the first record at level whose message contains msg, with its attributes.
func (l *logs) find(level slog.Level, msg string) (map[string]string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.Level == level && strings.Contains(r.Message, msg) {
			attrs := map[string]string{}
			r.Attrs(func(a slog.Attr) bool {
				attrs[a.Key] = a.Value.String()
				return true
			})
			return attrs, true
		}
	}
	return nil, false
}

func TestNameAndNew(t *testing.T) {
	r, err := openai.New(openai.Options{})
	if err != nil || r.Name() != "openai" {
		t.Fatalf("New(zero) = %v, %v", r, err)
	}
	for _, base := range []string{"ftp://example.com/v1", "http://", "localhost:8000/v1", "http://[::1", "http://x/v1?k=1"} {
		if _, err := openai.New(openai.Options{BaseURL: base}); err == nil || !strings.Contains(err.Error(), "base URL") {
			t.Errorf("New(BaseURL %q) error = %v, want a base URL error", base, err)
		}
	}
	if _, err := openai.New(openai.Options{Key: "sk-\nX-Evil: 1"}); err == nil {
		t.Error("a key with a line break was accepted")
	}
	// A trailing slash is fine.
	fake, r := setup(t, fakeopenaispeech.Options{Transcripts: []string{"ok"}}, openai.Options{})
	r2, err := openai.New(openai.Options{BaseURL: fake.URL() + "/", Key: testKey, HTTPClient: fake.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_ = r
	if text, err := r2.Transcribe(testContext(t), audio.Telephone, speech(audio.Telephone, time.Second)); err != nil || text != "ok" {
		t.Errorf("Transcribe via base URL with a slash: %q, %v", text, err)
	}
}

func TestStreamRejectsUnsupportedFormats(t *testing.T) {
	_, r := setup(t, fakeopenaispeech.Options{}, openai.Options{})
	for _, f := range []audio.Format{
		{Encoding: audio.PCM16, Rate: 11025},
		{Encoding: audio.PCM16, Rate: 44100},
		{Encoding: audio.Mulaw, Rate: 0},
		{Encoding: 0, Rate: 8000},
	} {
		_, err := r.Stream(context.Background(), f, voice.StreamOptions{})
		if pe := providerError(t, err); pe.Kind != voice.KindBadInput || !strings.Contains(err.Error(), f.String()) {
			t.Errorf("%v: %v, want bad_input naming the format", f, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Stream(ctx, audio.Telephone, voice.StreamOptions{}); voice.KindOf(err) != voice.KindCanceled {
		t.Errorf("Stream with a cancelled context: %v", err)
	}
}

func TestTranscribesTelephoneUtterance(t *testing.T) {
	fake, r := setup(t, fakeopenaispeech.Options{Transcripts: []string{"  Hello, I'd like to book a table. "}, KeepAudio: true},
		openai.Options{Language: "en"})
	st := open(t, testContext(t), r, audio.Telephone)
	feed(t, st, audio.Telephone, speech(audio.Telephone, 1500*time.Millisecond))
	if err := st.Finalize(); err != nil {
		t.Fatal(err)
	}
	if got := finals(t, st, 1); got[0] != "Hello, I'd like to book a table." {
		t.Errorf("final %q", got[0])
	}
	ups := fake.Uploads()
	if len(ups) != 1 {
		t.Fatalf("%d uploads, want 1", len(ups))
	}
	u := ups[0]
	if u.Model != "whisper-1" || u.Language != "en" || u.ResponseFormat != "json" || !u.KeyPresent ||
		u.Filename != "utterance.wav" || u.ContentType != "audio/wav" || u.Status != 200 {
		t.Errorf("upload = %+v", u)
	}
	if u.Format != (audio.Format{Encoding: audio.PCM16, Rate: 8000}) || u.Duration != 1500*time.Millisecond {
		t.Errorf("uploaded %v of %v, want 1.5s of pcm16/8000", u.Duration, u.Format)
	}
	// mu-law costs a little level; the speech must arrive at about its own level.
	if math.Abs(u.RMSDBFS-audiotest.SpeechLevelDBFS) > 1 || u.PeakDBFS > 0 || u.PeakDBFS < -12 {
		t.Errorf("uploaded levels RMS %.1f, peak %.1f dBFS", u.RMSDBFS, u.PeakDBFS)
	}
	if err := st.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed(t, st)
	if err := st.Write([]byte{1}); !errors.Is(err, openai.ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := st.Finalize(); !errors.Is(err, openai.ErrClosed) {
		t.Errorf("Finalize after Close: %v, want ErrClosed", err)
	}
}

func TestFormatConversions(t *testing.T) {
	cases := []struct {
		f        audio.Format
		uploaded int // rate of the WAV sent
	}{
		{audio.Format{Encoding: audio.PCM16, Rate: 8000}, 8000},
		{audio.Format{Encoding: audio.PCM16, Rate: 16000}, 16000},
		{audio.Format{Encoding: audio.PCM16, Rate: 24000}, 16000},
		{audio.Format{Encoding: audio.PCM16, Rate: 48000}, 16000},
		{audio.Format{Encoding: audio.Mulaw, Rate: 8000}, 8000},
		{audio.Format{Encoding: audio.Alaw, Rate: 8000}, 8000},
		{audio.Format{Encoding: audio.Mulaw, Rate: 16000}, 16000},
		{audio.Format{Encoding: audio.Alaw, Rate: 48000}, 16000},
	}
	for _, c := range cases {
		t.Run(c.f.String(), func(t *testing.T) {
			fake, r := setup(t, fakeopenaispeech.Options{Transcripts: []string{"converted"}, KeepAudio: true}, openai.Options{})
			st := open(t, testContext(t), r, c.f)
			// A 1 kHz tone at -12 dBFS peak, then speech: the level and pitch must survive.
			tone := audiotest.Tone(c.f.Rate, 1000, 700*time.Millisecond, 0.25)
			feed(t, st, c.f, encode(c.f.Encoding, audiotest.Concat(tone, audiotest.SpeechLike(c.f.Rate, 300*time.Millisecond, 1))))
			if err := st.Finalize(); err != nil {
				t.Fatal(err)
			}
			if got := finals(t, st, 1); got[0] != "converted" {
				t.Errorf("final %q", got[0])
			}
			u := fake.Uploads()[0]
			if u.Format != (audio.Format{Encoding: audio.PCM16, Rate: c.uploaded}) || u.Duration != time.Second {
				t.Errorf("uploaded %v of %v, want 1s of pcm16/%d", u.Duration, u.Format, c.uploaded)
			}
			toneOut := u.Samples[c.uploaded/10 : c.uploaded*6/10] // 100-600 ms: well inside the tone
			if db := audiotest.ToneLevelDB(toneOut, c.uploaded, 1000); math.Abs(db-(-15.05)) > 0.5 {
				t.Errorf("1 kHz tone uploaded at %.2f dBFS, want -15.05", db)
			}
		})
	}
}

func TestUtterancesInOrder(t *testing.T) {
	fake, r := setup(t, fakeopenaispeech.Options{Transcripts: []string{"one", "two", "three"}, TranscribeDelay: 30 * time.Millisecond}, openai.Options{})
	st := open(t, testContext(t), r, audio.Telephone)
	for i, d := range []time.Duration{500 * time.Millisecond, 700 * time.Millisecond, 900 * time.Millisecond} {
		feed(t, st, audio.Telephone, speech(audio.Telephone, d))
		if err := st.Finalize(); err != nil {
			t.Fatalf("Finalize %d: %v", i, err)
		}
	}
	if got := strings.Join(finals(t, st, 3), ","); got != "one,two,three" {
		t.Errorf("finals %q, want one,two,three", got)
	}
	ups := fake.Uploads()
	if len(ups) != 3 {
		t.Fatalf("%d uploads", len(ups))
	}
	for i, want := range []time.Duration{500 * time.Millisecond, 700 * time.Millisecond, 900 * time.Millisecond} {
		if ups[i].Duration != want || ups[i].Text != []string{"one", "two", "three"}[i] {
			t.Errorf("upload %d: %v %q, want %v", i, ups[i].Duration, ups[i].Text, want)
		}
	}
}

// serialTracker is a handler wrapper that records the most requests in flight at once.
type serialTracker struct {
	next      http.Handler
	now, most atomic.Int32
}

func (s *serialTracker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	s.next.ServeHTTP(w, r)
}

func TestRequestsAreSequential(t *testing.T) {
	fake := fakeopenaispeech.New(fakeopenaispeech.Options{Transcripts: []string{"a", "b", "c", "d"}, TranscribeDelay: 50 * time.Millisecond})
	tr := &serialTracker{next: fake}
	srv := httptest.NewServer(tr)
	t.Cleanup(func() {
		fake.Close()
		srv.Close()
	})
	r, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	st := open(t, testContext(t), r, audio.Telephone)
	for range 4 {
		feed(t, st, audio.Telephone, speech(audio.Telephone, 300*time.Millisecond))
		_ = st.Finalize()
	}
	if got := strings.Join(finals(t, st, 4), ""); got != "abcd" {
		t.Errorf("finals %q", got)
	}
	if m := tr.most.Load(); m != 1 {
		t.Errorf("%d requests in flight at once, want 1", m)
	}
}

func TestNothingToHearSkipsTheRequest(t *testing.T) {
	fake, r := setup(t, fakeopenaispeech.Options{Transcripts: []string{"should not be used"}}, openai.Options{})
	st := open(t, testContext(t), r, audio.Telephone)
	silence := make([]byte, audio.Telephone.Bytes(2*time.Second))
	for i := range silence {
		silence[i] = g711.MulawSilence
	}
	hiss := audiotest.Mulaw(audiotest.WhiteNoise(8000, time.Second, -60, 2))
	_ = st.Finalize() // nothing written
	feed(t, st, audio.Telephone, silence)
	_ = st.Finalize()
	feed(t, st, audio.Telephone, hiss)
	_ = st.Finalize()
	feed(t, st, audio.Telephone, speech(audio.Telephone, 60*time.Millisecond)) // a click
	_ = st.Finalize()
	for i, text := range finals(t, st, 4) {
		if text != "" {
			t.Errorf("final %d = %q, want empty", i, text)
		}
	}
	if n := len(fake.Uploads()); n != 0 {
		t.Errorf("%d uploads, want none", n)
	}
	// Silence around speech is sent whole.
	feed(t, st, audio.Telephone, silence[:4000])
	feed(t, st, audio.Telephone, speech(audio.Telephone, 400*time.Millisecond))
	_ = st.Finalize()
	if got := finals(t, st, 1); got[0] != "should not be used" {
		t.Errorf("final %q", got[0])
	}
	if ups := fake.Uploads(); len(ups) != 1 || ups[0].Duration != 900*time.Millisecond {
		t.Errorf("uploads %+v, want one of 900 ms", ups)
	}
}

func TestMaxUtteranceKeepsTheNewest(t *testing.T) {
	lg := &logs{}
	fake, r := setup(t, fakeopenaispeech.Options{Transcripts: []string{"tail"}, KeepAudio: true},
		openai.Options{MaxUtterance: time.Second, Logger: slog.New(lg)})
	f := audio.Format{Encoding: audio.PCM16, Rate: 16000}
	st := open(t, testContext(t), r, f)
	old := audiotest.Tone(16000, 300, 2*time.Second, 0.25)
	recent := audiotest.Tone(16000, 1200, time.Second, 0.25)
	feed(t, st, f, encode(f.Encoding, audiotest.Concat(old, recent)))
	_ = st.Finalize()
	finals(t, st, 1)
	u := fake.Uploads()[0]
	if u.Duration != time.Second {
		t.Fatalf("uploaded %v, want the 1 s limit", u.Duration)
	}
	if hi, lo := audiotest.ToneLevelDB(u.Samples, 16000, 1200), audiotest.ToneLevelDB(u.Samples, 16000, 300); hi < -16 || lo > -40 {
		t.Errorf("uploaded 1200 Hz at %.1f dBFS and 300 Hz at %.1f: want only the newest second", hi, lo)
	}
	if _, ok := lg.find(slog.LevelWarn, "longer than the limit"); !ok {
		t.Error("dropping audio was not logged")
	}
}

func TestAuthFailureEndsTheStream(t *testing.T) {
	lg := &logs{}
	fake, r := setup(t, fakeopenaispeech.Options{Transcripts: []string{"never"}}, openai.Options{Key: "sk-wrong-key-999999", Logger: slog.New(lg)})
	st := open(t, testContext(t), r, audio.Telephone)
	feed(t, st, audio.Telephone, speech(audio.Telephone, 500*time.Millisecond))
	_ = st.Finalize()
	closed(t, st)
	err := st.Close()
	pe := providerError(t, err)
	if pe.Kind != voice.KindAuth || pe.Status != 401 || !strings.Contains(err.Error(), "Incorrect API key") {
		t.Errorf("Close = %v, want auth 401 with OpenAI's message", err)
	}
	if strings.Contains(err.Error(), "999999") {
		t.Errorf("error %q shows the key", err)
	}
	if err2 := st.Write([]byte{0xff}); !errors.Is(err2, err) {
		t.Errorf("Write after the failure: %v, want the stream's error", err2)
	}
	if n := len(fake.Uploads()); n != 1 {
		t.Errorf("%d requests, want 1 (auth is not retried)", n)
	}
	if attrs, ok := lg.find(slog.LevelError, "ending the stream"); !ok || attrs["kind"] != "auth" {
		t.Errorf("auth failure logged as %v (found %v)", attrs, ok)
	}
}

func TestNotFoundEndsTheStream(t *testing.T) {
	_, r := setup(t, fakeopenaispeech.Options{Models: []string{"whisper-large-v3"}}, openai.Options{})
	st := open(t, testContext(t), r, audio.Telephone)
	feed(t, st, audio.Telephone, speech(audio.Telephone, 500*time.Millisecond))
	_ = st.Finalize()
	closed(t, st)
	if pe := providerError(t, st.Close()); pe.Kind != voice.KindBadInput || pe.Status != 404 || !strings.Contains(pe.Error(), "does not exist") {
		t.Errorf("Close = %v, want bad_input 404", pe)
	}
}

func TestRecoverableFailures(t *testing.T) {
	cases := []struct {
		name     string
		script   []string
		first    string // the first final
		statuses []int
		kind     string // logged kind, "" when it succeeded
	}{
		{"5xx retried once", []string{"FAIL500", "second try"}, "second try", []int{500, 200}, ""},
		{"5xx twice gives up", []string{"FAIL500", "FAIL500", "after"}, "", []int{500, 500}, "transient"},
		{"bad input not retried", []string{"FAIL400", "after"}, "", []int{400}, "bad_input"},
		{"quota not retried", []string{"FAIL429", "after"}, "", []int{429}, "quota"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lg := &logs{}
			fake, r := setup(t, fakeopenaispeech.Options{Transcripts: c.script}, openai.Options{Logger: slog.New(lg)})
			st := open(t, testContext(t), r, audio.Telephone)
			feed(t, st, audio.Telephone, speech(audio.Telephone, 500*time.Millisecond))
			_ = st.Finalize()
			if got := finals(t, st, 1); got[0] != c.first {
				t.Errorf("first final %q, want %q", got[0], c.first)
			}
			var statuses []int
			for _, u := range fake.Uploads() {
				statuses = append(statuses, u.Status)
			}
			if len(statuses) != len(c.statuses) || (len(statuses) > 1 && statuses[1] != c.statuses[1]) || statuses[0] != c.statuses[0] {
				t.Errorf("statuses %v, want %v", statuses, c.statuses)
			}
			if c.kind != "" {
				attrs, ok := lg.find(slog.LevelWarn, "utterance is lost")
				if !ok || attrs["kind"] != c.kind {
					t.Errorf("failure logged as %v (found %v), want kind %s", attrs, ok, c.kind)
				}
				// The stream carries on.
				feed(t, st, audio.Telephone, speech(audio.Telephone, 500*time.Millisecond))
				_ = st.Finalize()
				if got := finals(t, st, 1); got[0] != "after" {
					t.Errorf("next final %q, want after", got[0])
				}
			}
			if err := st.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
}

func TestConnectionErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	lg := &logs{}
	r, err := openai.New(openai.Options{BaseURL: "http://" + addr + "/v1", Logger: slog.New(lg)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Transcribe(testContext(t), audio.Telephone, speech(audio.Telephone, 300*time.Millisecond))
	if pe := providerError(t, err); pe.Kind != voice.KindTransient {
		t.Errorf("Transcribe to a closed port: %v, want transient", err)
	}
	if _, ok := lg.find(slog.LevelWarn, "retrying"); !ok {
		t.Error("no retry logged")
	}
}

func TestTimeoutIsNotRetried(t *testing.T) {
	// SLOW holds an hour, so it always times out; the timeout leaves the uploads that
	// answer at once room to do so on a loaded machine.
	fake, r := setup(t, fakeopenaispeech.Options{Transcripts: []string{"SLOW late", "on time"}, SlowDelay: time.Hour},
		openai.Options{Timeout: 2 * time.Second})
	st := open(t, testContext(t), r, audio.Telephone)
	feed(t, st, audio.Telephone, speech(audio.Telephone, 300*time.Millisecond))
	_ = st.Finalize()
	feed(t, st, audio.Telephone, speech(audio.Telephone, 300*time.Millisecond))
	_ = st.Finalize()
	if got := finals(t, st, 2); got[0] != "" || got[1] != "on time" {
		t.Errorf("finals %q, want an empty one then \"on time\"", got)
	}
	if n := len(fake.Uploads()); n != 2 {
		t.Errorf("%d requests, want 2 (a timeout is not retried)", n)
	}
	_, err := r.Transcribe(testContext(t), audio.Telephone, speech(audio.Telephone, 300*time.Millisecond))
	if err != nil {
		t.Errorf("script exhausted: %v", err)
	}
	fake.Script("SLOW")
	_, err = r.Transcribe(testContext(t), audio.Telephone, speech(audio.Telephone, 300*time.Millisecond))
	if pe := providerError(t, err); pe.Kind != voice.KindTimeout {
		t.Errorf("Transcribe past the timeout: %v, want timeout", err)
	}
}

func TestOddAnswers(t *testing.T) {
	cases := []struct {
		name     string
		status   int
		ctype    string
		body     string
		text     string
		kind     voice.ErrorKind
		message  string
		attempts int32
	}{
		{"text/plain answer", 200, "text/plain; charset=utf-8", " Hello there.\n", "Hello there.", 0, "", 1},
		{"verbose_json answer", 200, "application/json", `{"task":"transcribe","language":"english","duration":1.0,"text":" Hi.","segments":[]}`, "Hi.", 0, "", 1},
		{"JSON without a content type", 200, "", `{"text":"Yes."}`, "Yes.", 0, "", 1},
		{"no text field", 200, "application/json", `{"transcript":"Hi."}`, "", voice.KindProtocol, "no text", 1},
		{"HTML", 200, "text/html", `<html>login</html>`, "", voice.KindProtocol, "unreadable", 1},
		{"speaches 403", 403, "application/json", `{"detail":"Invalid API key. The provided API key is incorrect."}`, "", voice.KindAuth, "Invalid API key", 1},
		{"FastAPI 422", 422, "application/json", `{"detail":[{"loc":["body","model"],"msg":"Field required","type":"missing"}]}`, "", voice.KindBadInput, "Field required", 1},
		{"unsupported media 415", 415, "application/json", `{"detail":"Failed to decode audio."}`, "", voice.KindBadInput, "Failed to decode audio.", 1},
		{"plain 503", 503, "text/plain", "upstream down", "", voice.KindTransient, "upstream down", 2},
		{"gateway timeout", 504, "text/html", "<html>timeout</html>", "", voice.KindTimeout, "Gateway Timeout", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var attempts atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				attempts.Add(1)
				if r.URL.Path != "/v1/audio/transcriptions" {
					t.Errorf("path %s", r.URL.Path)
				}
				_, _ = io.Copy(io.Discard, r.Body)
				if c.ctype != "" {
					w.Header().Set("Content-Type", c.ctype)
				} else {
					w.Header()["Content-Type"] = nil
				}
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			}))
			defer srv.Close()
			r, err := openai.New(openai.Options{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
			if err != nil {
				t.Fatal(err)
			}
			text, err := r.Transcribe(testContext(t), audio.Telephone, speech(audio.Telephone, 300*time.Millisecond))
			if c.kind == 0 {
				if err != nil || text != c.text {
					t.Errorf("got %q, %v; want %q", text, err, c.text)
				}
			} else if pe := providerError(t, err); pe.Kind != c.kind || !strings.Contains(err.Error(), c.message) {
				t.Errorf("got %v, want kind %v with %q", err, c.kind, c.message)
			}
			if n := attempts.Load(); n != c.attempts {
				t.Errorf("%d attempts, want %d", n, c.attempts)
			}
		})
	}
}

func TestNoKeyForSelfHosted(t *testing.T) {
	fake, err := fakeopenaispeech.Start(fakeopenaispeech.Options{Transcripts: []string{"local"}})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	r, err := openai.New(openai.Options{BaseURL: fake.URL(), Model: "Systran/faster-whisper-small", HTTPClient: fake.Client()})
	if err != nil {
		t.Fatal(err)
	}
	text, err := r.Transcribe(testContext(t), audio.Telephone, speech(audio.Telephone, 300*time.Millisecond))
	if err != nil || text != "local" {
		t.Fatalf("Transcribe: %q, %v", text, err)
	}
	if u := fake.Uploads()[0]; u.KeyPresent || u.Model != "Systran/faster-whisper-small" || u.Language != "" {
		t.Errorf("upload = %+v, want no Authorization, the model as configured and no language", u)
	}
}

// hungStream opens a stream whose first upload hangs at the server, and waits until the
// server holds it.
func hungStream(t *testing.T, ctx context.Context) (*fakeopenaispeech.Server, voice.RecognizerStream) {
	t.Helper()
	fake, r := setup(t, fakeopenaispeech.Options{Transcripts: []string{"HANG", "after"}}, openai.Options{Timeout: time.Hour})
	st := open(t, ctx, r, audio.Telephone)
	feed(t, st, audio.Telephone, speech(audio.Telephone, 500*time.Millisecond))
	_ = st.Finalize()
	held := func(ups []fakeopenaispeech.Upload, _ []fakeopenaispeech.Speech) bool {
		return len(ups) == 1 && ups[0].Held
	}
	if err := fake.WaitFor(testContext(t), held); err != nil {
		t.Fatal(err)
	}
	return fake, st
}

// returns runs f and waits for it to return; a blocked f fails the test at hangGuard. It
// proves f does not wait for something that would hold it until Close, however slow the
// machine, where a limit on how long f took would also measure the machine.
func returns(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		t.Fatalf("%s still blocked after %v", what, hangGuard)
		return nil
	}
}

func TestWriteNeverBlocksWhileTheServerHangs(t *testing.T) {
	fake, st := hungStream(t, context.Background())
	frame := speech(audio.Telephone, 20*time.Millisecond)
	// The upload hangs until the stream is closed: Writes that waited for it would never end.
	err := returns(t, "a minute of Writes while the server hangs", func() error {
		for i := range 3000 { // a minute of audio, finalized every 3 s
			if err := st.Write(frame); err != nil {
				return fmt.Errorf("Write: %w", err)
			}
			if i%150 == 149 {
				if err := st.Finalize(); err != nil {
					return fmt.Errorf("Finalize: %w", err)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case tr := <-st.Results():
		t.Errorf("transcript %+v while the upload hangs", tr)
	default:
	}
	if err := returns(t, "Close with an upload in flight", st.Close); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed(t, st)
	if err := fake.AwaitUploadsDone(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	if ups := fake.Uploads(); len(ups) != 1 || !ups[0].Aborted {
		t.Errorf("uploads = %+v, want the one hung upload, aborted", ups)
	}
}

func TestBacklogKeepsOneFinalPerFinalize(t *testing.T) {
	lg := &logs{}
	fake, r := setup(t, fakeopenaispeech.Options{Transcripts: []string{"HANG", "a", "b", "c", "d", "unused"}},
		openai.Options{Timeout: 2 * time.Second, Logger: slog.New(lg)})
	st := open(t, testContext(t), r, audio.Telephone)
	feed(t, st, audio.Telephone, speech(audio.Telephone, 200*time.Millisecond))
	_ = st.Finalize()
	held := func(ups []fakeopenaispeech.Upload, _ []fakeopenaispeech.Speech) bool {
		return len(ups) == 1 && ups[0].Held
	}
	if err := fake.WaitFor(testContext(t), held); err != nil {
		t.Fatal(err)
	}
	// Ten more utterances while the first upload hangs until it times out: only the
	// newest four keep their audio.
	for i := range 10 {
		feed(t, st, audio.Telephone, speech(audio.Telephone, time.Duration(300+10*i)*time.Millisecond))
		_ = st.Finalize()
	}
	got := finals(t, st, 11)
	if want := []string{"", "", "", "", "", "", "", "a", "b", "c", "d"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("finals %q, want %q", got, want)
	}
	ups := fake.Uploads()
	if len(ups) != 5 {
		t.Fatalf("%d uploads, want the hung one and the newest four", len(ups))
	}
	for i, u := range ups[1:] {
		if want := time.Duration(360+10*i) * time.Millisecond; u.Duration != want {
			t.Errorf("upload %d lasts %v, want %v", i+1, u.Duration, want)
		}
	}
	if _, ok := lg.find(slog.LevelWarn, "falling behind"); !ok {
		t.Error("shedding was not logged")
	}
	if attrs, ok := lg.find(slog.LevelWarn, "utterance is lost"); !ok || attrs["kind"] != "timeout" {
		t.Errorf("the timeout was logged as %v (found %v)", attrs, ok)
	}
}

func TestParentCancelEndsTheStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake, st := hungStream(t, ctx)
	cancel()
	closed(t, st)
	if pe := providerError(t, st.Close()); pe.Kind != voice.KindCanceled {
		t.Errorf("Close after cancel: %v, want canceled", pe)
	}
	if err := fake.AwaitUploadsDone(testContext(t), 1); err != nil {
		t.Fatal(err)
	}
	if !fake.Uploads()[0].Aborted {
		t.Error("the upload in flight was not cancelled")
	}
}

func TestCloseIsIdempotentAndConcurrent(t *testing.T) {
	_, st := hungStream(t, context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if err := st.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	wg.Wait()
	if err := st.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
}

func TestCallerStopsReading(t *testing.T) {
	fake, r := setup(t, fakeopenaispeech.Options{}, openai.Options{})
	for range 40 {
		fake.Script("x")
	}
	st := open(t, testContext(t), r, audio.Telephone)
	for range 40 { // more finals than Results holds, never read
		feed(t, st, audio.Telephone, speech(audio.Telephone, 150*time.Millisecond))
		_ = st.Finalize()
	}
	done := make(chan error, 1)
	go func() { done <- st.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Close hung with Results full")
	}
}
