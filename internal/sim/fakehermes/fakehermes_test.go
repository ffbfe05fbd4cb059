package fakehermes_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/sim/fakehermes"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const key = "fake-key-0123456789abcdef"

func start(t *testing.T, opts fakehermes.Options) (*fakehermes.Server, string) {
	t.Helper()
	opts.Key = key
	srv := fakehermes.New(opts)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); ts.Close() })
	return srv, ts.URL
}

func do(t *testing.T, method, url, auth, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAuthAndHealth(t *testing.T) {
	_, url := start(t, fakehermes.Options{})
	if r := do(t, "GET", url+"/health", "", ""); r.StatusCode != 200 {
		t.Errorf("health: %d", r.StatusCode)
	}
	r := do(t, "GET", url+"/v1/models", "wrong", "")
	if body := readAll(t, r.Body); r.StatusCode != 401 || !strings.Contains(body, `"code":"gateway_auth_failed"`) {
		t.Errorf("bad key: %d %s", r.StatusCode, body)
	}
	_, url2 := start(t, fakehermes.Options{LegacyAuthError: true})
	r = do(t, "GET", url2+"/v1/capabilities", "", "")
	if body := readAll(t, r.Body); r.StatusCode != 401 || !strings.Contains(body, `"code":"invalid_api_key"`) {
		t.Errorf("legacy: %d %s", r.StatusCode, body)
	}
	r = do(t, "GET", url+"/v1/models", key, "")
	if body := readAll(t, r.Body); r.StatusCode != 200 || !strings.Contains(body, `"hermes-agent"`) {
		t.Errorf("models: %d %s", r.StatusCode, body)
	}
}

func startRun(t *testing.T, url, text string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"input": text, "instructions": "be brief", "session_id": "handset-x"})
	r := do(t, "POST", url+"/v1/runs", key, string(body), "X-Hermes-Session-Key", "k1")
	var started struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.NewDecoder(r.Body).Decode(&started); err != nil || r.StatusCode != 202 || !strings.HasPrefix(started.RunID, "run_") || started.Status != "started" {
		t.Fatalf("start run: %d %+v %v", r.StatusCode, started, err)
	}
	return started.RunID
}

func TestRunEventsWire(t *testing.T) {
	srv, url := start(t, fakehermes.Options{Keepalive: 5 * time.Millisecond, ToolDuration: 60 * time.Millisecond})
	id := startRun(t, url, "check TOOLCALL")
	r := do(t, "GET", url+"/v1/runs/"+id+"/events", key, "")
	body := readAll(t, r.Body)
	for _, want := range []string{`"event":"tool.started"`, ": keepalive\n\n", `"event":"message.delta"`, `"delta":"\n\nI `, `"event":"run.completed"`,
		// a token a word: "be brief" and "check TOOLCALL" in, the 13 words of the reply out
		`"input_tokens":4`, `"output_tokens":13`, `"total_tokens":17`, ": stream closed\n\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("events lack %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "event: ") {
		t.Errorf("runs events must be data-only frames:\n%s", body)
	}
	if r := do(t, "GET", url+"/v1/runs/"+id+"/events", key, ""); r.StatusCode != 404 {
		t.Errorf("second subscriber: %d, want 404", r.StatusCode)
	}
	if r := do(t, "POST", url+"/v1/runs/"+id+"/stop", key, ""); r.StatusCode != 404 {
		t.Errorf("stop after completion: %d, want 404", r.StatusCode)
	}
	if srv.Stopped(id) || srv.Abandoned(id) || srv.StopCount() != 1 || srv.Status(id) != "completed" {
		t.Errorf("records: stopped %v abandoned %v stops %d status %q", srv.Stopped(id), srv.Abandoned(id), srv.StopCount(), srv.Status(id))
	}
	reqs := srv.Requests()
	if reqs[0].SessionKey != "k1" || len(reqs[0].Messages) != 2 || reqs[0].Messages[0].Role != "system" || reqs[0].RunID != id {
		t.Errorf("recorded start: %+v", reqs[0])
	}
}

func TestStopMidRun(t *testing.T) {
	srv, url := start(t, fakehermes.Options{})
	id := startRun(t, url, "slow tool TOOLCALL")
	r := do(t, "GET", url+"/v1/runs/"+id+"/events", key, "")
	br := bufio.NewReader(r.Body)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "tool.started") {
		t.Fatalf("first frame %q, %v", line, err)
	}
	if s := do(t, "POST", url+"/v1/runs/"+id+"/stop", key, ""); s.StatusCode != 200 || !strings.Contains(readAll(t, s.Body), `"stopping"`) {
		t.Fatalf("stop: %d", s.StatusCode)
	}
	rest := readAll(t, br)
	if !strings.Contains(rest, `"event":"run.cancelled"`) || !strings.Contains(rest, ": stream closed") {
		t.Errorf("after stop:\n%s", rest)
	}
	if !srv.Stopped(id) || srv.Status(id) != "cancelled" || srv.Abandoned(id) {
		t.Errorf("stopped %v status %q abandoned %v", srv.Stopped(id), srv.Status(id), srv.Abandoned(id))
	}
}

