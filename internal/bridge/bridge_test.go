package bridge_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/bridge"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
)

const token = "bridge-token-0123456789abcdef0123456789"

var secret = []byte("test-secret")

// rig is the bridge in front of the Hermes adapter, in front of the fake Hermes.
type rig struct {
	hermes *fakehermes.Server
	url    string // the bridge's base URL, ending in /v1
}

func newRig(t *testing.T, hermesOpts fakehermes.Options, transport string, mod func(*bridge.Options)) *rig {
	t.Helper()
	hermesOpts.Key = "hermes-key"
	fake := fakehermes.New(hermesOpts)
	hs := httptest.NewServer(fake)
	t.Cleanup(func() { fake.Close(); hs.Close() })
	agent, err := hermes.New(hermes.Options{BaseURL: hs.URL + "/v1", Key: "hermes-key", Transport: transport,
		SystemPrompt: "Speak briefly.", SessionKey: session.ByCallerHash})
	if err != nil {
		t.Fatal(err)
	}
	opts := bridge.Options{Agent: agent, Token: token, Keepalive: 100 * time.Millisecond,
		CallerHash: func(n string) string { return session.CallerHash(secret, n) }}
	if mod != nil {
		mod(&opts)
	}
	b, err := bridge.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	b.Register(mux)
	bs := httptest.NewServer(mux)
	t.Cleanup(bs.Close)
	return &rig{hermes: fake, url: bs.URL + "/v1"}
}

// post sends body to the bridge's chat completions with the token and any extra headers.
func (r *rig) post(t *testing.T, ctx context.Context, body any, headers map[string]string) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url+"/chat/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// postUntilGone sends body and reads the answer to its end, or until ctx ends (the client
// leaving); from any goroutine, so it reports nothing.
func (r *rig) postUntilGone(ctx context.Context, body any) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url+"/chat/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func chat(stream bool, msgs ...string) map[string]any {
	var m []map[string]string
	for i := 0; i+1 < len(msgs); i += 2 {
		m = append(m, map[string]string{"role": msgs[i], "content": msgs[i+1]})
	}
	return map[string]any{"model": "hermes-agent", "messages": m, "stream": stream}
}

type completion struct {
	Object  string `json:"object"`
	Choices []struct {
		Message struct {
			Role, Content string
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message, Type, Code string
	} `json:"error"`
}

func decode(t *testing.T, resp *http.Response) completion {
	t.Helper()
	defer resp.Body.Close()
	var c completion
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatalf("HTTP %d: %v", resp.StatusCode, err)
	}
	return c
}

// events reads an SSE answer: data payloads in order, and how many comments came.
func events(t *testing.T, resp *http.Response) (data []string, comments int) {
	t.Helper()
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ":"):
			comments++
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	return data, comments
}

func TestAWholeAnswer(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	resp := r.post(t, context.Background(), chat(false, "user", "What are your opening hours?"), nil)
	c := decode(t, resp)
	if resp.StatusCode != http.StatusOK || c.Object != "chat.completion" || len(c.Choices) != 1 {
		t.Fatalf("HTTP %d: %+v", resp.StatusCode, c)
	}
	want := fakehermes.ReplyText([]fakehermes.Message{{Role: "user", Content: "What are your opening hours?"}})
	if got := c.Choices[0].Message; got.Role != "assistant" || got.Content != want || c.Choices[0].FinishReason != "stop" {
		t.Errorf("message %+v (finish %q), want the assistant saying %q", got, c.Choices[0].FinishReason, want)
	}
	if c.Usage == nil || c.Usage.CompletionTokens == 0 {
		t.Errorf("usage %+v, want the runtime's count", c.Usage)
	}
}

