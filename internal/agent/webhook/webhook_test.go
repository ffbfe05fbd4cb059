package webhook

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakewebhook"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// patience bounds waits for what should happen at once: a hang guard, not a timing assertion.
const patience = 10 * time.Second

func setup(t *testing.T, fopts fakewebhook.Options, opts Options) (*fakewebhook.Server, *Agent) {
	t.Helper()
	fake := fakewebhook.New(fopts)
	return fake, agentFor(t, fake, opts)
}

func agentFor(t *testing.T, h http.Handler, opts Options) *Agent {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		if f, ok := h.(*fakewebhook.Server); ok {
			f.Close()
		}
		srv.Close()
	})
	opts.URL = srv.URL + "/hook?token=t"
	if opts.HTTPClient == nil {
		opts.HTTPClient = srv.Client()
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

// drain reads s to its end: the text, the number of chunks, and the error (nil for io.EOF).
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
		if c.Text == "" {
			t.Errorf("empty chunk %+v", c)
		}
		n++
		b.WriteString(c.Text)
	}
	t.Fatal("stream never ended")
	return "", 0, nil
}

func reply(t *testing.T, a *Agent, ctx context.Context, req voice.TurnRequest) (string, int, error) {
	t.Helper()
	s, err := a.Reply(ctx, req)
	if err != nil {
		return "", 0, err
	}
	defer s.Close()
	return drain(t, s)
}

func wantKind(t *testing.T, err error, kind voice.ErrorKind) *voice.ProviderError {
	t.Helper()
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v (%T), want a *voice.ProviderError of kind %s", err, err, kind)
	}
	if pe.Kind != kind || pe.Provider != "webhook" {
		t.Fatalf("err %v: kind %s provider %q, want %s from webhook", err, pe.Kind, pe.Provider, kind)
	}
	return pe
}

func TestRequestSchema(t *testing.T) {
	const caller, callee = "+14155550123", "+442071838750"
	fake, a := setup(t, fakewebhook.Options{Key: "wk"}, Options{
		Key: "wk", Headers: map[string]string{"X-Tenant": "acme"},
	})
	sc := session.NewContext(voice.LegInfo{CallID: "c_42", Carrier: "twilio", Direction: voice.Inbound,
		From: caller, To: callee}, []byte("secret"))
	ctx := session.With(t.Context(), sc)
	req := voice.TurnRequest{CallID: "c_42", Turn: 2, History: []voice.Message{
		{Role: voice.RoleSystem, Content: "Be brief."},
		{Role: voice.RoleUser, Content: "Hi."},
		{Role: voice.RoleAssistant, Content: "Hello. " + voice.InterruptedMarker},
		{Role: "tool", Content: "tool output"},
		{Role: voice.RoleAssistant, Content: ""},
		{Role: voice.RoleUser, Content: "Book a table."},
	}}
	text, _, err := reply(t, a, ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if text != "You said: Book a table.." {
		t.Errorf("reply %q", text)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	got := reqs[0]
	keys := make([]string, 0, len(got.Fields))
	for k := range got.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"call_id", "caller_hash", "carrier", "direction", "history", "text", "turn"}; !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	if got.CallID != "c_42" || got.Turn != 2 || got.Carrier != "twilio" || got.Direction != "inbound" ||
		got.Text != "Book a table." || got.CallerHash != sc.CallerHash || got.CallerHash == "" {
		t.Errorf("fields %+v", got)
	}
	want := []fakewebhook.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "user", Content: "Hi."},
		{Role: "assistant", Content: "Hello. " + voice.InterruptedMarker},
		{Role: "user", Content: "Book a table."},
	}
	if diff := cmp.Diff(want, got.History); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	for _, n := range []string{caller, callee, "4155550123", "2071838750"} {
		if strings.Contains(string(got.Body), n) {
			t.Errorf("body carries raw number %s: %s", n, got.Body)
		}
	}
	for name, want := range map[string]string{
		"Authorization": "Bearer wk",
		"Content-Type":  "application/json",
		"X-Tenant":      "acme",
	} {
		if v := got.Header.Values(name); len(v) != 1 || v[0] != want {
			t.Errorf("header %s = %q, want [%q]", name, v, want)
		}
	}
	if acc := got.Header.Get("Accept"); !strings.Contains(acc, "text/event-stream") ||
		!strings.Contains(acc, "text/plain") || !strings.Contains(acc, "application/json") {
		t.Errorf("Accept %q", acc)
	}
}

