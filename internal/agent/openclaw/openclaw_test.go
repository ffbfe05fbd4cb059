package openclaw_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "oc-test-token"

// waitLimit bounds waits for things that should happen at once; it is a hang guard,
// not a timing assertion.
const waitLimit = 10 * time.Second

type env struct {
	fake  *fakeopenclaw.Server
	agent *openclaw.Agent
	url   string
	stop  func() // closes the agent, then the gateway; idempotent
}

func setup(t *testing.T, fo fakeopenclaw.Options, o openclaw.Options) *env {
	t.Helper()
	if fo.Token == "" {
		fo.Token = token
	}
	fake := fakeopenclaw.New(fo)
	srv := httptest.NewServer(fake)
	o.URL = "ws" + strings.TrimPrefix(srv.URL, "http")
	if o.Token == "" {
		o.Token = token
	}
	a, err := openclaw.New(o)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			a.Close()
			fake.Close()
			srv.Close()
		})
	}
	t.Cleanup(stop)
	return &env{fake: fake, agent: a, url: o.URL, stop: stop}
}

func turnCtx(ctx context.Context, callID, from string) context.Context {
	sc := session.NewContext(voice.LegInfo{CallID: voice.CallID(callID), Carrier: "twilio", From: from, To: "+15550001111"},
		[]byte("secret"))
	return session.With(ctx, sc)
}

func req(callID, msg string) voice.TurnRequest {
	return voice.TurnRequest{CallID: voice.CallID(callID), Turn: 1, History: []voice.Message{
		{Role: voice.RoleUser, Content: "an earlier turn"},
		{Role: voice.RoleAssistant, Content: "an earlier reply"},
		{Role: voice.RoleUser, Content: msg},
	}}
}

// collect reads a stream to its end.
func collect(t *testing.T, s voice.ReplyStream) ([]string, error) {
	t.Helper()
	var chunks []string
	for {
		c, err := s.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return chunks, err
		}
		if c.Text != "" {
			chunks = append(chunks, c.Text)
		}
	}
}

func reply(t *testing.T, e *env, ctx context.Context, callID, msg string) ([]string, error) {
	t.Helper()
	s, err := e.agent.Reply(ctx, req(callID, msg))
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return collect(t, s)
}

