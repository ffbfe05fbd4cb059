package hermes_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const testKey = "test-key-0123456789abcdef"

var secret = []byte("test-secret")

func newServer(t *testing.T, opts fakehermes.Options) (*fakehermes.Server, string) {
	t.Helper()
	if opts.Key == "" {
		opts.Key = testKey
	}
	srv := fakehermes.New(opts)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		ts.Close()
	})
	return srv, ts.URL + "/v1"
}

func newAgent(t *testing.T, base string, mod func(*hermes.Options)) *hermes.Agent {
	t.Helper()
	o := hermes.Options{BaseURL: base, Key: testKey, SystemPrompt: "Speak briefly."}
	if mod != nil {
		mod(&o)
	}
	a, err := hermes.New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func callCtx(ctx context.Context, call, from string) context.Context {
	return session.With(ctx, session.NewContext(voice.LegInfo{CallID: voice.CallID(call), Carrier: "twilio", From: from, To: "+15550000000"}, secret))
}

func turn(call, text string) voice.TurnRequest {
	return voice.TurnRequest{CallID: voice.CallID(call), Turn: 1, History: []voice.Message{
		{Role: voice.RoleUser, Content: "Hi there."},
		{Role: voice.RoleAssistant, Content: "Hello! How can I help?"},
		{Role: voice.RoleUser, Content: text},
	}}
}

// drain reads a stream to its end.
func drain(s voice.ReplyStream) (text string, progress []string, err error) {
	var b strings.Builder
	for {
		c, err := s.Next()
		if err == io.EOF {
			return b.String(), progress, nil
		}
		if err != nil {
			return b.String(), progress, err
		}
		b.WriteString(c.Text)
		if c.Progress != "" {
			progress = append(progress, c.Progress)
		}
	}
}

func reply(t *testing.T, a *hermes.Agent, ctx context.Context, req voice.TurnRequest) (string, []string, error) {
	t.Helper()
	s, err := a.Reply(ctx, req)
	if err != nil {
		return "", nil, err
	}
	defer s.Close()
	return drain(s)
}

func wantKind(t *testing.T, err error, kind voice.ErrorKind) *voice.ProviderError {
	t.Helper()
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T): want a *voice.ProviderError of kind %v", err, err, kind)
	}
	if pe.Kind != kind {
		t.Fatalf("error %v: kind %v, want %v", err, pe.Kind, kind)
	}
	return pe
}

func TestNewValidates(t *testing.T) {
	if _, err := hermes.New(hermes.Options{}); err == nil {
		t.Error("New without a key: no error")
	}
	if _, err := hermes.New(hermes.Options{Key: "k", Transport: "ws"}); err == nil {
		t.Error("New with an unknown transport: no error")
	}
	if _, err := hermes.New(hermes.Options{Key: "k", BaseURL: "ftp://x"}); err == nil {
		t.Error("New with an ftp base URL: no error")
	}
	a, err := hermes.New(hermes.Options{Key: "k"})
	if err != nil || a.Name() != "hermes" || a.Transport() != hermes.TransportRuns {
		t.Errorf("defaults: %v, name %q, transport %q", err, a.Name(), a.Transport())
	}
}

