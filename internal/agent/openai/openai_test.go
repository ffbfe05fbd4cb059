package openai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience bounds how long a test waits for something that should happen at once; it is a
// hang guard, never a timing assertion.
const patience = 10 * time.Second

// setup serves a fake runtime and returns an agent pointed at it. opts.BaseURL,
// HTTPClient and (when empty) Model are filled in.
func setup(t *testing.T, fopts fakeopenai.Options, opts Options) (*fakeopenai.Server, *Agent) {
	t.Helper()
	fake := fakeopenai.New(fopts)
	return fake, agentFor(t, fake, opts)
}

func agentFor(t *testing.T, h http.Handler, opts Options) *Agent {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		if f, ok := h.(*fakeopenai.Server); ok {
			f.Close()
		}
		srv.Close()
	})
	opts.BaseURL = srv.URL + "/v1"
	if opts.HTTPClient == nil {
		opts.HTTPClient = srv.Client()
	}
	if opts.Model == "" {
		opts.Model = "m"
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func user(text string) voice.TurnRequest {
	return voice.TurnRequest{CallID: "c_test", Turn: 1, History: []voice.Message{{Role: voice.RoleUser, Content: text}}}
}

// drain reads s to its end and returns the text, the number of text chunks and the error
// that ended it (nil for io.EOF).
func drain(t *testing.T, s voice.ReplyStream) (string, int, error) {
	t.Helper()
	var b strings.Builder
	n := 0
	for range 100000 {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			return b.String(), n, nil
		}
		if err != nil {
			return b.String(), n, err
		}
		if c.Text != "" {
			n++
			b.WriteString(c.Text)
		}
	}
	t.Fatal("stream never ended")
	return "", 0, nil
}

// providerError asserts err is a *voice.ProviderError of kind and returns it.
func providerError(t *testing.T, err error, kind voice.ErrorKind) *voice.ProviderError {
	t.Helper()
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *voice.ProviderError", err, err)
	}
	if pe.Kind != kind {
		t.Fatalf("error %v has kind %v, want %v", err, pe.Kind, kind)
	}
	return pe
}

func TestReplyStreamsFakeReply(t *testing.T) {
	fake, a := setup(t, fakeopenai.Options{}, Options{})
	req := user("What is the weather like in Lisbon?")
	s, err := a.Reply(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	text, n, err := drain(t, s)
	if err != nil {
		t.Fatal(err)
	}
	want := fake.ReplyText([]fakeopenai.Message{{Role: "user", Content: req.History[0].Content}})
	if text != want {
		t.Errorf("reply %q, want %q", text, want)
	}
	if n < 4 {
		t.Errorf("reply came in %d chunks; want it streamed", n)
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next after the end = %v, want io.EOF", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close after the end: %v", err)
	}
	if fake.AwaitDone(t.Context(), 1) != nil || fake.Aborted() != 0 {
		t.Errorf("a complete reply was recorded as aborted")
	}
}

