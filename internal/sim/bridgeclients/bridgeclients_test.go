package bridgeclients

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/testpeer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	token = "hs-bridge-test-token"
	model = "handset-agent"
)

// bodies records the raw request bodies a server received, to check what a client sent
// beyond what the fake records (user, extra fields).
type bodies struct {
	mu   sync.Mutex
	list []map[string]any
}

func (b *bodies) all() []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.list)
}

// serve starts the fake OpenAI server (with a key and one model) behind a recorder of
// request bodies, closed at the end of the test.
func serve(t *testing.T) (*fakeopenai.Server, *bodies, string) {
	t.Helper()
	fake := fakeopenai.New(fakeopenai.Options{Key: token, Models: []string{model}})
	rec := &bodies{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var body map[string]any
		if json.Unmarshal(data, &body) == nil {
			rec.mu.Lock()
			rec.list = append(rec.list, body)
			rec.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		fake.Close()
		srv.Close()
	})
	return fake, rec, srv.URL + "/v1"
}

func request(baseURL, said string) Request {
	return Request{
		BaseURL: baseURL,
		Token:   token,
		Model:   model,
		Messages: []Message{
			{Role: "system", Content: "You are a phone agent."},
			{Role: "user", Content: said},
		},
	}
}

// wantReply is the fake's answer to said.
func wantReply(fake *fakeopenai.Server, said string) string {
	return fake.ReplyText([]fakeopenai.Message{{Role: "user", Content: said}})
}

// checkTimings wants a first token and a total that make sense.
func checkTimings(t *testing.T, res Result) {
	t.Helper()
	if res.FirstTokenMS <= 0 || res.TotalMS < res.FirstTokenMS {
		t.Errorf("timings: first token %.3f ms, total %.3f ms", res.FirstTokenMS, res.TotalMS)
	}
}

// oneRequest wants exactly one chat request at the fake: the clients must not retry.
func oneRequest(t *testing.T, fake *fakeopenai.Server) fakeopenai.Request {
	t.Helper()
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("fake got %d chat requests, want 1 (no retries)", len(reqs))
	}
	return reqs[0]
}

func TestInstalledVersions(t *testing.T) {
	_, modules := install(t, "openai")
	for pkg, want := range map[string]string{
		"openai":                        OpenAIVersion,
		"@livekit/agents":               LiveKitAgentsVersion,
		"@livekit/agents-plugin-openai": LiveKitAgentsVersion,
	} {
		data, err := os.ReadFile(filepath.Join(modules, pkg, "package.json"))
		if err != nil {
			t.Fatal(err)
		}
		var p struct{ Version string }
		if err := json.Unmarshal(data, &p); err != nil {
			t.Fatal(err)
		}
		if p.Version != want {
			t.Errorf("%s %s installed, want %s", pkg, p.Version, want)
		}
	}
	// LiveKit maps the SDK's errors with instanceof: it must share the one openai copy.
	for _, pkg := range []string{"@livekit/agents", "@livekit/agents-plugin-openai"} {
		if _, err := os.Stat(filepath.Join(modules, pkg, "node_modules", "openai")); err == nil {
			t.Errorf("%s has its own copy of openai", pkg)
		}
	}
}

func TestOpenAIComplete(t *testing.T) {
	testpeer.Slow(t, "runs the openai SDK in Node")
	t.Parallel()
	fake, rec, url := serve(t)
	said := "What are your opening hours?"
	r := request(url, said)
	r.User = "caller-42"
	r.Headers = map[string]string{"X-Handset-Session": "sess-1"}
	r.Extra = map[string]any{"metadata": map[string]any{"call_id": "c-1"}}
	res := OpenAIComplete(t, r)
	if res.Error != nil {
		t.Fatalf("error: %v\n%s", res.Error, res.Stderr)
	}
	if want := wantReply(fake, said); res.Text != want {
		t.Errorf("text %q, want %q", res.Text, want)
	}
	if res.FinishReason != "stop" || len(res.Deltas) != 0 || res.Aborted {
		t.Errorf("finish %q, deltas %q, aborted %v", res.FinishReason, res.Deltas, res.Aborted)
	}
	if res.Usage == nil || res.Usage.CompletionTokens == 0 || res.Usage.TotalTokens != res.Usage.PromptTokens+res.Usage.CompletionTokens {
		t.Errorf("usage %+v", res.Usage)
	}
	checkTimings(t, res)
	got := oneRequest(t, fake)
	if got.Stream || got.Model != model || len(got.Messages) != 2 || got.Messages[1].Content != said {
		t.Errorf("fake saw %+v", got)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer "+token {
		t.Errorf("Authorization %q", h)
	}
	if h := got.Header.Get("X-Handset-Session"); h != "sess-1" {
		t.Errorf("X-Handset-Session %q", h)
	}
	body := rec.all()[0]
	if body["user"] != "caller-42" {
		t.Errorf("user %v", body["user"])
	}
	if md, _ := body["metadata"].(map[string]any); md["call_id"] != "c-1" {
		t.Errorf("metadata %v", body["metadata"])
	}
}