func TestRunsTurnStreamsInOrder(t *testing.T) {
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		t.Run(transport, func(t *testing.T) {
			srv, base := newServer(t, fakehermes.Options{SlowEvery: 5 * time.Millisecond})
			a := newAgent(t, base, func(o *hermes.Options) { o.Transport = transport })
			ctx := callCtx(t.Context(), "call-1", "+15551234567")
			s, err := a.Reply(ctx, turn("call-1", "What is the weather SLOW"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var chunks []string
			for {
				c, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				chunks = append(chunks, c.Text)
			}
			want := "I heard you say: What is the weather SLOW. What else can I do for you?"
			if got := strings.Join(chunks, ""); got != want {
				t.Fatalf("reply %q, want %q", got, want)
			}
			if len(chunks) < 3 {
				t.Errorf("reply came in %d chunks, want it streamed", len(chunks))
			}
			// A run is sent the conversation: system prompt first, then the history. A chat
			// session keeps the conversation itself: it is sent the new turn only.
			var sent []fakehermes.Message
			for _, r := range srv.Requests() {
				if r.Messages != nil {
					sent = r.Messages
				}
			}
			wantMsgs := []fakehermes.Message{
				{Role: "system", Content: "Speak briefly."}, {Role: "user", Content: "Hi there."},
				{Role: "assistant", Content: "Hello! How can I help?"}, {Role: "user", Content: "What is the weather SLOW"},
			}
			if transport == hermes.TransportChat {
				wantMsgs = []fakehermes.Message{wantMsgs[0], wantMsgs[3]}
			}
			if len(sent) != len(wantMsgs) {
				t.Fatalf("sent %v, want %v", sent, wantMsgs)
			}
			for i := range sent {
				if sent[i] != wantMsgs[i] {
					t.Errorf("message %d: %v, want %v", i, sent[i], wantMsgs[i])
				}
			}
		})
	}
}

// TestUsageReported: the tokens Hermes reports for a turn (run.completed's usage, or the
// usage of a chat completion's finishing chunk) come out as the stream's Usage.
func TestUsageReported(t *testing.T) {
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		t.Run(transport, func(t *testing.T) {
			_, base := newServer(t, fakehermes.Options{})
			a := newAgent(t, base, func(o *hermes.Options) { o.Transport = transport })
			s, err := a.Reply(callCtx(t.Context(), "call-1", "+15551234567"), turn("call-1", "What is the weather"))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got voice.Usage
			for {
				c, err := s.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("Next: %v", err)
				}
				if c.Usage.Reported() {
					got = c.Usage
				}
			}
			reply := fakehermes.ReplyText([]fakehermes.Message{{Role: "user", Content: "What is the weather"}})
			// The fake counts a token a word: the prompt's 2, the history's 7 (a run is sent
			// it; a chat session holds it), the caller's 4.
			input := 13
			if transport == hermes.TransportChat {
				input = 6
			}
			if want := (voice.Usage{InputTokens: input, OutputTokens: len(strings.Fields(reply))}); got != want {
				t.Errorf("usage %+v, want %+v", got, want)
			}
		})
	}
}

func TestSessionHeaders(t *testing.T) {
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		t.Run(transport, func(t *testing.T) {
			srv, base := newServer(t, fakehermes.Options{})
			withKey := newAgent(t, base, func(o *hermes.Options) { o.Transport = transport; o.SessionKey = session.ByCallerHash })
			noKey := newAgent(t, base, func(o *hermes.Options) { o.Transport = transport; o.SessionKey = session.None })
			const phone = "+15557654321"
			for _, c := range []struct {
				a    *hermes.Agent
				call string
			}{{withKey, "call-a"}, {withKey, "call-b"}, {noKey, "call-c"}} {
				if _, _, err := reply(t, c.a, callCtx(t.Context(), c.call, phone), turn(c.call, "hello")); err != nil {
					t.Fatal(err)
				}
			}
			ids := map[string]string{}  // session id -> key seen
			keys := map[string]string{} // call -> key
			for _, r := range srv.Requests() {
				if r.Header.Get("Authorization") != "Bearer "+testKey {
					t.Errorf("%s %s: Authorization %q", r.Method, r.Path, r.Header.Get("Authorization"))
				}
				if r.SessionID == "" {
					t.Errorf("%s %s: no session id", r.Method, r.Path)
				}
				_, present := r.Header["X-Hermes-Session-Key"]
				call := strings.TrimPrefix(r.SessionID, "handset-")
				if call == "call-c" && present {
					t.Errorf("%s %s: session key header %q sent for an empty key", r.Method, r.Path, r.SessionKey)
				}
				if call != "call-c" && r.SessionKey == "" {
					t.Errorf("%s %s: no session key", r.Method, r.Path)
				}
				ids[r.SessionID] = r.SessionKey
				keys[call] = r.SessionKey
				all := r.Body + " " + r.Path
				for k, v := range r.Header {
					all += " " + k + ": " + strings.Join(v, ",")
				}
				if strings.Contains(all, "5557654321") {
					t.Errorf("%s %s: the raw phone number was sent: %s", r.Method, r.Path, all)
				}
			}
			for _, id := range []string{"handset-call-a", "handset-call-b", "handset-call-c"} {
				if _, ok := ids[id]; !ok {
					t.Errorf("no request with session id %s (saw %v)", id, ids)
				}
			}
			want := "handset:" + session.CallerHash(secret, phone)
			if keys["call-a"] != want || keys["call-b"] != want {
				t.Errorf("keys %q and %q, want both %q (same caller)", keys["call-a"], keys["call-b"], want)
			}
		})
	}
}

