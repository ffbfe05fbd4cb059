package cli

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/testpeer"
)

// The OpenClaw rough edges met against the real gateway: a gateway still starting, a
// missing token, the fixes `handset test` gives, and the gateway's ws:// address.

// ocGateway starts a fake gateway on a server whose /v1/ is off (404) unless v1 serves it;
// it returns the server's http:// URL.
func ocGateway(t *testing.T, opts fakeopenclaw.Options, v1 http.Handler) (*fakeopenclaw.Server, string) {
	t.Helper()
	gw := fakeopenclaw.New(opts)
	mux := newMux(gw, v1)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { gw.Close(); srv.Close() })
	return gw, srv.URL
}

func newMux(gw http.Handler, v1 http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	if v1 == nil {
		v1 = http.NotFoundHandler() // the gateway's default: the OpenAI-compatible endpoint off
	}
	mux.Handle("/v1/", v1)
	mux.Handle("/", gw)
	return mux
}

// serveStarting runs serve like startServe, but allows it limit to start listening.
func serveStarting(t *testing.T, limit time.Duration, transcripts []string, extra ...string) *rig {
	t.Helper()
	r, env := withFakes(t, transcripts, extra...)
	r.environ = env
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"serve"}, Env{Stdout: r.logs, Stderr: r.logs, Environ: env, WorkDir: t.TempDir(),
			Ready: func(addr string) { ready <- addr }})
	}()
	select {
	case r.addr = <-ready:
	case code := <-exited:
		cancel()
		t.Fatalf("serve exited with %d before listening:\n%s", code, r.logs.String())
	case <-time.After(limit):
		cancel()
		t.Fatalf("serve did not start within %s:\n%s", limit, r.logs.String())
	}
	t.Cleanup(func() {
		cancel()
		if code := <-exited; code != 0 {
			t.Errorf("serve exited with %d:\n%s", code, r.logs.String())
		}
	})
	return r
}

// TestServeWhileOpenClawStarts: serve does not exit while the gateway says "gateway
// starting; retry shortly": a gateway that is ready within the start-up probe is waited
// for (and its roster checked); one still starting past it leaves serve running, and a
// call's turn waits for it within the turn's limit.
func TestServeWhileOpenClawStarts(t *testing.T) {
	testpeer.Slow(t, "waits out a gateway that keeps starting")
	ocEnv := func(url string) []string {
		return []string{"HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL=" + url, "HANDSET_AGENT_KEY=gw-token",
			"HANDSET_AGENT_MODEL=openclaw/support", "HANDSET_AGENT_TURN_TIMEOUT=60s"}
	}
	agents := []fakeopenclaw.Agent{{ID: "main"}, {ID: "support"}}

	t.Run("ready within the probe", func(t *testing.T) {
		var n atomic.Int64
		gw, url := ocGateway(t, fakeopenclaw.Options{Token: "gw-token", Agents: agents, StartingRetryAfter: 20 * time.Millisecond,
			Starting: func() bool { return n.Add(1) <= 3 }}, nil)
		r := serveStarting(t, 30*time.Second, []string{"hello there"}, ocEnv(url)...)
		if gw.StartingRefusals() != 3 {
			t.Errorf("refusals %d, want 3", gw.StartingRefusals())
		}
		if !strings.Contains(r.logs.String(), `"openclaw agent"`) && !strings.Contains(r.logs.String(), "openclaw agent") {
			t.Errorf("the agent was not chosen at start-up:\n%s", r.logs.String())
		}
		callerTurns(context.Background(), t, r, "+15550100001", 1, 0)
	})

	t.Run("still starting past the probe", func(t *testing.T) {
		var ready atomic.Bool
		gw, url := ocGateway(t, fakeopenclaw.Options{Token: "gw-token", Agents: agents, StartingRetryAfter: 50 * time.Millisecond,
			Starting: func() bool { return !ready.Load() }}, nil)
		r := serveStarting(t, openclaw.StartupProbe+30*time.Second, []string{"hello there"}, ocEnv(url)...)
		if !strings.Contains(r.logs.String(), "the OpenClaw gateway is not ready") {
			t.Errorf("serve did not say it started without the gateway:\n%s", r.logs.String())
		}
		// The caller speaks while the gateway is still starting: the turn is held, not failed.
		ctx := context.Background()
		c := r.dial(ctx)
		waitMark(ctx, t, c, "t0-end")
		before := gw.StartingRefusals()
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 71)); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := gw.WaitFor(wctx, func(s *fakeopenclaw.Server) bool { return s.StartingRefusals() >= before+2 }); err != nil {
			t.Fatalf("the turn did not ask the starting gateway again: %v\n%s", err, r.logs.String())
		}
		ready.Store(true)
		waitMarkFor(ctx, t, c, markEnd(1), 30*time.Second)
		_ = c.Hangup()
		<-c.Done()
		events := r.journal()
		if n := len(eventsOf(events, obs.AgentDone)); n != 1 {
			t.Errorf("agent.done %d, want 1:\n%s", n, dumpEvents(events))
		}
		if sends := gw.Sends(); len(sends) != 1 || sends[0].AgentID != "support" {
			t.Errorf("the gateway got %+v, want one turn for support", sends)
		}
	})
}