func TestSessionFillsGaps(t *testing.T) {
	fake, a := setup(t, fakewebhook.Options{}, Options{})
	sc := session.NewContext(voice.LegInfo{CallID: "c_s", Carrier: "browser", Direction: voice.Outbound, From: "+15550001111"}, []byte("k"))
	req := voice.TurnRequest{Turn: 1, History: []voice.Message{{Role: voice.RoleUser, Content: "hi"}}}
	if _, _, err := reply(t, a, session.With(t.Context(), sc), req); err != nil {
		t.Fatal(err)
	}
	got := fake.Requests()[0]
	if got.CallID != "c_s" || got.CallerHash != sc.CallerHash || got.Direction != "outbound" || got.Carrier != "browser" {
		t.Errorf("fields %+v", got)
	}
}

func TestNoSessionNoKey(t *testing.T) {
	fake, a := setup(t, fakewebhook.Options{}, Options{})
	if _, _, err := reply(t, a, t.Context(), user("hi")); err != nil {
		t.Fatal(err)
	}
	got := fake.Requests()[0]
	if got.Header.Get("Authorization") != "" {
		t.Error("Authorization sent without a key")
	}
	if got.Carrier != "" || got.Direction != "" || got.CallerHash != "" || len(got.Fields) != 7 {
		t.Errorf("fields %+v", got.Fields)
	}
}

func TestAnswerTypes(t *testing.T) {
	tests := []struct {
		name  string
		fopts fakewebhook.Options
		text  string
		want  string
	}{
		{"plain", fakewebhook.Options{Mode: fakewebhook.ModePlain}, "hello there", "You said: hello there."},
		{"json text", fakewebhook.Options{Mode: fakewebhook.ModeJSON}, "hello", "You said: hello."},
		{"json reply", fakewebhook.Options{Mode: fakewebhook.ModeJSON, JSONField: "reply"}, "hello", "You said: hello."},
		{"json hangup", fakewebhook.Options{Mode: fakewebhook.ModeJSON, Hangup: true}, "bye", "You said: bye."},
		{"sse", fakewebhook.Options{Mode: fakewebhook.ModeSSE}, "hello there", "You said: hello there."},
		{"sse json data", fakewebhook.Options{Mode: fakewebhook.ModeSSE, SSEJSON: true}, "hello there", "You said: hello there."},
		{"sse multi-line", fakewebhook.Options{Mode: fakewebhook.ModeSSE, Reply: func(fakewebhook.Request) string { return "one\ntwo" }}, "x", "one\ntwo"},
		{"magic SSE", fakewebhook.Options{}, "SSE please", "You said: SSE please."},
		{"magic JSON", fakewebhook.Options{Mode: fakewebhook.ModeSSE}, "JSON please", "You said: JSON please."},
		{"utf-8", fakewebhook.Options{}, "café — ½ 日本", "You said: café — ½ 日本."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, a := setup(t, tt.fopts, Options{})
			got, _, err := reply(t, a, t.Context(), user(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("reply %q, want %q", got, tt.want)
			}
		})
	}
}