func TestOpenAIStream(t *testing.T) {
	testpeer.Slow(t, "runs the openai SDK in Node")
	t.Parallel()
	fake, rec, url := serve(t)
	said := "Book me a table for two."
	r := request(url, said)
	r.Extra = map[string]any{"stream_options": map[string]any{"include_usage": true}}
	res := OpenAIStream(t, r)
	if res.Error != nil {
		t.Fatalf("error: %v\n%s", res.Error, res.Stderr)
	}
	want := wantReply(fake, said)
	if res.Text != want || strings.Join(res.Deltas, "") != want {
		t.Errorf("text %q, deltas %q, want %q", res.Text, res.Deltas, want)
	}
	if len(res.Deltas) < 3 {
		t.Errorf("only %d deltas: %q", len(res.Deltas), res.Deltas)
	}
	if res.FinishReason != "stop" || res.Aborted {
		t.Errorf("finish %q, aborted %v", res.FinishReason, res.Aborted)
	}
	if res.Usage == nil || res.Usage.CompletionTokens != len(strings.Fields(want)) {
		t.Errorf("usage %+v", res.Usage)
	}
	checkTimings(t, res)
	if got := oneRequest(t, fake); !got.Stream || !got.IncludeUsage {
		t.Errorf("fake saw stream %v, include_usage %v", got.Stream, got.IncludeUsage)
	}
	if _, ok := rec.all()[0]["user"]; ok {
		t.Error("user sent although empty")
	}
}

func TestOpenAIErrors(t *testing.T) {
	testpeer.Slow(t, "runs the openai SDK in Node")
	t.Parallel()
	for _, tc := range []struct {
		name   string
		stream bool
		said   string
		token  string
		status int
		typ    string
		code   string
		msg    string
	}{
		{"500", false, "please FAIL500", token, 500, "server_error", "", "The server had an error"},
		{"500 stream", true, "please FAIL500", token, 500, "server_error", "", "The server had an error"},
		{"400 stream", true, "please FAIL400", token, 400, "invalid_request_error", "", "the fake was asked to fail"},
		{"bad token", false, "hello", "wrong-token-123456", 401, "invalid_request_error", "invalid_api_key", "Incorrect API key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake, _, url := serve(t)
			r := request(url, tc.said)
			r.Token = tc.token
			call := OpenAIComplete
			if tc.stream {
				call = OpenAIStream
			}
			res := call(t, r)
			e := res.Error
			if e == nil {
				t.Fatalf("no error; result %+v", res)
			}
			if e.Status != tc.status || e.Type != tc.typ || e.Code != tc.code || !strings.Contains(e.Message, tc.msg) {
				t.Errorf("error %v, want status %d type %q code %q message with %q", e, tc.status, tc.typ, tc.code, tc.msg)
			}
			if res.Text != "" {
				t.Errorf("text %q with an error", res.Text)
			}
			oneRequest(t, fake)
		})
	}
}

func TestOpenAIConnectionRefused(t *testing.T) {
	testpeer.Slow(t, "runs the openai SDK in Node")
	t.Parallel()
	res := OpenAIComplete(t, request(testpeer.NowhereURL(t)+"/v1", "hello"))
	if res.Error == nil || res.Error.Status != 0 || res.Error.Name != "APIConnectionError" {
		t.Fatalf("error %v, want an APIConnectionError without status", res.Error)
	}
}

func TestOpenAIAbortAfterFirstToken(t *testing.T) {
	testpeer.Slow(t, "runs the openai SDK in Node")
	t.Parallel()
	fake, _, url := serve(t)
	// STALL holds the stream open after the first sentence: only the abort ends it.
	r := request(url, "tell me a story STALL")
	r.AbortAfterFirstToken = true
	res := OpenAIStream(t, r)
	if res.Error != nil {
		t.Fatalf("error: %v\n%s", res.Error, res.Stderr)
	}
	if !res.Aborted || len(res.Deltas) != 1 || res.Text != res.Deltas[0] || res.FinishReason != "" {
		t.Errorf("aborted %v, deltas %q, text %q, finish %q", res.Aborted, res.Deltas, res.Text, res.FinishReason)
	}
	checkTimings(t, res)
	awaitAborted(t, fake)
}