func TestRequestShape(t *testing.T) {
	fake, a := setup(t, fakeopenai.Options{Key: "sk-test"}, Options{
		Key:          "sk-test",
		Model:        "hermes-agent",
		SystemPrompt: "You are on the phone. Be brief.",
		Headers:      map[string]string{"X-Static": "s", "X-Hermes-Session-Id": "static"},
		HeadersFor: func(_ context.Context, r voice.TurnRequest) map[string]string {
			return map[string]string{"X-Hermes-Session-Id": "handset-" + string(r.CallID), "X-Turn": "turn"}
		},
	})
	history := []voice.Message{
		{Role: voice.RoleUser, Content: "Hi."},
		{Role: voice.RoleAssistant, Content: "Hello, how can I help? " + voice.InterruptedMarker},
		{Role: voice.RoleUser, Content: "Book a table."},
	}
	s, err := a.Reply(t.Context(), voice.TurnRequest{CallID: "c_42", Turn: 2, History: history})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := drain(t, s); err != nil {
		t.Fatal(err)
	}
	s.Close()
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	got := reqs[0]
	want := []fakeopenai.Message{
		{Role: "system", Content: "You are on the phone. Be brief."},
		{Role: "user", Content: "Hi."},
		{Role: "assistant", Content: "Hello, how can I help? " + voice.InterruptedMarker},
		{Role: "user", Content: "Book a table."},
	}
	if diff := cmp.Diff(want, got.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if got.Model != "hermes-agent" || !got.Stream {
		t.Errorf("model %q stream %v", got.Model, got.Stream)
	}
	for name, want := range map[string]string{
		"Authorization":       "Bearer sk-test",
		"Accept":              "text/event-stream",
		"Content-Type":        "application/json",
		"X-Static":            "s",
		"X-Hermes-Session-Id": "handset-c_42",
		"X-Turn":              "turn",
	} {
		if v := got.Header.Values(name); len(v) != 1 || v[0] != want {
			t.Errorf("header %s = %q, want [%q]", name, v, want)
		}
	}
}

func TestNoKeyNoSystemPrompt(t *testing.T) {
	fake, a := setup(t, fakeopenai.Options{}, Options{})
	s, err := a.Reply(t.Context(), user("hi"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := fake.AwaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	got := fake.Requests()[0]
	if h := got.Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent without a key", h)
	}
	if len(got.Messages) != 1 || got.Messages[0].Role != "user" {
		t.Errorf("messages %+v, want only the user message", got.Messages)
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		model   string
		say     string
		kind    voice.ErrorKind
		status  int
		message string
	}{
		{"server error", "k", "m", "FAIL500", voice.KindTransient, 500, "The server had an error"},
		{"bad request", "k", "m", "FAIL400", voice.KindBadInput, 400, "asked to fail"},
		{"wrong key", "nope", "m", "hi", voice.KindAuth, 401, "Incorrect API key"},
		{"no key", "", "m", "hi", voice.KindAuth, 401, "didn't provide an API key"},
		{"unknown model", "k", "gpt-9", "hi", voice.KindBadInput, 404, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, a := setup(t, fakeopenai.Options{Key: "k", Models: []string{"m"}},
				Options{Key: tt.key, Model: tt.model, Name: "hermes"})
			s, err := a.Reply(t.Context(), user(tt.say))
			if err == nil {
				s.Close()
				t.Fatal("Reply succeeded")
			}
			pe := providerError(t, err, tt.kind)
			if pe.Status != tt.status || pe.Provider != "hermes" || pe.Op != "chat" {
				t.Errorf("error %+v", pe)
			}
			if !strings.Contains(err.Error(), tt.message) {
				t.Errorf("error %q does not carry the vendor message %q", err, tt.message)
			}
		})
	}
}

func TestLongErrorMessageTruncated(t *testing.T) {
	long := strings.Repeat("é", 500)
	a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"`+long+`","type":"rate_limit_error","code":"rate_limit_exceeded"}}`)
	}), Options{})
	_, err := a.Reply(t.Context(), user("hi"))
	pe := providerError(t, err, voice.KindQuota)
	msg := pe.Err.Error()
	if len(msg) > 260 || !strings.Contains(msg, "ééé") || !strings.Contains(msg, "…") {
		t.Errorf("message of %d bytes: %q", len(msg), msg)
	}
}

func TestTimeoutWaitingForHeaders(t *testing.T) {
	fake, a := setup(t, fakeopenai.Options{}, Options{Timeout: 50 * time.Millisecond})
	_, err := a.Reply(t.Context(), user("HANG"))
	providerError(t, err, voice.KindTimeout)
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	if err := fake.AwaitAborted(ctx, 1); err != nil {
		t.Fatalf("the fake never saw the request abandoned: %v", err)
	}
}

// The stall never ends, so the timeout always fires; it is long enough that the text
// before the stall reaches the reader before it on a loaded machine.
func TestTimeoutMidStream(t *testing.T) {
	fake, a := setup(t, fakeopenai.Options{}, Options{Timeout: time.Second})
	s, err := a.Reply(t.Context(), user("STALL please"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	text, _, err := drain(t, s)
	providerError(t, err, voice.KindTimeout)
	if text != "I heard you say: STALL please. " {
		t.Errorf("text before the stall = %q", text)
	}
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	if err := fake.AwaitAborted(ctx, 1); err != nil {
		t.Fatalf("the fake never saw the request abandoned: %v", err)
	}
}

// readGate wraps a transport so a test can wait until the client has entered its second
// Read of a response body: past the role chunk and blocked on what comes next.
type readGate struct {
	rt      http.RoundTripper
	reads   atomic.Int32
	reached chan struct{} // closed on the second Read
}

func (g *readGate) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := g.rt.RoundTrip(r)
	if err == nil {
		resp.Body = gatedBody{resp.Body, g}
	}
	return resp, err
}

type gatedBody struct {
	io.ReadCloser
	g *readGate
}

func (b gatedBody) Read(p []byte) (int, error) {
	if b.g.reads.Add(1) == 2 {
		close(b.g.reached)
	}
	return b.ReadCloser.Read(p)
}

// TestAbort: cancelling the turn's context, or closing the stream, while the runtime is
// silent (HANG: no headers yet; SLOW: mid-stream) returns a canceled error at once, never a
// transient one, and the runtime sees the request go away.
func TestAbort(t *testing.T) {
	for _, tc := range []struct {
		name, say string
		useClose  bool
	}{
		{"cancel during HANG", "HANG", false},
		{"cancel during SLOW", "SLOW please", false},
		{"Close during SLOW", "SLOW please", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakeopenai.New(fakeopenai.Options{SlowEvery: time.Hour})
			srv := httptest.NewServer(fake)
			t.Cleanup(func() { fake.Close(); srv.Close() })
			gate := &readGate{rt: srv.Client().Transport, reached: make(chan struct{})}
			a := agentFor(t, fake, Options{Timeout: time.Hour, HTTPClient: &http.Client{Transport: gate}})

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			result := make(chan error, 1)
			var stream voice.ReplyStream
			if tc.say == "HANG" {
				go func() {
					_, err := a.Reply(ctx, user(tc.say))
					result <- err
				}()
				if err := fake.AwaitRequests(t.Context(), 1); err != nil {
					t.Fatal(err)
				}
			} else {
				s, err := a.Reply(ctx, user(tc.say))
				if err != nil {
					t.Fatal(err)
				}
				stream = s
				defer s.Close()
				go func() {
					_, _, err := drain(t, s)
					result <- err
				}()
				<-gate.reached // past the role chunk, waiting for the first word
			}
			if tc.useClose {
				stream.Close()
			} else {
				cancel()
			}
			select {
			case err := <-result:
				providerError(t, err, voice.KindCanceled)
				if !errors.Is(err, context.Canceled) || voice.KindOf(err) != voice.KindCanceled {
					t.Errorf("error %v does not wrap context.Canceled", err)
				}
			case <-time.After(patience):
				t.Fatal("the turn did not end after the abort")
			}
			if stream != nil {
				if _, err := stream.Next(); voice.KindOf(err) != voice.KindCanceled {
					t.Errorf("Next after abort = %v, want canceled again", err)
				}
				if err := stream.Close(); err != nil {
					t.Errorf("second Close: %v", err)
				}
			}
			ctx2, cancel2 := context.WithTimeout(t.Context(), patience)
			defer cancel2()
			if err := fake.AwaitAborted(ctx2, 1); err != nil {
				t.Fatalf("the fake never saw the request abandoned: %v", err)
			}
		})
	}
}

func TestInStreamError(t *testing.T) {
	_, a := setup(t, fakeopenai.Options{}, Options{})
	s, err := a.Reply(t.Context(), user("FAILMID"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	text, _, err := drain(t, s)
	if text != "I heard you say: FAILMID. " {
		t.Errorf("text before the error = %q", text)
	}
	pe := providerError(t, err, voice.KindTransient)
	if !strings.Contains(pe.Error(), "The server had an error") {
		t.Errorf("error %q lacks the vendor message", pe)
	}
}

func TestStreamEndsEarly(t *testing.T) {
	_, a := setup(t, fakeopenai.Options{}, Options{})
	s, err := a.Reply(t.Context(), user("CUTOFF"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	text, _, err := drain(t, s)
	if text != "I heard you say: CUTOFF. " {
		t.Errorf("text = %q", text)
	}
	pe := providerError(t, err, voice.KindTransient)
	if !strings.Contains(pe.Error(), "ended early") {
		t.Errorf("error %q", pe)
	}
}

func TestKeepaliveComments(t *testing.T) {
	fake, a := setup(t, fakeopenai.Options{}, Options{})
	s, err := a.Reply(t.Context(), user("KEEPALIVE me"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	text, _, err := drain(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if want := fake.ReplyText([]fakeopenai.Message{{Role: "user", Content: "KEEPALIVE me"}}); text != want {
		t.Errorf("text %q, want %q", text, want)
	}
}

// TestJSONFallback: a runtime that ignores "stream": true and answers one chat.completion.
// TestUsageReported: every streamed turn asks for the usage chunk
// (stream_options.include_usage), and the runtime's count comes out as the stream's Usage.
func TestUsageReported(t *testing.T) {
	fake, a := setup(t, fakeopenai.Options{}, Options{SystemPrompt: "Be brief."})
	s, err := a.Reply(t.Context(), user("how late are you open"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chunks, err := collect(s)
	if err != nil {
		t.Fatal(err)
	}
	var got voice.Usage
	for _, c := range chunks {
		if c.Usage.Reported() {
			got = c.Usage
		}
	}
	reply := fake.ReplyText([]fakeopenai.Message{{Role: "user", Content: "how late are you open"}})
	// The fake counts words: "Be brief." and the caller's five.
	if want := (voice.Usage{InputTokens: 7, OutputTokens: len(strings.Fields(reply))}); got != want {
		t.Errorf("usage %+v, want %+v", got, want)
	}
	if r := fake.Requests(); len(r) != 1 || !r[0].IncludeUsage {
		t.Errorf("the request did not ask for usage (stream_options.include_usage): %+v", r)
	}
}

// TestUsageRefusedByTheRuntime: a runtime that rejects stream_options (a strict server)
// still answers: the turn is sent again without it, and so is every later turn.
func TestUsageRefusedByTheRuntime(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.Options{})
	var refused atomic.Int32
	strict := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), "stream_options") {
			refused.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"Unrecognized request argument supplied: stream_options","type":"invalid_request_error"}}`)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		fake.ServeHTTP(w, r)
	})
	a := agentFor(t, strict, Options{})
	for turn := range 2 {
		s, err := a.Reply(t.Context(), user("hello"))
		if err != nil {
			t.Fatalf("turn %d: %v", turn+1, err)
		}
		text, _, err := drain(t, s)
		s.Close()
		if err != nil || text == "" {
			t.Fatalf("turn %d: %q, %v", turn+1, text, err)
		}
	}
	if n, got := refused.Load(), len(fake.Requests()); n != 1 || got != 2 {
		t.Errorf("%d requests refused and %d answered, want 1 and 2: only the first turn tries stream_options", n, got)
	}
}

