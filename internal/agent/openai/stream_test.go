package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/agent/httpagent"
	"github.com/handset-voice/handset/internal/agent/httpagent/sse"
	"github.com/handset-voice/handset/internal/voice"
)

// bodyStream reads body as a reply that arrived with status 200, without a network.
func bodyStream(t testing.TB, body string, whole bool) *stream {
	a, err := New(Options{Model: "m", Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	w := httpagent.NewWatch(context.Background(), a.timeout)
	s := &stream{Reply: httpagent.NewReply(w, io.NopCloser(strings.NewReader(body))), agent: a, whole: whole}
	if !whole {
		s.sse = sse.NewReader(s.Body())
	}
	return s
}

// collect reads s to its end: the chunks, and the error that ended it (nil for io.EOF).
func collect(s voice.ReplyStream) ([]voice.ReplyChunk, error) {
	var out []voice.ReplyChunk
	for range 1 << 16 {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, errors.New("stream never ended")
}

func chunkData(content string) string {
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"` + content + `"},"finish_reason":null}]}` + "\n\n"
}

const (
	roleData   = `data: {"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}` + "\n\n"
	finishData = `data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	doneData   = "data: [DONE]\n\n"
)

func text(s ...string) []voice.ReplyChunk {
	out := make([]voice.ReplyChunk, len(s))
	for i, t := range s {
		out[i] = voice.ReplyChunk{Text: t}
	}
	return out
}

func TestStreamEvents(t *testing.T) {
	eof := voice.KindUnknown // marks a clean io.EOF in the table
	tests := []struct {
		name    string
		body    string
		whole   bool
		want    []voice.ReplyChunk
		end     voice.ErrorKind
		errText string
	}{
		{name: "complete", body: roleData + chunkData("Hello ") + chunkData("there.") + finishData + doneData,
			want: text("Hello ", "there."), end: eof},
		{name: "finish then close without [DONE]", body: roleData + chunkData("Hi.") + finishData,
			want: text("Hi."), end: eof},
		{name: "[DONE] without finish_reason", body: chunkData("Hi.") + doneData, want: text("Hi."), end: eof},
		{name: "nothing after [DONE] is read", body: chunkData("a") + doneData + chunkData("b") + "data: {bad\n\n",
			want: text("a"), end: eof},
		{name: "ends early", body: roleData + chunkData("Hi"), want: text("Hi"), end: voice.KindTransient, errText: "ended early"},
		{name: "empty body", body: "", end: voice.KindTransient, errText: "ended early"},
		{name: "bad JSON", body: chunkData("a") + "data: {\"choices\":[\n\n", want: text("a"), end: voice.KindProtocol},
		{name: "keepalives, comments and foreign events ignored",
			body: ": keepalive\n\n" + roleData + ":\n" + chunkData("a") + "event: ping\ndata: {}\n\nid: 3\nretry: 100\n\n" + chunkData("b") + finishData + doneData,
			want: text("a", "b"), end: eof},
		{name: "CRLF and multi-line data",
			body: "data: {\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"x\"}}]}\r\n\r\n" + strings.ReplaceAll(finishData+doneData, "\n", "\r\n"),
			want: text("x"), end: eof},
		{name: "Hermes tool progress",
			body: roleData +
				"event: hermes.tool.progress\ndata: {\"tool\":\"terminal\",\"emoji\":\"💻\",\"label\":\"sleep 3\",\"toolCallId\":\"c1\",\"status\":\"running\"}\n\n" +
				"event: hermes.tool.progress\ndata: {\"tool\":\"terminal\",\"toolCallId\":\"c1\",\"status\":\"completed\"}\n\n" +
				"event: hermes.tool.progress\ndata: {\"tool\":\"_thinking\",\"status\":\"running\"}\n\n" +
				"event: hermes.tool.progress\ndata: {\"tool\":\"web_search\",\"status\":\"running\"}\n\n" +
				chunkData(`\n\nDone.`) + finishData + doneData,
			want: []voice.ReplyChunk{{Progress: "sleep 3"}, {Progress: "web_search"}, {Text: "\n\nDone."}}, end: eof},
		{name: "error event", body: chunkData("a") + "event: error\ndata: {\"error\":{\"message\":\"boom\"}}\n\n",
			want: text("a"), end: voice.KindTransient, errText: "boom"},
		{name: "in-stream error object", body: chunkData("a") + `data: {"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit_exceeded"}}` + "\n\n",
			want: text("a"), end: voice.KindQuota, errText: "slow down"},
		{name: "Hermes failure: text, then finish_reason error with an error object",
			body: `data: {"choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":"error"}],"error":{"message":"agent crashed","type":"server_error"}}` + "\n\n" + doneData,
			want: text("partial"), end: voice.KindTransient, errText: "agent crashed"},
		{name: "finish_reason error alone", body: chunkData("a") + `data: {"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}` + "\n\n" + doneData,
			want: text("a"), end: voice.KindTransient, errText: `finish_reason "error"`},
		{name: "line too long", body: "data: " + strings.Repeat("x", sse.MaxLine) + "\n\n", end: voice.KindProtocol},
		{name: "whole completion", whole: true,
			body: `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"All at once."},"finish_reason":"stop"}]}`,
			want: text("All at once."), end: eof},
		{name: "whole completion, empty", whole: true, body: `{"choices":[{"index":0,"message":{"role":"assistant","content":null}}]}`, end: eof},
		{name: "whole completion, error", whole: true, body: `{"error":{"message":"nope","type":"invalid_request_error"}}`,
			end: voice.KindBadInput, errText: "nope"},
		{name: "whole completion, garbage", whole: true, body: `<html>`, end: voice.KindProtocol},
		{name: "whole completion, no choices", whole: true, body: `{"choices":[]}`, end: voice.KindProtocol},
		{name: "usage chunk at the end (stream_options.include_usage)",
			body: strings.ReplaceAll(roleData+chunkData("Hi.")+finishData, `]}`, `],"usage":null}`) +
				`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":812,"completion_tokens":35,"total_tokens":847}}` + "\n\n" + doneData,
			want: []voice.ReplyChunk{{Text: "Hi."}, {Usage: voice.Usage{InputTokens: 812, OutputTokens: 35}}}, end: eof},
		{name: "usage on every chunk (a running count): each one passed on",
			body: `data: {"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":9,"completion_tokens":1}}` + "\n\n" +
				`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2}}` + "\n\n" + doneData,
			want: []voice.ReplyChunk{{Text: "a", Usage: voice.Usage{InputTokens: 9, OutputTokens: 1}}, {Usage: voice.Usage{InputTokens: 9, OutputTokens: 2}}}, end: eof},
		{name: "a nonsense usage is no usage", body: chunkData("a") + `data: {"choices":[],"usage":{"prompt_tokens":-4,"completion_tokens":"many"}}` + "\n\n" + doneData,
			want: text("a"), end: eof},
		{name: "whole completion with usage", whole: true,
			body: `{"choices":[{"index":0,"message":{"role":"assistant","content":"All at once."},"finish_reason":"stop"}],"usage":{"prompt_tokens":20,"completion_tokens":3,"total_tokens":23}}`,
			want: []voice.ReplyChunk{{Text: "All at once.", Usage: voice.Usage{InputTokens: 20, OutputTokens: 3}}}, end: eof},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := bodyStream(t, tt.body, tt.whole)
			defer s.Close()
			got, err := collect(s)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
			if tt.end == eof {
				if err != nil {
					t.Fatalf("ended with %v, want io.EOF", err)
				}
				return
			}
			pe := providerError(t, err, tt.end)
			if pe.Provider != "test" || pe.Status != 0 || !strings.Contains(pe.Error(), tt.errText) {
				t.Errorf("error %q (status %d), want provider test, no status, containing %q", pe, pe.Status, tt.errText)
			}
			if _, again := s.Next(); again != err {
				t.Errorf("Next after the error = %v, want the same error", again)
			}
		})
	}
}

