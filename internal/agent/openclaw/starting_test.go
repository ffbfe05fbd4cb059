package openclaw_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/voice"
)

// startingGateway is the fake gateway behind a server that can also refuse WebSocket
// upgrades with 503; refuse503 counts the upgrades still to refuse that way.
type startingGateway struct {
	fake      *fakeopenclaw.Server
	agent     *openclaw.Agent
	url       string
	upgrades  atomic.Int64 // upgrade requests seen
	refuse503 atomic.Int64
}

func newStartingGateway(t *testing.T, fo fakeopenclaw.Options) *startingGateway {
	t.Helper()
	fo.Token = token
	g := &startingGateway{fake: fakeopenclaw.New(fo)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.upgrades.Add(1)
		if g.refuse503.Add(-1) >= 0 {
			http.Error(w, "Gateway websocket admission closed", http.StatusServiceUnavailable)
			return
		}
		g.fake.ServeHTTP(w, r)
	}))
	g.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	a, err := openclaw.New(openclaw.Options{URL: g.url, Token: token, Agent: "main"})
	if err != nil {
		t.Fatal(err)
	}
	g.agent = a
	t.Cleanup(func() { a.Close(); g.fake.Close(); srv.Close() })
	return g
}

// firstConnects says "starting" for connect attempts from..to (counting from 1).
func firstConnects(from, to int64) func() bool {
	var n atomic.Int64
	return func() bool {
		i := n.Add(1)
		return i >= from && i <= to
	}
}

func startingTurn(t *testing.T, a *openclaw.Agent, ctx context.Context, msg string) (string, error) {
	t.Helper()
	s, err := a.Reply(turnCtx(ctx, "call-starting", "+15550100007"), req("call-starting", msg))
	if err != nil {
		return "", err
	}
	defer s.Close()
	var b strings.Builder
	for {
		c, err := s.Next()
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		b.WriteString(c.Text)
	}
}

// TestTurnWaitsWhileGatewayStarts: a gateway that answers "gateway starting; retry
// shortly" (with the answer and the 1013 close, with the close alone, or with 503 on the
// upgrade) is asked again until it is ready, and the turn is answered.
func TestTurnWaitsWhileGatewayStarts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		closeOnly bool
		refuse503 int64
	}{
		{name: "unavailable answer"},
		{name: "close 1013 only", closeOnly: true},
		{name: "upgrade 503", refuse503: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newStartingGateway(t, fakeopenclaw.Options{Starting: firstConnects(1, 3),
				StartingRetryAfter: 10 * time.Millisecond, StartingCloseOnly: tc.closeOnly})
			g.refuse503.Store(tc.refuse503)
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			text, err := startingTurn(t, g.agent, ctx, "hello there")
			if err != nil {
				t.Fatalf("turn failed while the gateway started: %v", err)
			}
			if text != fakeopenclaw.ReplyText("hello there") {
				t.Errorf("reply %q", text)
			}
			if n := g.fake.StartingRefusals(); n != 3 {
				t.Errorf("connects refused as starting: %d, want 3", n)
			}
			if n := g.upgrades.Load(); n != 4+tc.refuse503 {
				t.Errorf("upgrade requests %d, want %d", n, 4+tc.refuse503)
			}
			if n := g.fake.Connections(); n != 1 {
				t.Errorf("connections %d, want 1", n)
			}
		})
	}
}

