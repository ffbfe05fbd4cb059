package fakeopenai

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve starts fake behind an httptest server closed at the end of the test.
func serve(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	fake := New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(func() {
		fake.Close()
		srv.Close()
	})
	return fake, srv
}

// post sends a chat request with one user message.
func post(t *testing.T, ctx context.Context, srv *httptest.Server, key, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func chatBody(stream bool, user string) string {
	b, _ := json.Marshal(map[string]any{
		"model":    "m",
		"stream":   stream,
		"messages": []map[string]string{{"role": "system", "content": "sys"}, {"role": "user", "content": user}},
	})
	return string(b)
}

// events reads "data:" payloads and comment lines until the body ends.
func events(t *testing.T, r io.Reader) (data []string, comments int) {
	t.Helper()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		case strings.HasPrefix(line, ":"):
			comments++
		case line == "":
		default:
			t.Errorf("unexpected line %q", line)
		}
	}
	return data, comments
}

type wireChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// decode parses the chunks of a stream up to [DONE] and returns the text, the number of
// content chunks and whether [DONE] came.
func decode(t *testing.T, data []string) (text string, contentChunks int, done bool) {
	t.Helper()
	var b strings.Builder
	for i, d := range data {
		if d == "[DONE]" {
			if i != len(data)-1 {
				t.Errorf("[DONE] is not last")
			}
			return b.String(), contentChunks, true
		}
		var c wireChunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %d %q: %v", i, d, err)
		}
		if c.Object != "chat.completion.chunk" || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Model != "m" || len(c.Choices) != 1 {
			t.Fatalf("chunk %d has the wrong shape: %s", i, d)
		}
		ch := c.Choices[0]
		switch {
		case i == 0:
			if ch.Delta.Role == nil || *ch.Delta.Role != "assistant" || ch.Delta.Content != nil || ch.FinishReason != nil {
				t.Errorf("first chunk is not role-only: %s", d)
			}
		case ch.FinishReason != nil:
			if *ch.FinishReason != "stop" || ch.Delta.Content != nil {
				t.Errorf("final chunk: %s", d)
			}
		default:
			if ch.Delta.Content == nil || *ch.Delta.Content == "" {
				t.Errorf("content chunk without content: %s", d)
			}
			contentChunks++
			b.WriteString(*ch.Delta.Content)
		}
	}
	return b.String(), contentChunks, false
}