func TestCloseBeforeRead(t *testing.T) {
	s := bodyStream(t, chunkData("a")+doneData, false)
	s.Close()
	_, err := s.Next()
	if voice.KindOf(err) != voice.KindCanceled || !errors.Is(err, context.Canceled) {
		t.Errorf("Next after Close = %v, want canceled", err)
	}
}

// TestConnectionDropped: a chunked body cut off mid-stream is a transient error.
func TestConnectionDropped(t *testing.T) {
	a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		body := roleData + chunkData("Hi ")
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		_, _ = buf.WriteString(strconv.FormatInt(int64(len(body)), 16) + "\r\n" + body + "\r\n")
		_, _ = buf.WriteString("ff\r\ndata: {\"choi") // promised 255 bytes, then hang up
		_ = buf.Flush()
	}), Options{})
	s, err := a.Reply(t.Context(), user("hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := collect(s)
	if diff := cmp.Diff(text("Hi "), got); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
	providerError(t, err, voice.KindTransient)
}

// TestSilenceAfterFinish: a runtime that sends finish_reason but never closes the stream
// still ends the reply cleanly once it has been silent for Timeout.
func TestSilenceAfterFinish(t *testing.T) {
	a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, roleData+chunkData("Bye.")+finishData)
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}), Options{Timeout: 300 * time.Millisecond})
	s, err := a.Reply(t.Context(), user("hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := collect(s)
	if err != nil || !cmp.Equal(text("Bye."), got) {
		t.Errorf("got %v, %v; want [Bye.], io.EOF", got, err)
	}
}

// TestParentDeadline: the caller's own deadline expiring mid-stream is a timeout, not a cancel.
func TestParentDeadline(t *testing.T) {
	a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, roleData)
		_ = http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}), Options{Timeout: time.Hour})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	s, err := a.Reply(ctx, user("hi"))
	if err == nil { // the usual case: the deadline passes while the stream is open
		defer s.Close()
		_, err = collect(s)
	}
	providerError(t, err, voice.KindTimeout)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