// TestDoctorOpenClawToken: no token is never a check mark: a gateway that wants one fails
// the check saying none was sent (not that it "refuses the token"), one that lets anyone in
// is a warning; both fixes name OPENCLAW_GATEWAY_TOKEN and HANDSET_AGENT_KEY.
func TestDoctorOpenClawToken(t *testing.T) {
	testpeer.Slow(t, "doctor against several fake gateways")
	r := newDocRig(t)
	_, locked := ocGateway(t, fakeopenclaw.Options{Token: docGWToken, Agents: []fakeopenclaw.Agent{{ID: "support"}}}, nil)
	_, open := ocGateway(t, fakeopenclaw.Options{Agents: []fakeopenclaw.Agent{{ID: "support"}}}, nil)
	base := []string{"HANDSET_AGENT=openclaw", "HANDSET_AGENT_KEY=", "OPENCLAW_GATEWAY_TOKEN=", "HANDSET_AGENT_MODEL=openclaw/support"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }

	res := r.expect(with("HANDSET_AGENT_URL="+locked), 1, "agent", "gateway", doctor.Fail, "OPENCLAW_GATEWAY_TOKEN (or HANDSET_AGENT_KEY)")
	if strings.Contains(res.Detail, "refuses the token") || !strings.Contains(res.Detail, "sent no token") {
		t.Errorf("no token sent: %q", res.Detail)
	}
	res = r.expect(with("HANDSET_AGENT_URL="+open), 0, "agent", "gateway", doctor.Warn, "OPENCLAW_GATEWAY_TOKEN (or HANDSET_AGENT_KEY)")
	if !strings.Contains(res.Detail, "without a token") {
		t.Errorf("a gateway open to all: %q", res.Detail)
	}
	_, rep := r.report(with("HANDSET_AGENT_URL=" + open))
	if s := findResult(t, rep, "config", "secrets"); s.Status != doctor.Warn || !strings.Contains(s.Detail, "HANDSET_AGENT_KEY missing") {
		t.Errorf("secrets: %+v", s)
	}
	res = r.expect(with("HANDSET_AGENT_URL="+locked, "OPENCLAW_GATEWAY_TOKEN=not-the-gw-token"), 1, "agent", "gateway", doctor.Fail, "OPENCLAW_GATEWAY_TOKEN")
	if !strings.Contains(res.Detail, "refuses the token") {
		t.Errorf("a wrong token: %q", res.Detail)
	}
	_, rep = r.report(with("HANDSET_AGENT_URL="+locked, "OPENCLAW_GATEWAY_TOKEN="+docGWToken))
	if s := findResult(t, rep, "agent", "gateway"); s.Status != doctor.OK || !strings.Contains(s.Detail, "accepts the token") {
		t.Errorf("the right token: %+v", s)
	}

	// A gateway still starting when the check runs out of time is a warning that says so.
	_, starting := ocGateway(t, fakeopenclaw.Options{Token: docGWToken, Starting: func() bool { return true }}, nil)
	res = r.expect(with("HANDSET_AGENT_URL="+starting, "OPENCLAW_GATEWAY_TOKEN="+docGWToken), 0, "agent", "gateway", doctor.Warn, "wait for it")
	if !strings.Contains(res.Detail, "still starting") {
		t.Errorf("starting: %q", res.Detail)
	}
}