func TestChatStreamWire(t *testing.T) {
	srv, url := start(t, fakehermes.Options{ToolDuration: time.Millisecond})
	r := do(t, "POST", url+"/v1/chat/completions", key, `{"model":"hermes-agent","stream":true,"messages":[{"role":"user","content":"hi TOOLCALL"}]}`, "X-Hermes-Session-Id", "handset-c1")
	body := readAll(t, r.Body)
	if r.Header.Get("X-Hermes-Session-Id") != "handset-c1" || r.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("headers %v", r.Header)
	}
	role := strings.Index(body, `"role":"assistant"`)
	tool := strings.Index(body, "event: hermes.tool.progress\ndata: ")
	text := strings.Index(body, `"content":"\n\nI `)
	done := strings.Index(body, "data: [DONE]\n\n")
	if role < 0 || tool < role || text < tool || done < text || !strings.Contains(body, `"finish_reason":"stop"`) {
		t.Errorf("chat stream out of shape:\n%s", body)
	}
	// Without a session id Hermes derives one from the opening prompt.
	r = do(t, "POST", url+"/v1/chat/completions", key, `{"messages":[{"role":"user","content":"hello"}]}`)
	var c struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil || len(c.Choices) != 1 || c.Choices[0].Message.Content != "I heard you say: hello. What else can I do for you?" {
		t.Errorf("non-stream: %+v %v", c, err)
	}
	if id := r.Header.Get("X-Hermes-Session-Id"); !strings.HasPrefix(id, "api-") || len(id) != 20 {
		t.Errorf("derived session id %q", id)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("%d requests recorded", n)
	}
}

func TestNoRunsCapabilities(t *testing.T) {
	_, url := start(t, fakehermes.Options{NoRuns: true})
	r := do(t, "GET", url+"/v1/capabilities", key, "")
	var c struct {
		Features map[string]any `json:"features"`
	}
	if err := json.NewDecoder(r.Body).Decode(&c); err != nil || c.Features["run_submission"] != false || c.Features["chat_completions"] != true {
		t.Errorf("capabilities %+v %v", c, err)
	}
	if r := do(t, "POST", url+"/v1/runs", key, `{"input":"x"}`); r.StatusCode != 404 {
		t.Errorf("runs without the runs API: %d", r.StatusCode)
	}
}

func TestAbandonedStreamIsRecorded(t *testing.T) {
	srv, url := start(t, fakehermes.Options{})
	id := startRun(t, url, "wait HANG")
	r := do(t, "GET", url+"/v1/runs/"+id+"/events", key, "")
	if r.StatusCode != 200 {
		t.Fatalf("events: %d", r.StatusCode)
	}
	r.Body.Close()
	<-srv.StreamDone(id)
	if !srv.Abandoned(id) || srv.Stopped(id) {
		t.Errorf("abandoned %v stopped %v, want abandoned and not stopped", srv.Abandoned(id), srv.Stopped(id))
	}
	if st := srv.Status(id); st != "running" {
		t.Errorf("status %q: abandoning the stream must not stop the run", st)
	}
}