// FuzzStream feeds any body to the reply reader: it must end, never panic, and every
// failure must be a classified ProviderError (never "canceled": nobody cancelled).
func FuzzStream(f *testing.F) {
	for _, s := range []string{
		roleData + chunkData("Hi") + finishData + doneData,
		chunkData("x"), "data: [DONE]", ": keepalive\r\n\r\ndata: {}\r\n\r\n",
		"event: hermes.tool.progress\ndata: {\"tool\":\"t\",\"status\":\"running\"}\n\n",
		`data: {"error":{"message":"m","code":429}}` + "\n\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(`{"choices":[{"index":0,"message":{"content":"whole"}}]}`), true)
	f.Fuzz(func(t *testing.T, body []byte, whole bool) {
		s := bodyStream(t, string(body), whole)
		defer s.Close()
		got, err := collect(s)
		for _, c := range got {
			if c.Text == "" && c.Progress == "" {
				t.Fatal("empty chunk yielded")
			}
		}
		if err == nil {
			return
		}
		var pe *voice.ProviderError
		if !errors.As(err, &pe) {
			t.Fatalf("unclassified error %v", err)
		}
		if pe.Kind == voice.KindCanceled || pe.Kind == voice.KindUnknown {
			t.Fatalf("error of kind %v: %v", pe.Kind, err)
		}
	})
}

// TestKeepalivesHoldOffTimeout: a runtime busy with a tool sends only keepalive comments
// for longer than Timeout; the turn must wait for its text rather than time out.
//
// The timer is wall time, so the margins are wide: keepalives every 50 ms against a 2 s
// timeout leave a loaded machine plenty of room, and the tool runs 3 s.
func TestKeepalivesHoldOffTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	var maxGap atomic.Int64 // the longest the server itself went between writes (for a failure report)
	a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		_, _ = io.WriteString(w, roleData)
		_ = rc.Flush()
		tick := time.NewTicker(timeout / 40)
		defer tick.Stop()
		start, last := time.Now(), time.Now()
		for time.Since(start) < timeout*3/2 { // well past Timeout without a chunk
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
			if gap := time.Since(last); gap > time.Duration(maxGap.Load()) {
				maxGap.Store(int64(gap))
			}
			last = time.Now()
			_, _ = io.WriteString(w, ": keepalive\n\n")
			_ = rc.Flush()
		}
		_, _ = io.WriteString(w, chunkData("Done.")+finishData+doneData)
	}), Options{Timeout: timeout})
	s, err := a.Reply(t.Context(), user("run the tool"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := collect(s)
	if err != nil || !cmp.Equal(text("Done."), got) {
		t.Errorf("got %v, %v; want [Done.], io.EOF (longest gap between server writes: %v)",
			got, err, time.Duration(maxGap.Load()))
	}
}