func TestAStreamedAnswer(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	body := chat(true, "user", "Tell me about SLOW delivery")
	body["stream_options"] = map[string]bool{"include_usage": true}
	resp := r.post(t, context.Background(), body, nil)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("HTTP %d, Content-Type %q", resp.StatusCode, ct)
	}
	data, _ := events(t, resp)
	if len(data) < 4 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("events %q: want a role, text pieces, the finish, usage and [DONE]", data)
	}
	var text strings.Builder
	var roles, finishes, usages int
	for _, d := range data[:len(data)-1] {
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta        struct{ Role, Content string } `json:"delta"`
				FinishReason *string                        `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("event %q: %v", d, err)
		}
		if c.Usage != nil {
			usages++
			continue
		}
		ch := c.Choices[0]
		if ch.Delta.Role != "" {
			roles++
		}
		if ch.FinishReason != nil {
			finishes++
		}
		text.WriteString(ch.Delta.Content)
	}
	want := fakehermes.ReplyText([]fakehermes.Message{{Role: "user", Content: "Tell me about SLOW delivery"}})
	if text.String() != want || roles != 1 || finishes != 1 || usages != 1 {
		t.Errorf("text %q, %d role, %d finish and %d usage chunks; want %q and one of each", text.String(), roles, finishes, usages, want)
	}
}

func TestTheTokenIsRequired(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + "x", token} {
		for _, path := range []string{"/chat/completions", "/models"} {
			method := http.MethodPost
			if path == "/models" {
				method = http.MethodGet
			}
			req, _ := http.NewRequest(method, r.url+path, strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			c := decode(t, resp)
			if resp.StatusCode != http.StatusUnauthorized || c.Error == nil || c.Error.Code != "invalid_api_key" {
				t.Errorf("%s %s with %q: HTTP %d %+v, want 401 invalid_api_key", method, path, auth, resp.StatusCode, c.Error)
			}
		}
	}
	if n := len(r.hermes.Requests()); n != 0 {
		t.Errorf("the runtime saw %d requests", n)
	}
}

func TestBadRequestsAreRefusedWithTheirReason(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	for name, tc := range map[string]struct {
		body, want string
	}{
		"not json":         {`{"messages": [`, "not JSON"},
		"no messages":      {`{"model":"x","messages":[]}`, "at least one message"},
		"content a number": {`{"messages":[{"role":"user","content":7}]}`, "messages[0].content"},
		"no role":          {`{"messages":[{"content":"hi"}]}`, "messages[0].role"},
		"assistant last":   {`{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`, "must be the user's"},
		"only a tool":      {`{"messages":[{"role":"tool","content":"42"}]}`, "must be the user's"},
	} {
		req, _ := http.NewRequest(http.MethodPost, r.url+"/chat/completions", strings.NewReader(tc.body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		c := decode(t, resp)
		if resp.StatusCode != http.StatusBadRequest || c.Error == nil || c.Error.Type != "invalid_request_error" || !strings.Contains(c.Error.Message, tc.want) {
			t.Errorf("%s: HTTP %d %+v, want 400 saying %q", name, resp.StatusCode, c.Error, tc.want)
		}
	}
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 5<<20) + `"}]}`
	req, _ := http.NewRequest(http.MethodPost, r.url+"/chat/completions", strings.NewReader(big))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if c := decode(t, resp); resp.StatusCode != http.StatusRequestEntityTooLarge || c.Error == nil {
		t.Errorf("a 5 MB body: HTTP %d %+v, want 413", resp.StatusCode, c.Error)
	}
	if n := len(r.hermes.Requests()); n != 0 {
		t.Errorf("the runtime saw %d requests", n)
	}
}

// The session comes from the header, then metadata, Vapi's call id, then user; a phone
// number, as a session or a caller, reaches the runtime only as Handset's hash.
func TestSessionsAndCallers(t *testing.T) {
	const number = "+15551234567"
	hash := session.CallerHash(secret, number)
	for _, tc := range []struct {
		name      string
		headers   map[string]string
		extra     map[string]any
		sessionID string // X-Hermes-Session-Id the runtime saw
		key       string // X-Hermes-Session-Key (keyed by caller hash)
	}{
		{name: "header", headers: map[string]string{bridge.HeaderSession: "room-7"},
			extra: map[string]any{"user": "someone", "metadata": map[string]any{"room": "other"}}, sessionID: "handset-bridge-room-7"},
		{name: "metadata", extra: map[string]any{"user": "someone", "metadata": map[string]any{"room": "room-9"}}, sessionID: "handset-bridge-room-9"},
		{name: "vapi call", extra: map[string]any{"user": "someone", "call": map[string]any{"id": "c-123", "customer": map[string]any{"number": number}}},
			sessionID: "handset-bridge-c-123", key: "handset:" + hash},
		{name: "user", extra: map[string]any{"user": "alice"}, sessionID: "handset-bridge-alice"},
		{name: "user is a number", extra: map[string]any{"user": "+1 (555) 123-4567"}, sessionID: "handset-bridge-caller-" + hash, key: "handset:" + hash},
		{name: "odd id", headers: map[string]string{bridge.HeaderSession: "room/../../etc"}, sessionID: "handset-bridge-h-" + sha("room/../../etc")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
			body := chat(false, "user", "hello")
			for k, v := range tc.extra {
				body[k] = v
			}
			resp := r.post(t, context.Background(), body, tc.headers)
			if c := decode(t, resp); resp.StatusCode != http.StatusOK {
				t.Fatalf("HTTP %d %+v", resp.StatusCode, c.Error)
			}
			reqs := r.hermes.Requests()
			if len(reqs) == 0 {
				t.Fatal("the runtime saw no request")
			}
			got := reqs[0]
			if got.SessionID != tc.sessionID || got.SessionKey != tc.key {
				t.Errorf("session id %q, key %q; want %q, %q", got.SessionID, got.SessionKey, tc.sessionID, tc.key)
			}
			for _, q := range reqs {
				raw := q.Body + " " + q.SessionID + " " + q.SessionKey
				if strings.Contains(raw, "5551234567") || strings.Contains(raw, "555) 123") {
					t.Errorf("the runtime saw the raw number: %s", raw)
				}
			}
		})
	}
}

// System messages are the instructions, after the runtime's own prompt; tool messages and
// images are left out.
func TestInstructionsAndOmittedContent(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	body := map[string]any{"messages": []any{
		map[string]any{"role": "system", "content": "You are the front desk of the Grand Hotel."},
		map[string]any{"role": "user", "content": "Is breakfast included?"},
		map[string]any{"role": "assistant", "content": "Let me check."},
		map[string]any{"role": "tool", "content": "{\"breakfast\": true}", "tool_call_id": "x"},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "And is parking free?"},
			map[string]any{"type": "image_url", "image_url": map[string]string{"url": "data:image/png;base64,AAAA"}},
		}},
	}}
	resp := r.post(t, context.Background(), body, nil)
	if c := decode(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d %+v", resp.StatusCode, c.Error)
	}
	q := r.hermes.Requests()[0]
	var run struct {
		Input        string           `json:"input"`
		Instructions string           `json:"instructions"`
		History      []map[string]any `json:"conversation_history"`
	}
	if err := json.Unmarshal([]byte(q.Body), &run); err != nil {
		t.Fatal(err)
	}
	if run.Instructions != "Speak briefly.\n\nYou are the front desk of the Grand Hotel." {
		t.Errorf("instructions %q", run.Instructions)
	}
	if run.Input != "And is parking free?" {
		t.Errorf("input %q", run.Input)
	}
	if strings.Contains(q.Body, "breakfast\\\": true") || strings.Contains(q.Body, "base64") {
		t.Errorf("the tool result or the image reached the runtime: %s", q.Body)
	}
}