func TestCancelDuringToolStopsRun(t *testing.T) {
	srv, base := newServer(t, fakehermes.Options{Keepalive: 20 * time.Millisecond})
	a := newAgent(t, base, nil)
	ctx, cancel := context.WithCancel(callCtx(t.Context(), "call-tool", "+15550001111"))
	defer cancel()
	s, err := a.Reply(ctx, turn("call-tool", "Search the web TOOLCALL"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Next()
	if err != nil || c.Progress == "" || c.Text != "" {
		t.Fatalf("first chunk %+v, %v: want tool progress", c, err)
	}
	cancel() // barge-in while the tool runs, before any text
	_, err = s.Next()
	wantKind(t, err, voice.KindCanceled)
	_ = s.Close()
	runs := srv.Runs()
	if len(runs) != 1 {
		t.Fatalf("runs %v", runs)
	}
	if !srv.Stopped(runs[0]) {
		t.Fatalf("run %s was not stopped on the server (status %q)", runs[0], srv.Status(runs[0]))
	}
	<-srv.StreamDone(runs[0])
	if st := srv.Status(runs[0]); st != "cancelled" {
		t.Errorf("run status %q, want cancelled", st)
	}
}

func TestCloseBeforeFirstTokenStopsRun(t *testing.T) {
	srv, base := newServer(t, fakehermes.Options{})
	a := newAgent(t, base, nil)
	s, err := a.Reply(callCtx(t.Context(), "call-hang", "+15550002222"), turn("call-hang", "think HANG"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Next()
	wantKind(t, err, voice.KindCanceled)
	runs := srv.Runs()
	if len(runs) != 1 || !srv.Stopped(runs[0]) {
		t.Fatalf("runs %v: not stopped (count %d)", runs, srv.StopCount())
	}
	<-srv.StreamDone(runs[0])
	if st := srv.Status(runs[0]); st != "cancelled" {
		t.Errorf("run status %q, want cancelled", st)
	}
	_ = s.Close() // idempotent
	if n := srv.StopCount(); n != 1 {
		t.Errorf("%d stop requests, want 1", n)
	}
}

func TestCancelContextBeforeFirstTokenStopsRun(t *testing.T) {
	srv, base := newServer(t, fakehermes.Options{})
	a := newAgent(t, base, nil)
	ctx, cancel := context.WithCancel(callCtx(t.Context(), "call-hang2", "+15550002223"))
	s, err := a.Reply(ctx, turn("call-hang2", "think HANG"))
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = s.Next()
	wantKind(t, err, voice.KindCanceled)
	runs := srv.Runs()
	if len(runs) != 1 || !srv.Stopped(runs[0]) {
		t.Fatalf("runs %v: not stopped after the context was cancelled", runs)
	}
	_ = s.Close()
}

func TestCompletedRunIsNotStopped(t *testing.T) {
	srv, base := newServer(t, fakehermes.Options{})
	a := newAgent(t, base, nil)
	if _, _, err := reply(t, a, callCtx(t.Context(), "call-ok", "+15550003333"), turn("call-ok", "hello")); err != nil {
		t.Fatal(err)
	}
	if n := srv.StopCount(); n != 0 {
		t.Errorf("%d stop requests after a completed run", n)
	}
}

func TestFailOpenRepliesAreErrors(t *testing.T) {
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		for _, word := range []string{"WARNING", "ZEROUSAGE", "FAILRUN"} {
			t.Run(transport+"/"+word, func(t *testing.T) {
				_, base := newServer(t, fakehermes.Options{})
				a := newAgent(t, base, func(o *hermes.Options) { o.Transport = transport })
				text, _, err := reply(t, a, callCtx(t.Context(), "call-w", "+15550004444"), turn("call-w", "hello "+word))
				wantKind(t, err, voice.KindTransient)
				if text != "" {
					t.Errorf("yielded %q before the error", text)
				}
			})
		}
	}
}

func TestHTTPErrorsClassified(t *testing.T) {
	cases := []struct {
		word   string
		key    string
		kind   voice.ErrorKind
		status int
		msg    string
	}{
		{"FAIL500", testKey, voice.KindTransient, 500, "FAIL500"},
		{"FAIL400", testKey, voice.KindBadInput, 400, "FAIL400"},
		{"", "wrong-key-0123456789", voice.KindAuth, 401, "Invalid gateway API key"},
	}
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		for _, c := range cases {
			t.Run(transport+"/"+c.word+c.key, func(t *testing.T) {
				_, base := newServer(t, fakehermes.Options{})
				a := newAgent(t, base, func(o *hermes.Options) { o.Transport = transport; o.Key = c.key })
				_, _, err := reply(t, a, callCtx(t.Context(), "call-e", "+15550005555"), turn("call-e", "hello "+c.word))
				pe := wantKind(t, err, c.kind)
				if pe.Status != c.status || !strings.Contains(pe.Error(), c.msg) {
					t.Errorf("error %v: want status %d and %q", pe, c.status, c.msg)
				}
			})
		}
	}
}

func TestSilenceTimesOut(t *testing.T) {
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		t.Run(transport, func(t *testing.T) {
			srv, base := newServer(t, fakehermes.Options{})
			// HANG never answers, so the timeout fires; creating the run must come first.
			a := newAgent(t, base, func(o *hermes.Options) { o.Transport = transport; o.Timeout = time.Second })
			_, _, err := reply(t, a, callCtx(t.Context(), "call-t", "+15550006666"), turn("call-t", "hello HANG"))
			wantKind(t, err, voice.KindTimeout)
			if transport == hermes.TransportRuns {
				if runs := srv.Runs(); len(runs) != 1 || !srv.Stopped(runs[0]) {
					t.Errorf("timed-out run not stopped: %v", runs)
				}
			}
		})
	}
}

func TestKeepalivesKeepSilentToolAlive(t *testing.T) {
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		t.Run(transport, func(t *testing.T) {
			// Wall-time margins wide enough for a loaded machine: keepalives every 10 ms
			// against a 2 s timeout, for a tool that runs 3 s.
			_, base := newServer(t, fakehermes.Options{Keepalive: 10 * time.Millisecond, ToolDuration: 3 * time.Second})
			a := newAgent(t, base, func(o *hermes.Options) { o.Transport = transport; o.Timeout = 2 * time.Second })
			text, progress, err := reply(t, a, callCtx(t.Context(), "call-k", "+15550007777"), turn("call-k", "look it up TOOLCALL"))
			if err != nil {
				t.Fatalf("a tool longer than Timeout with keepalives failed: %v", err)
			}
			if want := "I heard you say: look it up TOOLCALL. What else can I do for you?"; text != want {
				t.Errorf("reply %q, want %q", text, want)
			}
			if len(progress) != 1 || progress[0] == "" {
				t.Errorf("progress %q, want one label", progress)
			}
		})
	}
}