// TestOtherBadRequestsAreNotRetried: a 400 that is not about stream_options fails the turn
// at once, as before.
func TestOtherBadRequestsAreNotRetried(t *testing.T) {
	fake, a := setup(t, fakeopenai.Options{}, Options{})
	_, err := a.Reply(t.Context(), user("FAIL400 please"))
	providerError(t, err, voice.KindBadInput)
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestJSONFallback(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.Options{})
	nonStreaming := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(strings.Replace(string(body), `"stream":true`, `"stream":false`, 1)))
		r.ContentLength = -1
		fake.ServeHTTP(w, r)
	})
	a := agentFor(t, nonStreaming, Options{})
	s, err := a.Reply(t.Context(), user("no streaming here"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	text, n, err := drain(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if want := "I heard you say: no streaming here. What else can I do for you?"; text != want || n != 1 {
		t.Errorf("text %q in %d chunks, want %q in one", text, n, want)
	}
	if r := fake.Requests(); len(r) != 1 || r[0].Stream {
		t.Fatalf("the fake did not answer a non-streaming request: %+v", r)
	}
}

func TestEmptyHistory(t *testing.T) {
	fake, a := setup(t, fakeopenai.Options{}, Options{})
	_, err := a.Reply(t.Context(), voice.TurnRequest{})
	providerError(t, err, voice.KindBadInput)
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests sent for an empty history", n)
	}
}

func TestBadPerTurnHeader(t *testing.T) {
	_, a := setup(t, fakeopenai.Options{}, Options{HeadersFor: func(context.Context, voice.TurnRequest) map[string]string {
		return map[string]string{"X-Session": "a\r\nX-Evil: 1"}
	}})
	_, err := a.Reply(t.Context(), user("hi"))
	providerError(t, err, voice.KindBadInput)
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	a, err := New(Options{BaseURL: url + "/v1?token=secret", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Reply(t.Context(), user("hi"))
	providerError(t, err, voice.KindTransient)
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error leaks the URL's query: %v", err)
	}
}

func TestNew(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"no model", Options{}},
		{"bad scheme", Options{Model: "m", BaseURL: "ftp://x"}},
		{"no host", Options{Model: "m", BaseURL: "http://"}},
		{"bad header name", Options{Model: "m", Headers: map[string]string{"Bad Name": "v"}}},
		{"bad header value", Options{Model: "m", Headers: map[string]string{"X": "a\nb"}}},
		{"bad key", Options{Model: "m", Key: "k\n"}},
	} {
		if _, err := New(tc.opts); err == nil {
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
	if _, err := New(Options{BaseURL: "ftp://user:pw@h/v1?token=secret", Model: "m"}); err == nil ||
		strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "pw") {
		t.Errorf("bad URL error %v", err)
	}
	a, err := New(Options{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "openai" || a.url != "https://api.openai.com/v1/chat/completions" || a.timeout != DefaultTimeout {
		t.Errorf("defaults: name %q url %q timeout %v", a.Name(), a.url, a.timeout)
	}
	a, err = New(Options{Model: "m", BaseURL: "http://127.0.0.1:11434/v1/", Name: "ollama"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "ollama" || a.url != "http://127.0.0.1:11434/v1/chat/completions" {
		t.Errorf("name %q url %q", a.Name(), a.url)
	}
}

// The note about a caller Handset cannot identify follows the voice instructions: in the
// system message, or at the head of the caller's message for runtimes that ignore system
// messages; with no instructions it is the system message alone.
func TestCallerNote(t *testing.T) {
	sc := session.NewContext(voice.LegInfo{CallID: "c_1", Carrier: "twilio", Direction: voice.Inbound,
		From: "+15550102000", To: "+15550009999", Attestation: voice.AttestationNone}, []byte("k")).Require(session.TrustB)
	ctx := session.With(t.Context(), sc)
	for _, tc := range []struct {
		prompt string
		asUser bool
	}{{"Be brief.", false}, {"Be brief.", true}, {"", false}} {
		fake, a := setup(t, fakeopenai.Options{}, Options{SystemPrompt: tc.prompt, SystemAsUser: tc.asUser})
		s, err := a.Reply(ctx, user("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := drain(t, s); err != nil {
			t.Fatal(err)
		}
		s.Close()
		msgs := fake.Requests()[0].Messages
		want := session.Instructions(ctx, tc.prompt)
		if !strings.Contains(want, "unverified") || !strings.HasPrefix(want, tc.prompt) {
			t.Fatalf("instructions %q", want)
		}
		switch {
		case tc.asUser:
			if len(msgs) != 1 || msgs[0].Content != want+"\n\nhi" {
				t.Errorf("as user: %+v", msgs)
			}
		default:
			if len(msgs) != 2 || msgs[0].Role != "system" || msgs[0].Content != want {
				t.Errorf("prompt %q: %+v", tc.prompt, msgs)
			}
		}
		if strings.Contains(fmt.Sprint(msgs), "5550102000") {
			t.Errorf("the number was sent: %+v", msgs)
		}
	}
}

// A refusal that says when to come back keeps that in its error.
func TestRetryAfterKept(t *testing.T) {
	a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "12")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`)
	}), Options{})
	_, err := a.Reply(t.Context(), user("hi"))
	pe := providerError(t, err, voice.KindQuota)
	if pe.Status != http.StatusTooManyRequests || !strings.Contains(err.Error(), "slow down") ||
		!strings.Contains(err.Error(), "retry after 12 s") {
		t.Errorf("error %v", err)
	}
}