// awaitAborted wants the fake to have seen its one client go away mid-reply.
func awaitAborted(t *testing.T, fake *fakeopenai.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fake.AwaitAborted(ctx, 1); err != nil {
		t.Fatalf("the fake never saw the client go away: %v", err)
	}
	if got := oneRequest(t, fake); !got.Aborted {
		t.Errorf("request not marked aborted: %+v", got)
	}
}

func TestOpenAIModels(t *testing.T) {
	testpeer.Slow(t, "runs the openai SDK in Node")
	t.Parallel()
	_, _, url := serve(t)
	ids, e := OpenAIModels(t, url, token)
	if e != nil || !slices.Equal(ids, []string{model}) {
		t.Errorf("models %q, error %v", ids, e)
	}
	ids, e = OpenAIModels(t, url, "wrong-token-123456")
	if e == nil || e.Status != 401 || e.Code != "invalid_api_key" || len(ids) != 0 {
		t.Errorf("with a wrong token: models %q, error %v", ids, e)
	}
}

func TestLiveKitStream(t *testing.T) {
	testpeer.Slow(t, "runs LiveKit's agents framework in Node")
	t.Parallel()
	fake, rec, url := serve(t)
	said := "Can you hear me?"
	r := request(url, said)
	r.User = "caller-7"
	r.Headers = map[string]string{"X-Handset-Session": "sess-lk"}
	r.Extra = map[string]any{"metadata": map[string]any{"room": "r-1"}}
	res := LiveKitStream(t, r)
	if res.Error != nil {
		t.Fatalf("error: %v\n%s", res.Error, res.Stderr)
	}
	want := wantReply(fake, said)
	if res.Text != want || len(res.Deltas) < 3 || res.Aborted {
		t.Errorf("text %q, deltas %q, aborted %v; want %q", res.Text, res.Deltas, res.Aborted, want)
	}
	// The plugin always asks for the usage chunk.
	if res.Usage == nil || res.Usage.CompletionTokens != len(strings.Fields(want)) {
		t.Errorf("usage %+v", res.Usage)
	}
	checkTimings(t, res)
	got := oneRequest(t, fake)
	if !got.Stream || got.Model != model || len(got.Messages) != 2 || got.Messages[0].Role != "system" || got.Messages[1].Content != said {
		t.Errorf("fake saw %+v", got)
	}
	if h := got.Header.Get("Authorization"); h != "Bearer "+token {
		t.Errorf("Authorization %q", h)
	}
	if h := got.Header.Get("X-Handset-Session"); h != "sess-lk" {
		t.Errorf("X-Handset-Session %q", h)
	}
	body := rec.all()[0]
	if body["user"] != "caller-7" {
		t.Errorf("user %v", body["user"])
	}
	if md, _ := body["metadata"].(map[string]any); md["room"] != "r-1" {
		t.Errorf("metadata %v", body["metadata"])
	}
}

func TestLiveKitError(t *testing.T) {
	testpeer.Slow(t, "runs LiveKit's agents framework in Node")
	t.Parallel()
	fake, _, url := serve(t)
	res := LiveKitStream(t, request(url, "please FAIL500"))
	e := res.Error
	if e == nil {
		t.Fatalf("no error; result %+v", res)
	}
	if e.Status != 500 || e.Type != "server_error" || !strings.Contains(e.Message, "The server had an error") {
		t.Errorf("error %v", e)
	}
	oneRequest(t, fake)
}

func TestLiveKitAbortAfterFirstToken(t *testing.T) {
	testpeer.Slow(t, "runs LiveKit's agents framework in Node")
	t.Parallel()
	fake, _, url := serve(t)
	r := request(url, "tell me a story STALL")
	r.AbortAfterFirstToken = true
	res := LiveKitStream(t, r)
	if res.Error != nil {
		t.Fatalf("error: %v\n%s", res.Error, res.Stderr)
	}
	if !res.Aborted || len(res.Deltas) != 1 {
		t.Errorf("aborted %v, deltas %q", res.Aborted, res.Deltas)
	}
	awaitAborted(t, fake)
}

// fatalRecorder is a testing.TB whose Fatal ends only the calling goroutine, recording the
// message, so a test can see how the harness fails.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestScriptCrashFailsWithStderr(t *testing.T) {
	install(t, "openai") // skips here, on the test's goroutine, when the clients are missing
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(rec, "no-such-script.mjs", "openai", "complete", Request{})
		rec.msg = "run returned"
	}()
	<-done
	if !strings.Contains(rec.msg, "crashed") || !strings.Contains(rec.msg, "Cannot find module") {
		t.Errorf("harness failed with %q, want the crash and node's stderr", rec.msg)
	}
}