// TestRosterWaitsWhileGatewayStarts: listing the agents (as start-up and doctor do) waits
// the same way.
func TestRosterWaitsWhileGatewayStarts(t *testing.T) {
	g := newStartingGateway(t, fakeopenclaw.Options{Starting: firstConnects(1, 2), StartingRetryAfter: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	agents, err := g.agent.ListAgents(ctx)
	if err != nil || len(agents) != 1 || agents[0].ID != "main" {
		t.Fatalf("ListAgents: %v %v", agents, err)
	}
	if n := g.fake.StartingRefusals(); n != 2 {
		t.Errorf("refusals %d, want 2", n)
	}
}

// TestStartingPastTheTurnLimit: a gateway still starting when the turn's context ends
// fails the turn as a timeout that still says the gateway was starting.
func TestStartingPastTheTurnLimit(t *testing.T) {
	g := newStartingGateway(t, fakeopenclaw.Options{Starting: func() bool { return true }, StartingRetryAfter: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// End the turn once the gateway has been asked a few times: the limit is the turn's.
	go func() {
		wctx, stop := context.WithTimeout(ctx, waitLimit)
		defer stop()
		_ = g.fake.WaitFor(wctx, func(s *fakeopenclaw.Server) bool { return s.StartingRefusals() >= 3 })
		cancel()
	}()
	done := make(chan error, 1)
	go func() { _, err := startingTurn(t, g.agent, ctx, "hello"); done <- err }()
	var err error
	select {
	case err = <-done:
	case <-time.After(2 * waitLimit):
		t.Fatal("the turn did not end with its context")
	}
	if !openclaw.IsStarting(err) {
		t.Errorf("error %v does not say the gateway is starting", err)
	}
	wantKind(t, err, voice.KindCanceled)

	tctx, stop := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer stop()
	_, err = startingTurn(t, g.agent, tctx, "hello")
	if !openclaw.IsStarting(err) {
		t.Errorf("error %v does not say the gateway is starting", err)
	}
	wantKind(t, err, voice.KindTimeout)
	if len(g.fake.Sends()) != 0 {
		t.Errorf("a turn reached a gateway that never started: %+v", g.fake.Sends())
	}
}

// TestCloseWhileWaitingForStart: closing the Agent ends a turn that waits for the gateway.
func TestCloseWhileWaitingForStart(t *testing.T) {
	g := newStartingGateway(t, fakeopenclaw.Options{Starting: func() bool { return true }, StartingRetryAfter: time.Second})
	done := make(chan error, 1)
	go func() { _, err := startingTurn(t, g.agent, context.Background(), "hello"); done <- err }()
	wctx, stop := context.WithTimeout(context.Background(), waitLimit)
	defer stop()
	if err := g.fake.WaitFor(wctx, func(s *fakeopenclaw.Server) bool { return s.StartingRefusals() >= 1 }); err != nil {
		t.Fatal(err)
	}
	g.agent.Close()
	select {
	case err := <-done:
		wantKind(t, err, voice.KindCanceled)
	case <-time.After(waitLimit):
		t.Fatal("the waiting turn outlived Close")
	}
}

// TestRestartMidTurnIsWaitedFor: the connection drops under a turn (the gateway
// restarts) and the gateway is starting when Handset reconnects: the turn is re-sent once
// it is ready.
func TestRestartMidTurnIsWaitedFor(t *testing.T) {
	g := newStartingGateway(t, fakeopenclaw.Options{Starting: firstConnects(2, 4), StartingRetryAfter: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	text, err := startingTurn(t, g.agent, ctx, "DROP hello")
	if err != nil {
		t.Fatalf("turn: %v", err)
	}
	if text != fakeopenclaw.ReplyText("DROP hello") {
		t.Errorf("reply %q", text)
	}
	if n := g.fake.StartingRefusals(); n != 3 {
		t.Errorf("refusals %d, want 3", n)
	}
	if sends := g.fake.Sends(); len(sends) != 2 || sends[0].IdempotencyKey != sends[1].IdempotencyKey {
		t.Errorf("want the turn re-sent once with its key: %+v", sends)
	}
}

// TestOtherRefusalsAreNotRetried: a refusal that is not "starting" (a wrong token) fails
// at once.
func TestOtherRefusalsAreNotRetried(t *testing.T) {
	g := newStartingGateway(t, fakeopenclaw.Options{})
	a, err := openclaw.New(openclaw.Options{URL: g.url, Token: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	_, err = a.ListAgents(ctx)
	wantKind(t, err, voice.KindAuth)
	if openclaw.IsStarting(err) || g.upgrades.Load() != 1 {
		t.Errorf("a wrong token was retried: %v after %d upgrades", err, g.upgrades.Load())
	}
}

// TestHTTPEndpointWaitsWhileGatewayStarts: the HTTP transport's requests answered 503
// while the gateway's plugins load are sent again, body and all, after Retry-After; when
// the context ends first, the last 503 comes back as it was.
func TestHTTPEndpointWaitsWhileGatewayStarts(t *testing.T) {
	var refusals atomic.Int64
	refuse := atomic.Int64{}
	refuse.Store(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if refuse.Add(-1) >= 0 {
			refusals.Add(1)
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Plugin runtime is starting", http.StatusServiceUnavailable)
			return
		}
		w.Write(append([]byte("got "), body...))
	}))
	defer srv.Close()
	client := &http.Client{Transport: openclaw.WaitingTransport(nil)}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"openclaw/support"}`))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != `got {"model":"openclaw/support"}` || refusals.Load() != 2 {
		t.Errorf("status %d, body %q after %d refusals", resp.StatusCode, got, refusals.Load())
	}

	// Still starting when the request's time runs out: the 503, readable.
	refuse.Store(1 << 30)
	sctx, stop := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer stop()
	req, _ = http.NewRequestWithContext(sctx, http.MethodGet, srv.URL+"/v1/models", nil)
	resp, err = client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(got), "Plugin runtime is starting") {
		t.Errorf("status %d, body %q", resp.StatusCode, got)
	}
}