// A plain or SSE answer is passed on as it arrives: the first piece is read while the
// webhook is still writing the rest.
func TestStreamsAsItArrives(t *testing.T) {
	for _, mode := range []fakewebhook.Mode{fakewebhook.ModePlain, fakewebhook.ModeSSE} {
		t.Run(string(mode), func(t *testing.T) {
			fake, a := setup(t, fakewebhook.Options{Mode: mode, SlowEvery: time.Hour}, Options{})
			s, err := a.Reply(t.Context(), user("SLOW reply"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			if c.Text != "You " {
				t.Errorf("first chunk %q, want the first piece alone", c.Text)
			}
			s.Close()
			if _, err := s.Next(); voice.KindOf(err) != voice.KindCanceled {
				t.Errorf("after Close: %v, want canceled", err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), patience)
			defer cancel()
			if err := fake.AwaitAborted(ctx, 1); err != nil {
				t.Errorf("webhook request not aborted on Close: %v", err)
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		status  int
		body    string
		kind    voice.ErrorKind
		snippet string
	}{
		{500, `{"error":"boom"}`, voice.KindTransient, `body: {"error":"boom"}`},
		{401, "bad key\n", voice.KindAuth, "body: bad key"},
		{429, "slow down", voice.KindQuota, "slow down"},
		{404, "", voice.KindBadInput, "empty body"},
		{502, "<html>\n<h1>Bad\tGateway</h1>\x00</html>", voice.KindTransient, "body: <html> <h1>Bad Gateway</h1> </html>"},
		{500, strings.Repeat("x", 5000), voice.KindTransient, strings.Repeat("x", maxSnippet) + "…"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}), Options{})
			_, err := a.Reply(t.Context(), user("hi"))
			pe := wantKind(t, err, tt.kind)
			if pe.Status != tt.status {
				t.Errorf("status %d, want %d", pe.Status, tt.status)
			}
			if msg := pe.Err.Error(); !strings.HasSuffix(msg, tt.snippet) || len(msg) > maxSnippet+20 {
				t.Errorf("error %q, want it to end in %q", msg, tt.snippet)
			}
		})
	}
}

func TestFail500FromFake(t *testing.T) {
	_, a := setup(t, fakewebhook.Options{}, Options{})
	_, err := a.Reply(t.Context(), user("FAIL500"))
	pe := wantKind(t, err, voice.KindTransient)
	if pe.Status != 500 || !strings.Contains(err.Error(), "fake failure") {
		t.Errorf("err %v", err)
	}
}

func TestWrongKey(t *testing.T) {
	_, a := setup(t, fakewebhook.Options{Key: "right"}, Options{Key: "wrong"})
	_, err := a.Reply(t.Context(), user("hi"))
	wantKind(t, err, voice.KindAuth)
}

func TestCancelWaitingForHeaders(t *testing.T) {
	fake, a := setup(t, fakewebhook.Options{}, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		wctx, wcancel := context.WithTimeout(t.Context(), patience)
		defer wcancel()
		_ = fake.AwaitRequests(wctx, 1)
		cancel()
	}()
	_, err := a.Reply(ctx, user("HANG"))
	wantKind(t, err, voice.KindCanceled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v does not wrap context.Canceled", err)
	}
	wctx, wcancel := context.WithTimeout(t.Context(), patience)
	defer wcancel()
	if err := fake.AwaitAborted(wctx, 1); err != nil {
		t.Errorf("request not aborted: %v", err)
	}
}

func TestCancelMidStream(t *testing.T) {
	fake, a := setup(t, fakewebhook.Options{SlowEvery: time.Hour}, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	s, err := a.Reply(ctx, user("SLOW"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, err = s.Next()
	wantKind(t, err, voice.KindCanceled)
	if _, err2 := s.Next(); err2 != err {
		t.Errorf("later Next %v, want the same %v", err2, err)
	}
	wctx, wcancel := context.WithTimeout(t.Context(), patience)
	defer wcancel()
	if err := fake.AwaitAborted(wctx, 1); err != nil {
		t.Errorf("request not aborted: %v", err)
	}
}

func TestTimeoutWaitingForHeaders(t *testing.T) {
	_, a := setup(t, fakewebhook.Options{}, Options{Timeout: 50 * time.Millisecond})
	_, err := a.Reply(t.Context(), user("HANG"))
	wantKind(t, err, voice.KindTimeout)
}

// The stall is an hour, so the timeout always fires; it is long enough that the first
// word reaches the reader before it on a loaded machine.
func TestTimeoutMidStream(t *testing.T) {
	_, a := setup(t, fakewebhook.Options{Mode: fakewebhook.ModeSSE, SlowEvery: time.Hour}, Options{Timeout: time.Second})
	s, err := a.Reply(t.Context(), user("SLOW"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	text, _, err := drain(t, s)
	wantKind(t, err, voice.KindTimeout)
	if text != "You " {
		t.Errorf("text before the timeout %q", text)
	}
}

// Silence is timed, not the whole turn: a slow answer that keeps sending is read whole.
func TestSlowButNotSilent(t *testing.T) {
	_, a := setup(t, fakewebhook.Options{SlowEvery: 20 * time.Millisecond}, Options{Timeout: 2 * time.Second})
	got, n, err := reply(t, a, t.Context(), user("SLOW one two three"))
	if err != nil {
		t.Fatal(err)
	}
	if got != "You said: SLOW one two three." || n < 2 {
		t.Errorf("reply %q in %d chunks", got, n)
	}
}

func TestBadAnswers(t *testing.T) {
	tests := []struct {
		name, ctype, body string
		kind              voice.ErrorKind
	}{
		{"html", "text/html", "<html>hi</html>", voice.KindProtocol},
		{"json not object", "application/json", `["hi"]`, voice.KindProtocol},
		{"json bad", "application/json", `{"text":`, voice.KindProtocol},
		{"json text not string", "application/json", `{"text":42}`, voice.KindProtocol},
		{"sse error event", "text/event-stream", "data: Hi\n\nevent: error\ndata: {\"message\":\"tool broke\"}\n\n", voice.KindTransient},
		{"sse bad json data", "text/event-stream", "data: {\"text\":1}\n\n", voice.KindProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.ctype)
				_, _ = io.WriteString(w, tt.body)
			}), Options{})
			_, _, err := reply(t, a, t.Context(), user("hi"))
			wantKind(t, err, tt.kind)
		})
	}
}

func TestGoodRawAnswers(t *testing.T) {
	tests := []struct {
		name, ctype, body, want string
	}{
		{"no content type", "", "Hello.", "Hello."},
		{"json empty", "application/json", `{}`, ""},
		{"json both", "application/json", `{"reply":"r","text":"t","extra":[1]}`, "t"},
		{"json charset", "application/json; charset=utf-8", `{"reply":"r"}`, "r"},
		{"sse crlf, comments, named events, done", "text/event-stream",
			"\xEF\xBB\xBF: hi\r\ndata: One\r\n\r\nevent: ping\r\ndata: x\r\n\r\ndata:  two\rdata: three\r\rdata: [DONE]\n\ndata: after\n\n", "One two\nthree"},
		{"sse no trailing blank line", "text/event-stream", "data: Hi", "Hi"},
		{"sse hangup only", "text/event-stream", "data: {\"text\":\"Bye.\"}\n\ndata: {\"hangup\":true}\n\n", "Bye."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.ctype == "" {
					w.Header()["Content-Type"] = nil // no sniffing
				} else {
					w.Header().Set("Content-Type", tt.ctype)
				}
				_, _ = io.WriteString(w, tt.body)
			}), Options{})
			got, _, err := reply(t, a, t.Context(), user("hi"))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("reply %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTruncatedBody(t *testing.T) {
	a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "Hello")
	}), Options{})
	got, _, err := reply(t, a, t.Context(), user("hi"))
	wantKind(t, err, voice.KindTransient)
	if got != "Hello" {
		t.Errorf("text before the cut %q", got)
	}
}