func TestStreamShape(t *testing.T) {
	fake, srv := serve(t, Options{})
	resp := post(t, t.Context(), srv, "", chatBody(true, "Turn on the lights please."))
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	data, comments := events(t, resp.Body)
	text, n, done := decode(t, data)
	want := "I heard you say: Turn on the lights please. What else can I do for you?"
	if text != want || !done || comments != 0 {
		t.Errorf("text %q done %v comments %d; want %q, [DONE], no comments", text, done, comments, want)
	}
	if words := len(strings.Fields(want)); n < words/2 || n >= words {
		t.Errorf("%d content chunks for %d words: want a word or two per chunk", n, words)
	}
	if err := fake.AwaitDone(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	got := reqs[0]
	wantMsgs := []Message{{"system", "sys"}, {"user", "Turn on the lights please."}}
	if diff := cmp.Diff(wantMsgs, got.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if got.Model != "m" || !got.Stream || got.Status != 200 || !got.Done || got.Aborted {
		t.Errorf("record = %+v", got)
	}
	if fake.Aborted() != 0 {
		t.Errorf("Aborted() = %d", fake.Aborted())
	}
}

// TestStreamUsage: asked with stream_options.include_usage, the stream ends as OpenAI's
// does: a chunk with no choices and the usage object before [DONE], "usage": null on every
// chunk before it; not asked, no chunk has a usage member.
func TestStreamUsage(t *testing.T) {
	fake, srv := serve(t, Options{})
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},` +
		`"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hello there"}]}`
	data, _ := events(t, post(t, t.Context(), srv, "", body).Body)
	if len(data) < 3 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream %q: want chunks, the usage chunk and [DONE]", data)
	}
	var last struct {
		Object  string            `json:"object"`
		Choices []json.RawMessage `json:"choices"`
		Usage   struct {
			Prompt     int `json:"prompt_tokens"`
			Completion int `json:"completion_tokens"`
			Total      int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(data[len(data)-2]), &last); err != nil {
		t.Fatal(err)
	}
	reply := "I heard you say: hello there. What else can I do for you?"
	if last.Object != "chat.completion.chunk" || last.Choices == nil || len(last.Choices) != 0 ||
		last.Usage.Prompt != 4 || last.Usage.Completion != len(strings.Fields(reply)) || last.Usage.Total != 4+len(strings.Fields(reply)) {
		t.Errorf("usage chunk %s: want no choices, 4 prompt tokens and %d completion tokens", data[len(data)-2], len(strings.Fields(reply)))
	}
	for _, d := range data[:len(data)-2] {
		if !strings.Contains(d, `"usage":null`) {
			t.Errorf("chunk before the usage chunk without \"usage\": null: %s", d)
		}
	}
	if err := fake.AwaitDone(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	if r := fake.Requests(); len(r) != 1 || !r[0].IncludeUsage {
		t.Errorf("the request's include_usage was not recorded: %+v", r)
	}

	plain, _ := events(t, post(t, t.Context(), srv, "", chatBody(true, "hello there")).Body)
	for _, d := range plain {
		if strings.Contains(d, "usage") {
			t.Errorf("usage in a stream that did not ask for it: %s", d)
		}
	}
}

func TestNonStreaming(t *testing.T) {
	_, srv := serve(t, Options{})
	resp := post(t, t.Context(), srv, "", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi there"}]}]}`)
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role, Content string
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || c.Object != "chat.completion" || len(c.Choices) != 1 ||
		c.Choices[0].Message.Content != "I heard you say: hi there. What else can I do for you?" ||
		c.Choices[0].Message.Role != "assistant" || c.Choices[0].FinishReason != "stop" {
		t.Errorf("status %d, completion %+v", resp.StatusCode, c)
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name   string
		key    string
		body   string
		status int
		typ    string
		code   string
	}{
		{"missing key", "", chatBody(true, "hi"), 401, "invalid_request_error", "invalid_api_key"},
		{"wrong key", "sk-wrong-key-123", chatBody(true, "hi"), 401, "invalid_request_error", "invalid_api_key"},
		{"unknown model", "k", `{"model":"gpt-9","stream":true,"messages":[{"role":"user","content":"hi"}]}`, 404, "invalid_request_error", "model_not_found"},
		{"malformed JSON", "k", `{"model":`, 400, "invalid_request_error", ""},
		{"no model", "k", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", ""},
		{"no messages", "k", `{"model":"m","messages":[]}`, 400, "invalid_request_error", ""},
		{"bad content", "k", `{"model":"m","messages":[{"role":"user","content":7}]}`, 400, "invalid_request_error", ""},
		{"FAIL500", "k", chatBody(true, "please FAIL500 now"), 500, "server_error", ""},
		{"FAIL400", "k", chatBody(true, "FAIL400"), 400, "invalid_request_error", ""},
		{"FAILMID without streaming", "k", chatBody(false, "FAILMID"), 500, "server_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv := serve(t, Options{Key: "k", Models: []string{"m"}})
			resp := post(t, t.Context(), srv, tt.key, tt.body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			code := ""
			if e.Error.Code != nil {
				code = *e.Error.Code
			}
			if resp.StatusCode != tt.status || e.Error.Type != tt.typ || code != tt.code || e.Error.Message == "" {
				t.Errorf("got %d %+v code %q; want %d %s %q", resp.StatusCode, e.Error, code, tt.status, tt.typ, tt.code)
			}
			if strings.Contains(e.Error.Message, "sk-wrong-key-123") {
				t.Errorf("error message shows the whole key: %q", e.Error.Message)
			}
		})
	}
}

func TestModelsAndRoutes(t *testing.T) {
	_, srv := serve(t, Options{Models: []string{"a", "b"}})
	resp, err := srv.Client().Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 2 || list.Data[0].ID != "a" || list.Data[1].Object != "model" {
		t.Errorf("models = %+v", list)
	}
	resp2, err := srv.Client().Get(srv.URL + "/v1/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 404 {
		t.Errorf("unknown route: %d", resp2.StatusCode)
	}
}

func TestMagicStreams(t *testing.T) {
	const first = "I heard you say: "
	tests := []struct {
		name      string
		user      string
		wantText  string
		wantDone  bool
		wantError bool // an in-stream error object
		comments  bool
	}{
		{"FAILMID", "FAILMID now", first + "FAILMID now. ", false, true, false},
		{"CUTOFF", "CUTOFF now", first + "CUTOFF now. ", false, false, false},
		{"KEEPALIVE", "KEEPALIVE", first + "KEEPALIVE. What else can I do for you?", true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake, srv := serve(t, Options{})
			resp := post(t, t.Context(), srv, "", chatBody(true, tt.user))
			data, comments := events(t, resp.Body)
			var sawError bool
			if n := len(data); n > 0 && strings.HasPrefix(data[n-1], `{"error":`) {
				sawError = true
				data = data[:n-1]
			}
			text, _, done := decode(t, data)
			if text != tt.wantText || done != tt.wantDone || sawError != tt.wantError || (comments > 0) != tt.comments {
				t.Errorf("text %q done %v error %v comments %d", text, done, sawError, comments)
			}
			if err := fake.AwaitDone(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			if fake.Aborted() != 0 {
				t.Errorf("recorded an abort the client did not make")
			}
		})
	}
}