// TestTestCommandGivesDoctorsOpenClawFix: for an agent the gateway does not have (or none
// named among several), the HTTP endpoint switched off and a gateway that is not there,
// `handset test` gives the fix doctor gives, word for word.
func TestTestCommandGivesDoctorsOpenClawFix(t *testing.T) {
	_, url := ocGateway(t, fakeopenclaw.Options{Token: docGWToken, Agents: []fakeopenclaw.Agent{{ID: "main"}, {ID: "support"}}}, nil)
	oc := []string{"HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL=" + url, "HANDSET_AGENT_KEY=", "OPENCLAW_GATEWAY_TOKEN=" + docGWToken}
	d := newDocRig(t)
	for _, tc := range []struct {
		name, check string
		env         []string
	}{
		{"unknown agent", "agent", []string{"HANDSET_AGENT_MODEL=openclaw/sales"}},
		{"no agent named", "agent", []string{"HANDSET_AGENT_MODEL="}},
		{"http endpoint off", "http endpoint", []string{"HANDSET_AGENT_MODEL=openclaw/support", "HANDSET_AGENT_TRANSPORT=http"}},
		{"gateway down", "gateway", []string{"HANDSET_AGENT_MODEL=openclaw/support", "HANDSET_AGENT_URL=" + docFreeURL(t, "http")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := override(oc, tc.env)
			_, rep := d.report(env)
			want := findResult(t, rep, "agent", tc.check)
			if want.Status != doctor.Fail || want.Fix == "" {
				t.Fatalf("doctor: %+v", want)
			}
			_, fakes := withFakes(t, []string{"testing one two three"}, env...)
			code, out := runCmd(t, fakes, "test")
			if code != 1 || !strings.Contains(out, "FAIL agent") || !strings.Contains(out, "fix: "+want.Fix+"\n") {
				t.Errorf("handset test: exit %d, want 1 with doctor's fix %q:\n%s", code, want.Fix, out)
			}
		})
	}
}

// TestOpenClawWebSocketURL: HANDSET_AGENT_URL may be the gateway's ws:// address; the
// WebSocket transport uses it as it is, the HTTP one the http:// URL of the same port, and
// doctor and `handset agents` read it too.
func TestOpenClawWebSocketURL(t *testing.T) {
	llm := fakeopenai.New(fakeopenai.Options{Key: docGWToken, Models: []string{"openclaw", "openclaw/support"}})
	gw, url := ocGateway(t, fakeopenclaw.Options{Token: docGWToken, Agents: []fakeopenclaw.Agent{{ID: "support"}}}, llm)
	t.Cleanup(llm.Close)
	ws := "ws" + strings.TrimPrefix(url, "http")
	env := []string{"HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL=" + ws, "HANDSET_AGENT_KEY=" + docGWToken, "HANDSET_AGENT_MODEL=openclaw/support"}
	for _, transport := range []string{"ws", "http"} {
		_, fakes := withFakes(t, []string{"testing one two three"}, append(env, "HANDSET_AGENT_TRANSPORT="+transport)...)
		if code, out := runCmd(t, fakes, "test"); code != 0 || !strings.Contains(out, "ok   agent openclaw") {
			t.Errorf("transport %s at %s: exit %d\n%s", transport, ws, code, out)
		}
	}
	if n := len(gw.Sends()); n != 1 {
		t.Errorf("turns over the WebSocket %d, want 1", n)
	}
	if n := len(llm.Requests()); n != 1 || llm.Requests()[0].Model != "openclaw/support" {
		t.Errorf("turns over HTTP: %+v", llm.Requests())
	}
	if code, out := runCmd(t, env, "agents"); code != 0 || !strings.Contains(out, "Handset uses support") {
		t.Errorf("agents at %s: exit %d\n%s", ws, code, out)
	}
	d := newDocRig(t)
	_, rep := d.report(append(env, "HANDSET_AGENT_TRANSPORT=http"))
	for _, name := range []string{"gateway", "agent", "http endpoint"} {
		if res := findResult(t, rep, "agent", name); res.Status != doctor.OK {
			t.Errorf("doctor %s at %s: %+v", name, ws, res)
		}
	}
}