func TestTooLong(t *testing.T) {
	a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, strings.Repeat("blah ", maxReply/5+10))
	}), Options{})
	_, _, err := reply(t, a, t.Context(), user("hi"))
	wantKind(t, err, voice.KindProtocol)
}

func TestEmptyHistory(t *testing.T) {
	fake, a := setup(t, fakewebhook.Options{}, Options{})
	for _, h := range [][]voice.Message{nil, {{Role: "tool", Content: "x"}, {Role: voice.RoleUser, Content: " "}}} {
		_, err := a.Reply(t.Context(), voice.TurnRequest{CallID: "c", Turn: 1, History: h})
		wantKind(t, err, voice.KindBadInput)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	a, err := New(Options{URL: url + "?token=secret"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.Reply(t.Context(), user("hi"))
	wantKind(t, err, voice.KindTransient)
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error leaks the URL's query: %v", err)
	}
}

func TestCloseIdempotent(t *testing.T) {
	_, a := setup(t, fakewebhook.Options{}, Options{})
	s, err := a.Reply(t.Context(), user("hi"))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Next()
	wantKind(t, err, voice.KindCanceled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v does not wrap context.Canceled", err)
	}
}

func TestNew(t *testing.T) {
	bad := []Options{
		{},
		{URL: "  "},
		{URL: "ftp://host/x"},
		{URL: "http:///path"},
		{URL: "http://h", Key: "a\nb"},
		{URL: "http://h", Headers: map[string]string{"Bad Name": "v"}},
		{URL: "http://h", Headers: map[string]string{"X-Ok": "v\r\nInjected: 1"}},
	}
	for _, o := range bad {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	for _, u := range []string{"https://user:pw@h:99x/x?token=secret", "ftp://user:pw@h/x?token=secret"} {
		if _, err := New(Options{URL: u}); err == nil ||
			strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "pw") {
			t.Errorf("bad URL error %v", err)
		}
	}
	a, err := New(Options{URL: "https://example.invalid/hook"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != "webhook" || a.timeout != DefaultTimeout {
		t.Errorf("name %q timeout %s", a.Name(), a.timeout)
	}
}

// The webhook is told why a caller has no hash, and how the network vouched for them.
func TestCallerFields(t *testing.T) {
	fake, a := setup(t, fakewebhook.Options{}, Options{})
	for _, c := range []struct {
		from, caller string
		at           voice.Attestation
	}{
		{"Anonymous <sip:anonymous@anonymous.invalid>", "withheld", ""},
		{"+14155550123", "unverified", voice.AttestationC},
		{"+14155550124", "", voice.AttestationA},
	} {
		sc := session.NewContext(voice.LegInfo{CallID: "c_1", Carrier: "twilio", Direction: voice.Inbound,
			From: c.from, To: "+14155550100", Attestation: c.at}, []byte("k")).Require(session.TrustB)
		if _, _, err := reply(t, a, session.With(t.Context(), sc), user("hi")); err != nil {
			t.Fatal(err)
		}
		got := fake.Requests()[len(fake.Requests())-1]
		caller, _ := got.Fields["caller"].(string)
		if _, present := got.Fields["caller"]; caller != c.caller || present != (c.caller != "") {
			t.Errorf("%s: caller field %v, want %q", c.from, got.Fields["caller"], c.caller)
		}
		if at, _ := got.Fields["attestation"].(string); at != string(c.at) {
			t.Errorf("%s: attestation %q, want %q", c.from, at, c.at)
		}
		if (c.caller == "") == (got.CallerHash == "") {
			t.Errorf("%s: caller hash %q", c.from, got.CallerHash)
		}
		if strings.Contains(string(got.Body), "4155550") {
			t.Errorf("a number was sent: %s", got.Body)
		}
	}
}

// A refusal that says when to come back keeps that in its error.
func TestRetryAfterKept(t *testing.T) {
	a := agentFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "down for maintenance")
	}), Options{})
	_, _, err := reply(t, a, t.Context(), user("hi"))
	pe := wantKind(t, err, voice.KindTransient)
	if pe.Status != http.StatusServiceUnavailable || !strings.Contains(err.Error(), "down for maintenance") ||
		!strings.Contains(err.Error(), "retry after 30 s") {
		t.Errorf("error %v", err)
	}
}