func TestProbeAndFallback(t *testing.T) {
	t.Run("runs", func(t *testing.T) {
		_, base := newServer(t, fakehermes.Options{})
		a := newAgent(t, base, nil)
		c, err := a.Probe(t.Context())
		if err != nil || !c.Known || !c.RunsUsable() || c.SessionHeader != "X-Hermes-Session-Id" {
			t.Fatalf("Probe: %+v, %v", c, err)
		}
		if a.Transport() != hermes.TransportRuns {
			t.Errorf("transport %q after a probe advertising runs", a.Transport())
		}
	})
	t.Run("no runs", func(t *testing.T) {
		srv, base := newServer(t, fakehermes.Options{NoRuns: true})
		a := newAgent(t, base, nil)
		c, err := a.Probe(t.Context())
		if err != nil || c.RunsUsable() {
			t.Fatalf("Probe: %+v, %v", c, err)
		}
		if a.Transport() != hermes.TransportChat {
			t.Fatalf("transport %q, want the chat fallback", a.Transport())
		}
		text, _, err := reply(t, a, callCtx(t.Context(), "call-f", "+15550008888"), turn("call-f", "hello"))
		if err != nil || !strings.HasPrefix(text, "I heard you say: hello.") {
			t.Fatalf("chat fallback: %q, %v", text, err)
		}
		last := srv.Requests()[len(srv.Requests())-1]
		if last.Path != "/v1/chat/completions" || last.SessionID != "handset-call-f" {
			t.Errorf("fallback request %s with session %q", last.Path, last.SessionID)
		}
	})
	t.Run("bad key", func(t *testing.T) {
		_, base := newServer(t, fakehermes.Options{})
		a := newAgent(t, base, func(o *hermes.Options) { o.Key = "wrong-key-0123456789" })
		_, err := a.Probe(t.Context())
		wantKind(t, err, voice.KindAuth)
	})
}

func TestSessionID(t *testing.T) {
	for in, want := range map[voice.CallID]string{
		"abc-123": "handset-abc-123",
		"a/b\\c":  "handset-a_b_c",
		"x..y":    "handset-x__y",
		"v:1\r\n": "handset-v_1__",
		"":        "",
	} {
		if got := hermes.SessionID(in); got != want {
			t.Errorf("SessionID(%q) = %q, want %q", in, got, want)
		}
	}
}