// TestChatSessionKeepsTheTranscript: with a session id the model is given the stored
// transcript and the request's last message only; a completed turn stores the message and
// the reply, an abandoned one the message and Hermes' interruption.
func TestChatSessionKeepsTheTranscript(t *testing.T) {
	srv, url := start(t, fakehermes.Options{})
	chat := func(ctx context.Context, msgs ...string) (*http.Response, error) {
		var body []map[string]string
		for i := 0; i+1 < len(msgs); i += 2 {
			body = append(body, map[string]string{"role": msgs[i], "content": msgs[i+1]})
		}
		b, _ := json.Marshal(map[string]any{"stream": true, "messages": body})
		req, _ := http.NewRequestWithContext(ctx, "POST", url+"/v1/chat/completions", strings.NewReader(string(b)))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Hermes-Session-Id", "handset-s1")
		return http.DefaultClient.Do(req)
	}
	r, err := chat(t.Context(), "system", "be brief", "user", "first words")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, r.Body)
	r.Body.Close()
	r, err = chat(t.Context(), "system", "be brief", "user", "ignored history", "assistant", "ignored too", "user", "second words")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, r.Body); !strings.Contains(body, `"content":"second "`) {
		t.Errorf("the reply does not echo the request's last message:\n%s", body)
	}
	r.Body.Close()
	first := fakehermes.ReplyText([]fakehermes.Message{{Role: "user", Content: "first words"}})
	reqs := srv.Requests()
	want := []fakehermes.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "first words"}, {Role: "assistant", Content: first}, {Role: "user", Content: "second words"}}
	if got := reqs[len(reqs)-1].Prompt; !slices.Equal(got, want) {
		t.Errorf("the model was given %q, want %q", got, want)
	}

	// A turn whose client goes away stores the interruption.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if r, err := chat(ctx, "user", "HANG on"); err == nil {
			r.Body.Close()
		}
	}()
	waitFor(t, func() bool { return len(srv.Transcript("handset-s1")) == 5 })
	cancel()
	<-done
	waitFor(t, func() bool { return len(srv.Transcript("handset-s1")) == 6 })
	second := fakehermes.ReplyText([]fakehermes.Message{{Role: "user", Content: "second words"}})
	want = []fakehermes.Message{{Role: "user", Content: "first words"}, {Role: "assistant", Content: first}, {Role: "user", Content: "second words"}, {Role: "assistant", Content: second},
		{Role: "user", Content: "HANG on"}, {Role: "assistant", Content: fakehermes.Interrupted}}
	if got := srv.Transcript("handset-s1"); !slices.Equal(got, want) {
		t.Errorf("transcript %q, want %q", got, want)
	}
	if got := srv.Transcript("handset-other"); len(got) != 0 {
		t.Errorf("another session holds %q", got)
	}
}

// TestSaidAndReply: Options.Said picks the words magic is read from and the echo repeats;
// Options.Reply replaces the reply.
func TestSaidAndReply(t *testing.T) {
	lastLine := func(m []fakehermes.Message) string {
		lines := strings.Split(m[len(m)-1].Content, "\n")
		return lines[len(lines)-1]
	}
	_, url := start(t, fakehermes.Options{Said: lastLine})
	r := do(t, "POST", url+"/v1/chat/completions", key, `{"messages":[{"role":"user","content":"[before: HANG]\nhello"}]}`)
	if body := readAll(t, r.Body); r.StatusCode != 200 || !strings.Contains(body, "I heard you say: hello.") {
		t.Errorf("%d %s", r.StatusCode, body)
	}
	_, url = start(t, fakehermes.Options{Reply: func(m []fakehermes.Message) string { return "Custom: " + m[len(m)-1].Content }})
	r = do(t, "POST", url+"/v1/chat/completions", key, `{"messages":[{"role":"user","content":"x"}]}`)
	if body := readAll(t, r.Body); !strings.Contains(body, `"content":"Custom: x"`) {
		t.Errorf("%s", body)
	}
}

// TestToolThatHangs: TOOLCALL with HANG starts the tool and never finishes it; a stop
// cancels the run.
func TestToolThatHangs(t *testing.T) {
	srv, url := start(t, fakehermes.Options{ToolDuration: time.Millisecond})
	id := startRun(t, url, "TOOLCALL HANG")
	r := do(t, "GET", url+"/v1/runs/"+id+"/events", key, "")
	br := bufio.NewReader(r.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, "tool.started") {
		t.Fatalf("first frame %q, %v", line, err)
	}
	if s := do(t, "POST", url+"/v1/runs/"+id+"/stop", key, ""); s.StatusCode != 200 {
		t.Fatalf("stop: %d (the tool should still run)", s.StatusCode)
	}
	if rest := readAll(t, br); !strings.Contains(rest, `"event":"run.cancelled"`) || strings.Contains(rest, "message.delta") {
		t.Errorf("after stop:\n%s", rest)
	}
	if srv.Status(id) != "cancelled" {
		t.Errorf("status %q", srv.Status(id))
	}
}

// waitFor polls cond (the fake's records change without a signal to wait on) for up to a
// minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCutoffEndsWithoutTheEnd(t *testing.T) {
	srv, url := start(t, fakehermes.Options{})
	id := startRun(t, url, "cut me CUTOFF")
	events := readAll(t, do(t, "GET", url+"/v1/runs/"+id+"/events", key, "").Body)
	if !strings.Contains(events, `"event":"message.delta"`) || strings.Contains(events, "run.completed") ||
		strings.Contains(events, ": stream closed") {
		t.Errorf("runs events:\n%s", events)
	}
	if srv.Abandoned(id) {
		t.Error("a stream the server cut is recorded as abandoned by the client")
	}
	chat := readAll(t, do(t, "POST", url+"/v1/chat/completions", key,
		`{"stream":true,"messages":[{"role":"user","content":"cut me CUTOFF"}]}`).Body)
	if !strings.Contains(chat, `"content":"I `) || strings.Contains(chat, "finish_reason\":\"stop") ||
		strings.Contains(chat, "[DONE]") {
		t.Errorf("chat stream:\n%s", chat)
	}
}
