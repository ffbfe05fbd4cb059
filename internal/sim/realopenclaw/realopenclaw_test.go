package realopenclaw

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/testpeer"
)

const (
	testAgent  = "support"
	otherAgent = "billing" // a second agent, so ownership is explicit as in production
	testLLMKey = "sk-handset-test"
)

// TestRealGateway runs turns against the real OpenClaw gateway with the fake LLM behind
// it. Without scripts/openclaw.sh's install it is a missing peer (a failure in the full
// tier). With
// HANDSET_OPENCLAW_FRAMES=<file>, every WS frame sent and received is also appended to that
// file; with HANDSET_OPENCLAW_LOG=<file>, the gateway's output and log are written there.
func TestRealGateway(t *testing.T) {
	testpeer.Slow(t, "starts the real OpenClaw gateway (~20 s, more under load)")
	NeedInstall(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	var (
		gw  *Gateway
		err error
	)
	fake := fakeopenai.New(fakeopenai.Options{Key: testLLMKey})
	held := make(chan struct{})
	llm := httptest.NewServer(HumanLast(holdFirst(fake, queueMarker, held)))
	defer llm.Close()
	defer fake.Close()

	begin := time.Now()
	gw, err = Start(ctx, Options{
		LLMURL: llm.URL + "/v1",
		LLMKey: testLLMKey,
		Agents: []string{testAgent, otherAgent},
		Dir:    t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("gateway ready in %s at %s", time.Since(begin).Round(time.Millisecond), gw.WSURL())
	defer func() {
		stop := time.Now()
		gw.Stop()
		gw.Stop() // idempotent
		t.Logf("gateway stopped in %s; the fake LLM saw %d requests", time.Since(stop).Round(time.Millisecond), len(fake.Requests()))
		if p := os.Getenv("HANDSET_OPENCLAW_LOG"); p != "" {
			_ = os.WriteFile(p, []byte(gw.Log()), 0o644)
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", lastLines(gw.Log(), 80))
		}
	}()

	t.Run("HTTP", func(t *testing.T) { testHTTP(ctx, t, gw, fake) })
	t.Run("WS", func(t *testing.T) { testWS(ctx, t, gw, fake) })
	t.Run("Abort", func(t *testing.T) { testAbort(ctx, t, gw, fake) })
	t.Run("Queue", func(t *testing.T) { testQueue(ctx, t, gw, fake, held) })
}

// TestStartWithoutInstall checks the error names the install script.
func TestStartWithoutInstall(t *testing.T) {
	_, err := Start(context.Background(), Options{LLMURL: "http://127.0.0.1:1/v1", Dir: t.TempDir(), Root: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "./scripts/openclaw.sh") {
		t.Fatalf("Start without install: %v, want the install hint", err)
	}
}

func TestHumanLast(t *testing.T) {
	in := `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"[Sun] HANG please"},` +
		`{"role":"user","content":"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nx"}],"stream":true}`
	var out struct {
		Model    string
		Stream   bool
		Messages []struct{ Role, Content string }
	}
	if err := json.Unmarshal(reorderMessages([]byte(in)), &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range out.Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	want := []string{"system:s", "user:<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nx", "user:[Sun] HANG please"}
	if strings.Join(got, "|") != strings.Join(want, "|") || out.Model != "m" || !out.Stream {
		t.Errorf("reordered %q (model %q stream %v), want %q", got, out.Model, out.Stream, want)
	}
	if got := string(reorderMessages([]byte(`{"messages":[{"role":"user","content":"a"}]}`))); got != `{"messages":[{"role":"user","content":"a"}]}` {
		t.Errorf("untouched body changed: %s", got)
	}
}

func TestConfig(t *testing.T) {
	cfg := config(1234, "tok", "http://127.0.0.1:9/v1/", "k", []string{"a", "b"}, "/x/log", "/x/ws", true)
	data, _ := json.Marshal(cfg)
	for _, want := range []string{`"bind":"loopback"`, `"token":"tok"`, `"baseUrl":"http://127.0.0.1:9/v1"`,
		`"ownership":"explicit"`, `"chatCompletions":{"enabled":true}`, `"primary":"handset/handset-fake"`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("config lacks %s: %s", want, data)
		}
	}
	off, _ := json.Marshal(config(1234, "tok", "http://127.0.0.1:9/v1/", "k", nil, "/x/log", "/x/ws", false))
	if !bytes.Contains(off, []byte(`"chatCompletions":{"enabled":false}`)) {
		t.Errorf("HTTPDisabled: the endpoint is not off: %s", off)
	}
}

// humanText reports whether a recorded request carries text among its user messages.
func humanText(r fakeopenai.Request, text string) bool {
	for _, m := range r.Messages {
		if m.Role == "user" && strings.Contains(m.Content, text) {
			return true
		}
	}
	return false
}

// findRequest returns the last recorded request whose user messages contain text.
func findRequest(t *testing.T, fake *fakeopenai.Server, text string) fakeopenai.Request {
	t.Helper()
	reqs := fake.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if humanText(reqs[i], text) {
			return reqs[i]
		}
	}
	t.Fatalf("the fake LLM saw no request with %q (%d requests)", text, len(reqs))
	return fakeopenai.Request{}
}

func testHTTP(ctx context.Context, t *testing.T, gw *Gateway, fake *fakeopenai.Server) {
	body := `{"model":"openclaw/` + testAgent + `","messages":[{"role":"user","content":"hello from http"}]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.HTTPURL()+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+gw.Token())
	req.Header.Set("Content-Type", "application/json")
	begin := time.Now()
	resp, err := loopbackClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	t.Logf("HTTP %s in %s: %s", resp.Status, time.Since(begin).Round(time.Millisecond), data)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chat completion: %s", resp.Status)
	}
	var out struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &out); err != nil || len(out.Choices) == 0 {
		t.Fatalf("bad completion %s: %v", data, err)
	}
	got := strings.TrimSpace(out.Choices[0].Message.Content)
	r := findRequest(t, fake, "hello from http")
	if r.Model != ModelID || !r.Stream || r.Header.Get("Authorization") != "Bearer "+testLLMKey {
		t.Errorf("fake saw model %q stream %v auth %q", r.Model, r.Stream, r.Header.Get("Authorization"))
	}
	t.Logf("fake LLM got %d messages; user messages: %s", len(r.Messages), userSummary(r))
	if want := fake.ReplyText(r.Messages); got != want {
		t.Errorf("reply through the gateway %q, want the fake's %q", got, want)
	}
}

func userSummary(r fakeopenai.Request) string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == "user" {
			parts = append(parts, fmt.Sprintf("%.160q", m.Content))
		}
	}
	return strings.Join(parts, " | ")
}

// client is a test WS session that logs every frame.
type client struct {
	t    *testing.T
	c    *WSConn
	dump *os.File
}

func dial(ctx context.Context, t *testing.T, gw *Gateway) *client {
	t.Helper()
	c, err := DialWS(ctx, gw.WSURL())
	if err != nil {
		t.Fatal(err)
	}
	cl := &client{t: t, c: c}
	if p := os.Getenv("HANDSET_OPENCLAW_FRAMES"); p != "" {
		cl.dump, _ = os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	}
	t.Cleanup(func() {
		c.Close()
		if cl.dump != nil {
			cl.dump.Close()
		}
	})
	frames, err := c.Handshake(ctx, gw.Token())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		cl.note(f)
	}
	var hello struct {
		Type     string
		Protocol int
		Auth     struct{ Scopes []string }
	}
	_ = json.Unmarshal(frames[1].Payload, &hello)
	if hello.Type != "hello-ok" || hello.Protocol != 4 || !strings.Contains(strings.Join(hello.Auth.Scopes, ","), "operator.write") {
		t.Fatalf("hello-ok: %+v", hello)
	}
	return cl
}

func (cl *client) note(f Frame) {
	if cl.dump != nil {
		fmt.Fprintf(cl.dump, "%s << %s\n", cl.t.Name(), f.Raw)
	}
	cl.t.Logf("<< %.600s", f.Raw)
}

func (cl *client) request(method string, params any) string {
	cl.t.Helper()
	id, err := cl.c.Request(method, params)
	if err != nil {
		cl.t.Fatal(err)
	}
	data, _ := json.Marshal(params)
	if cl.dump != nil {
		fmt.Fprintf(cl.dump, "%s >> %s %s %s\n", cl.t.Name(), id, method, data)
	}
	cl.t.Logf(">> %s %s %.300s", id, method, data)
	return id
}

func (cl *client) read(ctx context.Context) Frame {
	cl.t.Helper()
	f, err := cl.c.ReadFrame(ctx)
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.note(f)
	return f
}

// response reads until the response to id, returning its payload (fatal if not ok).
func (cl *client) response(ctx context.Context, id string) json.RawMessage {
	cl.t.Helper()
	for {
		f := cl.read(ctx)
		if f.Type == "res" && f.ID == id {
			if !f.OK {
				cl.t.Fatalf("request %s failed: %s", id, f.Raw)
			}
			return f.Payload
		}
	}
}

type chatEvent struct {
	RunID      string `json:"runId"`
	SessionKey string `json:"sessionKey"`
	State      string `json:"state"`
	DeltaText  string `json:"deltaText"`
	StopReason string `json:"stopReason"`
	Message    *struct {
		Content []struct{ Text string } `json:"content"`
	} `json:"message"`
}

func (e chatEvent) text() string {
	if e.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range e.Message.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// runUntil reads frames until a terminal chat event for runID (or the ack, which it
// checks); it returns the terminal event and the concatenated deltaText.
func (cl *client) runUntil(ctx context.Context, sendID, runID string) (chatEvent, string) {
	cl.t.Helper()
	var deltas strings.Builder
	acked := false
	for {
		f := cl.read(ctx)
		switch {
		case f.Type == "res" && f.ID == sendID:
			if !f.OK {
				cl.t.Fatalf("chat.send failed: %s", f.Raw)
			}
			var ack struct{ RunID, Status string }
			_ = json.Unmarshal(f.Payload, &ack)
			if ack.RunID != runID || ack.Status != "started" {
				cl.t.Errorf("chat.send ack %s, want runId %s started", f.Payload, runID)
			}
			acked = true
		case f.Type == "event" && f.Event == "chat":
			var e chatEvent
			if err := json.Unmarshal(f.Payload, &e); err != nil {
				cl.t.Fatal(err)
			}
			if e.RunID != runID {
				continue
			}
			switch e.State {
			case "delta":
				deltas.WriteString(e.DeltaText)
			case "final", "aborted", "error":
				if !acked {
					cl.t.Logf("terminal %s before the chat.send ack", e.State)
				}
				return e, deltas.String()
			}
		}
	}
}

func testWS(ctx context.Context, t *testing.T, gw *Gateway, fake *fakeopenai.Server) {
	cl := dial(ctx, t, gw)
	id := cl.request("agents.list", map[string]any{})
	agents := cl.response(ctx, id)
	for _, a := range []string{testAgent, otherAgent} {
		if !bytes.Contains(agents, []byte(`"id":"`+a+`"`)) {
			t.Errorf("agents.list lacks %s: %s", a, agents)
		}
	}
	runID := "hs-ws-" + randomHex(6)
	begin := time.Now()
	sendID := cl.request("chat.send", map[string]any{
		"sessionKey": "agent:" + testAgent + ":handset-ws-1", "message": "hello over websocket", "idempotencyKey": runID,
	})
	final, deltas := cl.runUntil(ctx, sendID, runID)
	t.Logf("turn took %s", time.Since(begin).Round(time.Millisecond))
	if final.State != "final" {
		t.Fatalf("run ended %s, want final", final.State)
	}
	r := findRequest(t, fake, "hello over websocket")
	t.Logf("fake LLM got %d messages; user messages: %s", len(r.Messages), userSummary(r))
	want := fake.ReplyText(r.Messages)
	if got := strings.TrimSpace(final.text()); got != want {
		t.Errorf("final text %q, want the fake's %q", got, want)
	}
	if strings.TrimSpace(deltas) != want {
		t.Errorf("accumulated deltaText %q, want %q", deltas, want)
	}
}

func testAbort(ctx context.Context, t *testing.T, gw *Gateway, fake *fakeopenai.Server) {
	cl := dial(ctx, t, gw)
	before := fake.Aborted()
	session := "agent:" + testAgent + ":handset-ws-abort"
	runID := "hs-abort-" + randomHex(6)
	sendID := cl.request("chat.send", map[string]any{
		"sessionKey": session, "message": "please HANG now", "idempotencyKey": runID,
	})
	// Wait until the fake holds the HANG request, then abort.
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for !hasRequest(fake, "please HANG now") {
		select {
		case <-wctx.Done():
			t.Fatal("the fake LLM never saw the HANG turn")
		case <-time.After(50 * time.Millisecond):
		}
	}
	abortID := cl.request("chat.abort", map[string]any{"sessionKey": session, "runId": runID})
	var term chatEvent
	var abortRes json.RawMessage
	for term.State == "" || abortRes == nil {
		f := cl.read(ctx)
		switch {
		case f.Type == "res" && f.ID == abortID:
			if !f.OK {
				t.Fatalf("chat.abort failed: %s", f.Raw)
			}
			abortRes = f.Payload
		case f.Type == "res" && f.ID == sendID && !f.OK:
			t.Fatalf("chat.send failed: %s", f.Raw)
		case f.Type == "event" && f.Event == "chat":
			var e chatEvent
			_ = json.Unmarshal(f.Payload, &e)
			if e.RunID == runID && (e.State == "final" || e.State == "aborted" || e.State == "error") {
				term = e
			}
		}
	}
	var ack struct {
		Aborted bool
		RunIDs  []string `json:"runIds"`
	}
	_ = json.Unmarshal(abortRes, &ack)
	if !ack.Aborted || len(ack.RunIDs) != 1 || ack.RunIDs[0] != runID {
		t.Errorf("chat.abort answered %s, want aborted:true runIds:[%s]", abortRes, runID)
	}
	if term.State != "aborted" {
		t.Errorf("run ended %s, want aborted", term.State)
	}
	actx, cancel2 := context.WithTimeout(ctx, 10*time.Second)
	defer cancel2()
	if err := fake.AwaitAborted(actx, before+1); err != nil {
		t.Errorf("the fake LLM did not see its request cancelled: %v", err)
	}
	// Drain a little to record what follows the aborted event.
	dctx, cancel3 := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel3()
	for {
		f, err := cl.c.ReadFrame(dctx)
		if err != nil {
			break
		}
		cl.note(f)
	}
}

func hasRequest(fake *fakeopenai.Server, text string) bool {
	for _, r := range fake.Requests() {
		if humanText(r, text) {
			return true
		}
	}
	return false
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