func waitFor(t *testing.T, e *env, what string, cond func(*fakeopenclaw.Server) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.fake.WaitFor(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func wantKind(t *testing.T, err error, kind voice.ErrorKind) {
	t.Helper()
	var pe *voice.ProviderError
	if !errors.As(err, &pe) || pe.Kind != kind {
		t.Fatalf("error %v: want a ProviderError of kind %v", err, kind)
	}
}

func TestNormalTurnStreamsOnceInOrder(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
	if e.agent.Name() != "openclaw" {
		t.Errorf("Name() = %q", e.agent.Name())
	}
	chunks, err := reply(t, e, turnCtx(context.Background(), "c1", "+15551234567"), "c1", "hello there")
	if err != nil {
		t.Fatal(err)
	}
	want := fakeopenclaw.ReplyText("hello there")
	wantChunks := strings.SplitAfter(want, " ")
	if strings.Join(chunks, "") != want || len(chunks) != len(wantChunks) {
		t.Fatalf("chunks %q, want the deltas %q once each (the final's repeat not yielded)", chunks, wantChunks)
	}
	sends := e.fake.Sends()
	if len(sends) != 1 || sends[0].Message != "hello there" || sends[0].Method != "agent" ||
		sends[0].SessionKey != "handset:call:c1" || !strings.HasPrefix(sends[0].IdempotencyKey, "handset-") {
		t.Fatalf("sends %+v: want one agent run of the latest message only on handset:call:c1", sends)
	}
}

// TestGatewayOverTLS: a wss:// gateway is reached with the HTTP client given, whose TLS
// configuration decides which certificates are trusted: the test server's own CA works, the
// system's alone does not.
func TestGatewayOverTLS(t *testing.T) {
	fake := fakeopenclaw.New(fakeopenclaw.Options{Token: token})
	srv := httptest.NewTLSServer(fake)
	t.Cleanup(func() { fake.Close(); srv.Close() })
	url := "wss" + strings.TrimPrefix(srv.URL, "https")
	trusting, err := openclaw.New(openclaw.Options{URL: url, Token: token, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	defer trusting.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	s, err := trusting.Reply(turnCtx(ctx, "c1", "+15551234567"), req("c1", "hello over tls"))
	if err != nil {
		t.Fatalf("a turn over wss:// with the server's CA trusted: %v", err)
	}
	chunks, err := collect(t, s)
	s.Close()
	if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText("hello over tls") {
		t.Errorf("reply %q, %v", chunks, err)
	}
	plain, err := openclaw.New(openclaw.Options{URL: url, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.ListAgents(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("with only the system's CAs the test server's certificate was accepted: %v", err)
	}
}

// TestUsageReported: the gateway reports a run's output tokens in an agent "usage" event
// (and no input count): they come out as the stream's Usage.
func TestUsageReported(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
	s, err := e.agent.Reply(turnCtx(context.Background(), "c1", "+15551234567"), req("c1", "what time is it"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got voice.Usage
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Usage.Reported() {
			got = c.Usage
		}
	}
	if want := (voice.Usage{OutputTokens: len(strings.Fields(fakeopenclaw.ReplyText("what time is it")))}); got != want {
		t.Errorf("usage %+v, want %+v", got, want)
	}
}

func TestConcurrentCallsShareOneConnectionAndGetOwnRuns(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{SlowEvery: time.Millisecond}, openclaw.Options{})
	msgs := []string{"SLOW first caller talking", "SLOW second caller asking"}
	got := make([][]string, len(msgs))
	errs := make([]error, len(msgs))
	var wg sync.WaitGroup
	for i, m := range msgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := "call" + string(rune('A'+i))
			got[i], errs[i] = reply(t, e, turnCtx(context.Background(), id, "+1555000000"+string(rune('1'+i))), id, m)
		}()
	}
	wg.Wait()
	for i, m := range msgs {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if strings.Join(got[i], "") != fakeopenclaw.ReplyText(m) {
			t.Errorf("call %d got %q, want only its own reply %q", i, strings.Join(got[i], ""), fakeopenclaw.ReplyText(m))
		}
	}
	if n := e.fake.Connections(); n != 1 {
		t.Errorf("%d connections, want 1 shared", n)
	}
}

// An idle second client sees every run too (broadcast); it must not disturb anything, and
// a run of another client must not reach our turns.
func TestForeignRunsIgnored(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
	other, err := openclaw.New(openclaw.Options{URL: e.url, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.ListAgents(context.Background()); err != nil { // connect it
		t.Fatal(err)
	}
	chunks, err := reply(t, e, context.Background(), "c1", "mine")
	if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText("mine") {
		t.Fatalf("got %q, %v", chunks, err)
	}
	chunks, err = reply(t, &env{fake: e.fake, agent: other}, context.Background(), "c2", "theirs")
	if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText("theirs") {
		t.Fatalf("other client got %q, %v", chunks, err)
	}
}

func TestSessionKeys(t *testing.T) {
	const rawCaller = "+15551234567"
	t.Run("per call", func(t *testing.T) {
		e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
		for _, id := range []string{"c1", "c2"} {
			if _, err := reply(t, e, turnCtx(context.Background(), id, rawCaller), id, "hi"); err != nil {
				t.Fatal(err)
			}
		}
		s := e.fake.Sends()
		if s[0].SessionKey == s[1].SessionKey || s[0].SessionKey != "handset:call:c1" {
			t.Fatalf("keys %q and %q: want one per call", s[0].SessionKey, s[1].SessionKey)
		}
		noRawNumbers(t, e, rawCaller)
	})
	t.Run("caller hash", func(t *testing.T) {
		e := setup(t, fakeopenclaw.Options{}, openclaw.Options{SessionKey: session.ByCallerHash})
		for _, c := range []struct{ id, from string }{{"c1", rawCaller}, {"c2", rawCaller}, {"c3", "+15559999999"}} {
			if _, err := reply(t, e, turnCtx(context.Background(), c.id, c.from), c.id, "hi"); err != nil {
				t.Fatal(err)
			}
		}
		s := e.fake.Sends()
		if s[0].SessionKey != s[1].SessionKey || s[0].SessionKey == s[2].SessionKey ||
			!strings.HasPrefix(s[0].SessionKey, "handset:") || strings.HasPrefix(s[0].SessionKey, "handset:handset:") {
			t.Fatalf("keys %q %q %q: want the same key for the same caller, another for another", s[0].SessionKey, s[1].SessionKey, s[2].SessionKey)
		}
		noRawNumbers(t, e, rawCaller)
	})
	t.Run("agent qualified", func(t *testing.T) {
		e := setup(t, fakeopenclaw.Options{Agents: []fakeopenclaw.Agent{{ID: "main"}, {ID: "support"}}},
			openclaw.Options{Agent: "openclaw/support", SessionKey: func(session.Context) string { return "room-7" }})
		if _, err := reply(t, e, context.Background(), "c1", "hi"); err != nil {
			t.Fatal(err)
		}
		if s := e.fake.Sends()[0]; s.SessionKey != "agent:support:handset:room-7" || s.AgentID != "support" {
			t.Fatalf("send %+v: want the agent-qualified key in our namespace", s)
		}
	})
}

func noRawNumbers(t *testing.T, e *env, raw string) {
	t.Helper()
	for _, f := range e.fake.Frames() {
		if strings.Contains(f, raw) || strings.Contains(f, strings.TrimPrefix(raw, "+")) {
			t.Fatalf("frame carries the raw number: %s", f)
		}
	}
}

func TestCancelDuringToolCallAborts(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	s, err := e.agent.Reply(ctx, req("c1", "look it up TOOLCALL"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cancel() // before any text, nobody in Next
	waitFor(t, e, "chat.abort", func(f *fakeopenclaw.Server) bool { return len(f.Aborts()) == 1 })
	ab, sent := e.fake.Aborts()[0], e.fake.Sends()[0]
	if ab.RunID != sent.IdempotencyKey || ab.SessionKey != sent.SessionKey {
		t.Fatalf("abort %+v for send %+v", ab, sent)
	}
	chunks, err := collect(t, s) // the tool's progress may come first, never text
	if len(chunks) != 0 {
		t.Errorf("text %q after the cancel", chunks)
	}
	wantKind(t, err, voice.KindCanceled)
}

func TestToolCallProgressThenReply(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{ToolCallFor: time.Millisecond}, openclaw.Options{})
	s, err := e.agent.Reply(context.Background(), req("c1", "TOOLCALL now"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, err := s.Next()
	if err != nil || c.Progress != "Search the web" || c.Text != "" {
		t.Fatalf("first chunk %+v, %v: want the tool's progress label", c, err)
	}
	chunks, err := collect(t, s)
	if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText("TOOLCALL now") {
		t.Fatalf("got %q, %v", chunks, err)
	}
}

func TestCloseDuringToolCallAborts(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
	s, err := e.agent.Reply(context.Background(), req("c1", "TOOLCALL please"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close() // idempotent
	waitFor(t, e, "chat.abort", func(f *fakeopenclaw.Server) bool { return len(f.Aborts()) == 1 })
	if n := len(e.fake.Aborts()); n != 1 {
		t.Fatalf("%d aborts, want 1", n)
	}
}

// TestNextAfterCloseReturns: a reader still asking for the reply once it is closed, or
// waiting for it as it is closed, gets a cancellation at once, not a wait for a context
// that may never end.
func TestNextAfterCloseReturns(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{Timeout: time.Hour})
	s, err := e.agent.Reply(context.Background(), req("c1", "TOOLCALL please"))
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		_, err := collect(t, s) // the tool's progress, then a wait for text that never comes
		waiting <- err
	}()
	s.Close()
	select {
	case err := <-waiting:
		wantKind(t, err, voice.KindCanceled)
	case <-time.After(10 * time.Second):
		t.Fatal("Next still waits after Close")
	}
	if _, err := s.Next(); err == nil {
		t.Fatal("Next after Close returned no error")
	}
}

func TestAgentCloseAbortsRunningTurns(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
	s, err := e.agent.Reply(context.Background(), req("c1", "TOOLCALL please"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e.agent.Close()
	waitFor(t, e, "chat.abort", func(f *fakeopenclaw.Server) bool { return len(f.Aborts()) == 1 })
	chunks, err := collect(t, s) // the tool's progress may come first, never text
	if len(chunks) != 0 {
		t.Errorf("text %q after the cancel", chunks)
	}
	wantKind(t, err, voice.KindCanceled)
}

func TestSilenceTimeout(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{Timeout: 20 * time.Millisecond})
	_, err := reply(t, e, context.Background(), "c1", "TOOLCALL")
	wantKind(t, err, voice.KindTimeout)
	waitFor(t, e, "chat.abort", func(f *fakeopenclaw.Server) bool { return len(f.Aborts()) == 1 })
}

func TestErrors(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
	for _, c := range []struct {
		msg  string
		kind voice.ErrorKind
	}{{"FAIL400", voice.KindBadInput}, {"FAIL500", voice.KindTransient}, {"DOUBLEERROR", voice.KindBadInput}} {
		s, err := e.agent.Reply(context.Background(), req("c1", c.msg))
		if err != nil {
			t.Fatal(err)
		}
		chunks, err := collect(t, s)
		if len(chunks) != 0 {
			t.Errorf("%s: text %q spoken", c.msg, chunks)
		}
		wantKind(t, err, c.kind)
		if strings.Contains(err.Error(), "⚠️") {
			t.Errorf("%s: the second error won: %v", c.msg, err)
		}
		_, again := s.Next()
		if again != err {
			t.Errorf("%s: Next after the error gave %v, want the same error", c.msg, again)
		}
		s.Close()
	}
	// The turn after DOUBLEERROR is unaffected by its stray second error.
	chunks, err := reply(t, e, context.Background(), "c1", "after")
	if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText("after") {
		t.Fatalf("next turn: %q, %v", chunks, err)
	}
}

func TestDropBeforeTextRetriesWithSameKey(t *testing.T) {
	// DROP: the socket goes after the ack (the stream's reconnect); DROPSEND: before it
	// (Reply's reconnect).
	for _, msg := range []string{"DROP this", "DROPSEND this"} {
		t.Run(msg, func(t *testing.T) {
			e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
			chunks, err := reply(t, e, context.Background(), "c1", msg)
			if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText(msg) {
				t.Fatalf("got %q, %v", chunks, err)
			}
			s := e.fake.Sends()
			if len(s) != 2 || s[0].IdempotencyKey != s[1].IdempotencyKey {
				t.Fatalf("sends %+v: want the turn re-sent once with the same idempotency key", s)
			}
			if n := e.fake.Connections(); n != 2 {
				t.Errorf("%d connections, want 2 (one reconnect)", n)
			}
		})
	}
}

func TestDropAfterTextFailsTransient(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{})
	chunks, err := reply(t, e, context.Background(), "c1", "DROPLATE this")
	if len(chunks) != 1 {
		t.Fatalf("chunks %q: want the first delta only", chunks)
	}
	wantKind(t, err, voice.KindTransient)
	if n := len(e.fake.Sends()); n != 1 {
		t.Fatalf("%d sends: want no retry after text was yielded", n)
	}
	// The agent reconnects for the next turn.
	if chunks, err := reply(t, e, context.Background(), "c1", "again"); err != nil || len(chunks) == 0 {
		t.Fatalf("next turn: %q, %v", chunks, err)
	}
}

func TestVoicePromptUsesAgentMethod(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{VoicePrompt: "Answer in short spoken sentences."})
	chunks, err := reply(t, e, context.Background(), "c1", "hi")
	if err != nil || strings.Join(chunks, "") != fakeopenclaw.ReplyText("hi") {
		t.Fatalf("got %q, %v", chunks, err)
	}
	if s := e.fake.Sends()[0]; s.Method != "agent" || s.ExtraSystemPrompt != "Answer in short spoken sentences." {
		t.Fatalf("send %+v", s)
	}
}

func TestBadTokenIsAuth(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{}, openclaw.Options{Token: "wrong"})
	_, err := e.agent.Reply(context.Background(), req("c1", "hi"))
	wantKind(t, err, voice.KindAuth)
	_, err = e.agent.ListAgents(context.Background())
	wantKind(t, err, voice.KindAuth)
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("error shows the token: %v", err)
	}
}

func TestUnreachableIsTransient(t *testing.T) {
	a, err := openclaw.New(openclaw.Options{URL: "ws://127.0.0.1:1", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, err = a.Reply(context.Background(), req("c1", "hi"))
	wantKind(t, err, voice.KindTransient)
}

func TestListAndSelectAgents(t *testing.T) {
	e := setup(t, fakeopenclaw.Options{Agents: []fakeopenclaw.Agent{{ID: "main", Name: "Main"}, {ID: "support", Name: "Support Line"}}},
		openclaw.Options{})
	agents, err := e.agent.ListAgents(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) != 2 || agents[1] != (openclaw.AgentInfo{ID: "support", Name: "Support Line"}) {
		t.Fatalf("agents %+v", agents)
	}
	one := []openclaw.AgentInfo{{ID: "main"}}
	for _, c := range []struct {
		configured string
		agents     []openclaw.AgentInfo
		want       string
		errHas     []string
	}{
		{"openclaw/support", agents, "support", nil},
		{"support", agents, "support", nil},
		{"openclaw/sales", agents, "", []string{`"sales"`, "main, support"}},
		{"", agents, "", []string{"main, support", "HANDSET_AGENT_MODEL=openclaw/<agent>"}},
		{"openclaw", agents, "", []string{"HANDSET_AGENT_MODEL"}},
		{"", one, "main", nil},
		{"openclaw/main", one, "main", nil},
		{"openclaw/other", one, "", []string{"other"}},
		{"", nil, "", []string{"no agents"}},
	} {
		got, err := openclaw.SelectAgent(c.configured, c.agents)
		if got != c.want || (err == nil) != (c.errHas == nil) {
			t.Errorf("SelectAgent(%q, %v) = %q, %v; want %q", c.configured, c.agents, got, err, c.want)
			continue
		}
		for _, s := range c.errHas {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("SelectAgent(%q): error %q does not say %q", c.configured, err, s)
			}
		}
	}
}

func TestNoCallerMessage(t *testing.T) {
	a, err := openclaw.New(openclaw.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, err = a.Reply(context.Background(), voice.TurnRequest{CallID: "c1"})
	wantKind(t, err, voice.KindBadInput)
	if _, err := openclaw.New(openclaw.Options{URL: "http://x"}); err == nil {
		t.Error("an http:// URL was accepted")
	}
}

// A caller Handset knows nothing of gets a session of their own, and the note about them
// as extra system prompt (after the voice prompt, or alone: the "agent" method either way).
func TestCallerNote(t *testing.T) {
	for _, prompt := range []string{"", "Answer in short spoken sentences."} {
		e := setup(t, fakeopenclaw.Options{}, openclaw.Options{VoicePrompt: prompt, SessionKey: session.ByCallerHash})
		withheld := session.NewContext(voice.LegInfo{CallID: "c1", Carrier: "twilio", Direction: voice.Inbound,
			From: "sip:anonymous@anonymous.invalid", To: "+15550001111"}, []byte("secret"))
		if _, err := reply(t, e, session.With(context.Background(), withheld), "c1", "hi"); err != nil {
			t.Fatal(err)
		}
		if _, err := reply(t, e, turnCtx(context.Background(), "c2", "+15550002222"), "c2", "hi"); err != nil {
			t.Fatal(err)
		}
		sends := e.fake.Sends()
		if len(sends) != 2 {
			t.Fatalf("%d sends", len(sends))
		}
		s := sends[0]
		if s.Method != "agent" || !strings.HasPrefix(s.ExtraSystemPrompt, prompt) || !strings.Contains(s.ExtraSystemPrompt, "withheld their number") ||
			s.SessionKey != "handset:call:c1" {
			t.Errorf("voice prompt %q, withheld caller: %+v", prompt, s)
		}
		if o := sends[1]; strings.Contains(o.ExtraSystemPrompt, "Note from Handset") || !strings.HasPrefix(o.SessionKey, "handset:ch_") {
			t.Errorf("voice prompt %q, ordinary caller: %+v", prompt, o)
		}
	}
}