func TestLongReply(t *testing.T) {
	fake := New(Options{})
	text := fake.ReplyText([]Message{{"user", "tell me a LONG story"}})
	n := 0
	for _, p := range pieces(text) {
		if p.endsSentence {
			n++
		}
	}
	if n != 12 {
		t.Errorf("LONG reply has %d sentences, want 12: %q", n, text)
	}
}

func TestReplyOverride(t *testing.T) {
	_, srv := serve(t, Options{Reply: func(m []Message) string { return "Custom. " + m[len(m)-1].Content }})
	resp := post(t, t.Context(), srv, "", chatBody(true, "x"))
	data, _ := events(t, resp.Body)
	if text, _, _ := decode(t, data); text != "Custom. x" {
		t.Errorf("text = %q", text)
	}
}

// TestSaidPicksTheWords: with Options.Said, magic words and the echo come from its pick,
// not from the rest of the last user message.
func TestSaidPicksTheWords(t *testing.T) {
	lastLine := func(m []Message) string {
		lines := strings.Split(lastUser(m), "\n")
		return lines[len(lines)-1]
	}
	_, srv := serve(t, Options{Said: lastLine})
	resp := post(t, t.Context(), srv, "", chatBody(true, "[earlier: HANG FAIL500]\nhow are you"))
	data, _ := events(t, resp.Body)
	if text, _, done := decode(t, data); resp.StatusCode != 200 || !done || text != "I heard you say: how are you. What else can I do for you?" {
		t.Errorf("status %d, text %q, done %v", resp.StatusCode, text, done)
	}
	resp = post(t, t.Context(), srv, "", chatBody(true, "[earlier: hello]\nFAIL500 please"))
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("a magic word in the picked words: status %d, want 500", resp.StatusCode)
	}
}

// TestAbortRecorded: a client that goes away during HANG, STALL or SLOW is recorded as
// having aborted; the handler returns.
func TestAbortRecorded(t *testing.T) {
	for _, user := range []string{"HANG", "STALL", "SLOW down"} {
		t.Run(user, func(t *testing.T) {
			fake, srv := serve(t, Options{SlowEvery: time.Hour})
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(chatBody(true, user)))
				resp, err := srv.Client().Do(req)
				if err != nil {
					return // HANG: cancelled while waiting for headers
				}
				defer resp.Body.Close()
				_, _ = io.Copy(io.Discard, resp.Body)
			}()
			if err := fake.AwaitRequests(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			if user == "STALL" {
				// Wait until the first sentence is out, so the abort happens mid-stream.
				if err := fake.await(t.Context(), func() bool { return fake.reqs[0].Status == 200 }); err != nil {
					t.Fatal(err)
				}
			}
			cancel()
			<-done
			if err := fake.AwaitAborted(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			if err := fake.AwaitDone(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCloseReleasesHold: Close lets a held request finish, so the http server can shut down.
func TestCloseReleasesHold(t *testing.T) {
	fake, srv := serve(t, Options{})
	got := make(chan int, 1)
	go func() {
		resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatBody(true, "HANG")))
		if err != nil {
			got <- -1
			return
		}
		resp.Body.Close()
		got <- resp.StatusCode
	}()
	if err := fake.AwaitRequests(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	fake.Close()
	if code := <-got; code != http.StatusServiceUnavailable {
		t.Errorf("held request got %d, want 503", code)
	}
	if fake.Aborted() != 0 {
		t.Errorf("Close was recorded as a client abort")
	}
}

func TestPieces(t *testing.T) {
	for _, text := range []string{
		"", "one", "  lead", "Hi. Bye!", "a b c d e", "Is it? Yes.\nNo ", "end.", "x  ",
		"I heard you say: hello there. What else can I do for you?",
	} {
		ps := pieces(text)
		var b strings.Builder
		for i, p := range ps {
			b.WriteString(p.text)
			if n := len(strings.Fields(p.text)); n > 2 || p.text == "" {
				t.Errorf("%q: piece %d %q has %d words", text, i, p.text, n)
			}
			if p.endsSentence != endsSentence(strings.TrimRight(p.text, " \n\t\r")) {
				t.Errorf("%q: piece %q endsSentence=%v", text, p.text, p.endsSentence)
			}
		}
		if b.String() != text {
			t.Errorf("pieces of %q join to %q", text, b.String())
		}
	}
	got := pieces("I heard you say: hi. What else?")
	want := []piece{{"I heard ", false}, {"you say: ", false}, {"hi. ", true}, {"What else?", true}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(piece{})); diff != "" {
		t.Errorf("pieces (-want +got):\n%s", diff)
	}
}

func TestMagicWords(t *testing.T) {
	got := magicWords("please, SLOW-LONG now; not slow, HANGING or XFAIL500")
	want := map[string]bool{MagicSlow: true, MagicLong: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("magicWords (-want +got):\n%s", diff)
	}
}