// A runtime's failure is an OpenAI error, never content, before the stream has begun and
// after.
func TestRuntimeFailuresAreErrorsNotContent(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, func(o *bridge.Options) { o.CommitAfter = time.Hour })
	for _, stream := range []bool{false, true} {
		for _, word := range []string{fakehermes.MagicFail500, fakehermes.MagicWarning, fakehermes.MagicFailRun} {
			resp := r.post(t, context.Background(), chat(stream, "user", "please "+word), nil)
			if resp.StatusCode == http.StatusOK {
				data, _ := events(t, resp)
				t.Errorf("stream %v, %s: HTTP 200 %q, want an error status", stream, word, data)
				continue
			}
			c := decode(t, resp)
			if c.Error == nil || c.Error.Type != "server_error" || len(c.Choices) != 0 {
				t.Errorf("stream %v, %s: HTTP %d %+v", stream, word, resp.StatusCode, c)
			}
		}
	}
	// once the stream has begun, a failure is an error event, and no [DONE]: a run that
	// fails after a tool, and a reply cut off midway
	r = newRig(t, fakehermes.Options{ToolDuration: 50 * time.Millisecond}, hermes.TransportRuns,
		func(o *bridge.Options) { o.CommitAfter = time.Millisecond })
	for _, words := range []string{fakehermes.MagicToolCall + " " + fakehermes.MagicFailRun, fakehermes.MagicCutoff} {
		resp := r.post(t, context.Background(), chat(true, "user", "please "+words), nil)
		data, _ := events(t, resp)
		if resp.StatusCode != http.StatusOK || len(data) == 0 || !strings.HasPrefix(data[len(data)-1], `{"error":`) ||
			strings.Contains(strings.Join(data, ""), "[DONE]") {
			t.Errorf("%s after the stream began: HTTP %d %q", words, resp.StatusCode, data)
		}
	}
}

// A tool that runs long keeps the stream alive with comments.
func TestKeepaliveWhileAToolRuns(t *testing.T) {
	r := newRig(t, fakehermes.Options{ToolDuration: 700 * time.Millisecond}, hermes.TransportRuns, nil)
	resp := r.post(t, context.Background(), chat(true, "user", "look it up TOOLCALL"), nil)
	data, comments := events(t, resp)
	if comments < 3 || len(data) == 0 || data[len(data)-1] != "[DONE]" {
		t.Errorf("%d comments and events %q, want keepalives every 100 ms through the 700 ms tool, then the reply", comments, data)
	}
}