// A withheld or unverified caller gets no session key and the note about them rides with
// the voice instructions on both transports; an ordinary caller gets neither change.
func TestCallerNote(t *testing.T) {
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		t.Run(transport, func(t *testing.T) {
			srv, base := newServer(t, fakehermes.Options{})
			a := newAgent(t, base, func(o *hermes.Options) { o.Transport = transport; o.SessionKey = session.ByCallerHash })
			inbound := func(call, from string, at voice.Attestation) context.Context {
				sc := session.NewContext(voice.LegInfo{CallID: voice.CallID(call), Carrier: "twilio", Direction: voice.Inbound,
					From: from, To: "+15550000000", Attestation: at}, secret).Require(session.TrustA)
				return session.With(t.Context(), sc)
			}
			for _, c := range []struct{ call, from string }{{"withheld", "Anonymous"}, {"unverified", "+15557654321"}, {"verified", "+15557654322"}} {
				at := voice.AttestationB
				if c.call == "verified" {
					at = voice.AttestationA
				}
				if _, _, err := reply(t, a, inbound(c.call, c.from, at), turn(c.call, "hello")); err != nil {
					t.Fatal(err)
				}
			}
			seen := map[string]bool{}
			for _, r := range srv.Requests() {
				if r.Method != "POST" {
					continue
				}
				call := strings.TrimPrefix(r.SessionID, "handset-")
				seen[call] = true
				noted := strings.Contains(r.Body, "Note from Handset")
				switch call {
				case "withheld", "unverified":
					if !noted || !strings.Contains(r.Body, call) || !strings.Contains(r.Body, "Speak briefly.") || r.SessionKey != "" {
						t.Errorf("%s caller: key %q, body %s", call, r.SessionKey, r.Body)
					}
				case "verified":
					if noted || r.SessionKey == "" {
						t.Errorf("verified caller: key %q, body %s", r.SessionKey, r.Body)
					}
				}
			}
			if len(seen) != 3 {
				t.Errorf("turns seen: %v", seen)
			}
		})
	}
}

// A base URL may carry a token in its query or user info: neither a refused connection
// (on either transport) nor a rejected URL repeats it.
func TestErrorsDropTheURLsSecrets(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/v1?token=secret"
	srv.Close()
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		a := newAgent(t, base, func(o *hermes.Options) { o.Transport = transport })
		_, _, err := reply(t, a, callCtx(t.Context(), "call-u", "+15550005555"), turn("call-u", "hello"))
		wantKind(t, err, voice.KindTransient)
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error leaks the URL's query: %v", transport, err)
		}
	}
	_, err := hermes.New(hermes.Options{Key: "k", BaseURL: "ftp://user:pw@h/v1?token=secret"})
	if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "pw") {
		t.Errorf("bad URL error %v", err)
	}
}

// An event over the stream's limits is a protocol error, as on the other runtimes: trying
// again would only bring the same oversized event.
func TestOversizedEventIsAProtocolError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: "+strings.Repeat("x", 2<<20)+"\n\n")
	}))
	defer srv.Close()
	a := newAgent(t, srv.URL+"/v1", func(o *hermes.Options) { o.Transport = hermes.TransportChat })
	_, _, err := reply(t, a, callCtx(t.Context(), "call-o", "+15550005555"), turn("call-o", "hello"))
	wantKind(t, err, voice.KindProtocol)
}

// The event stream is read as the HTML standard says, whatever line ends a server uses: a
// leading byte order mark is dropped and a bare CR ends a line, as CRLF and LF do.
func TestEventStreamLineEnds(t *testing.T) {
	chunk := func(text string) string {
		return `data: {"choices":[{"index":0,"delta":{"content":"` + text + `"}}]}`
	}
	body := "\xEF\xBB\xBF" + chunk("Hello ") + "\r\r" + chunk("there") + "\r\n\r\n" + chunk(".") + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}` + "\r\r" +
		"data: [DONE]\r\r"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()
	a := newAgent(t, srv.URL+"/v1", func(o *hermes.Options) { o.Transport = hermes.TransportChat })
	text, _, err := reply(t, a, callCtx(t.Context(), "call-l", "+15550005555"), turn("call-l", "hello"))
	if err != nil || text != "Hello there." {
		t.Errorf("reply %q, %v; want \"Hello there.\"", text, err)
	}
}