// A client that goes away stops the runtime's run within a second.
func TestAClientThatLeavesStopsTheRun(t *testing.T) {
	for _, stream := range []bool{true, false} {
		r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.postUntilGone(ctx, chat(stream, "user", "wait for it HANG"))
		}()
		var run string
		for deadline := time.Now().Add(5 * time.Second); run == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if runs := r.hermes.Runs(); len(runs) > 0 {
				run = runs[0]
			}
		}
		if run == "" {
			t.Fatal("no run started")
		}
		time.Sleep(100 * time.Millisecond)
		left := time.Now()
		cancel()
		<-done
		for !r.hermes.Stopped(run) && time.Since(left) < 2*time.Second {
			time.Sleep(5 * time.Millisecond)
		}
		if !r.hermes.Stopped(run) {
			t.Errorf("stream %v: the run was not stopped within 2 s of the client leaving", stream)
		} else if d := time.Since(left); d > time.Second {
			t.Errorf("stream %v: the run stopped %v after the client left, want under a second", stream, d)
		}
	}
}

func TestModels(t *testing.T) {
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, nil)
	req, _ := http.NewRequest(http.MethodGet, r.url+"/models", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string
		Data   []struct{ ID, Object string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "hermes" {
		t.Errorf("HTTP %d %+v %v", resp.StatusCode, list, err)
	}
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:12])
}

// A turn longer than the server's write timeout (a tool running for minutes) still
// answers, streamed or whole: the bridge lifts the deadline while the runtime works.
func TestATurnOutlastsTheServersWriteTimeout(t *testing.T) {
	fake := fakehermes.New(fakehermes.Options{Key: "hermes-key", ToolDuration: 900 * time.Millisecond})
	hs := httptest.NewServer(fake)
	t.Cleanup(func() { fake.Close(); hs.Close() })
	agent, err := hermes.New(hermes.Options{BaseURL: hs.URL + "/v1", Key: "hermes-key"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := bridge.New(bridge.Options{Agent: agent, Token: token, Keepalive: time.Hour,
		CallerHash: func(n string) string { return session.CallerHash(secret, n) }})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	b.Register(mux)
	bs := httptest.NewUnstartedServer(mux)
	bs.Config.WriteTimeout = 300 * time.Millisecond
	bs.Start()
	t.Cleanup(bs.Close)
	r := &rig{hermes: fake, url: bs.URL + "/v1"}
	for _, stream := range []bool{false, true} {
		resp := r.post(t, context.Background(), chat(stream, "user", "look it up TOOLCALL"), nil)
		if stream {
			if data, _ := events(t, resp); len(data) == 0 || data[len(data)-1] != "[DONE]" {
				t.Errorf("stream: HTTP %d %q", resp.StatusCode, data)
			}
			continue
		}
		if c := decode(t, resp); resp.StatusCode != http.StatusOK || len(c.Choices) != 1 || c.Choices[0].Message.Content == "" {
			t.Errorf("whole: HTTP %d %+v", resp.StatusCode, c)
		}
	}
}

type outcomes struct {
	mu   sync.Mutex
	seen []string
}

func (o *outcomes) BridgeTurn(outcome string, firstText time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if outcome == "ok" && firstText <= 0 {
		outcome = "ok without a first text time"
	}
	o.seen = append(o.seen, outcome)
}

func (o *outcomes) list() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.seen)
}

// Each token has its own limits: one client over its rate or its turns at once is refused
// with 429 and Retry-After, and another token's client is not. The observer is told of
// every turn's outcome.
func TestEachTokenHasItsOwnLimits(t *testing.T) {
	const other = "other-token-0123456789abcdef0123456789ab"
	seen := &outcomes{}
	r := newRig(t, fakehermes.Options{}, hermes.TransportRuns, func(o *bridge.Options) {
		o.Tokens, o.Rate, o.MaxTurns, o.Observer = []string{other}, 8, 1, seen
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hung := make(chan struct{})
	go func() {
		defer close(hung)
		r.postUntilGone(ctx, chat(true, "user", "wait HANG"))
	}()
	for deadline := time.Now().Add(5 * time.Second); len(r.hermes.Runs()) == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	resp := r.post(t, context.Background(), chat(false, "user", "hello"), nil)
	c := decode(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests || c.Error == nil || c.Error.Type != "rate_limit_error" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a second turn at once: HTTP %d %+v (Retry-After %q)", resp.StatusCode, c.Error, resp.Header.Get("Retry-After"))
	}
	postAs := func(tok string) int {
		b, _ := json.Marshal(chat(false, "user", "hello"))
		req, _ := http.NewRequest(http.MethodPost, r.url+"/chat/completions", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// the other token: its bucket holds two turns, the third is over its rate
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		if got := postAs(other); got != want {
			t.Errorf("the other token's turn %d: HTTP %d, want %d", i+1, got, want)
		}
	}
	cancel()
	<-hung
	for deadline := time.Now().Add(2 * time.Second); len(seen.list()) < 5 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	got := seen.list()
	slices.Sort(got)
	if want := []string{"ok", "ok", "refused", "refused", "stopped"}; !slices.Equal(got, want) {
		t.Errorf("outcomes %q, want %q", got, want)
	}
}
