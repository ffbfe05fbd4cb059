package cli

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/realopenclaw"
	"github.com/handset-voice/handset/internal/testpeer"
)

// TestRealOpenClawStartsWithServe starts serve together with the real OpenClaw gateway, as
// a machine booting both does: serve comes up while the gateway does not even listen yet
// (its address given as ws://), a call is placed, and the caller speaks the moment the
// gateway's port opens, while it still answers "gateway starting; retry shortly" for a
// while: the turn waits for it and is answered.
func TestRealOpenClawStartsWithServe(t *testing.T) {
	testpeer.Slow(t, "starts the real OpenClaw gateway")
	realopenclaw.NeedInstall(t)
	llm := fakeopenai.New(fakeopenai.Options{Key: "llm-key"})
	llmSrv := httptest.NewServer(realopenclaw.HumanLast(llm))
	defer func() { llm.Close(); llmSrv.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	gw, err := realopenclaw.Launch(ctx, realopenclaw.Options{
		LLMURL: llmSrv.URL + "/v1", LLMKey: "llm-key", Agents: []string{"support", "billing"}, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Stop()
	begin := time.Now()

	r := serveStarting(t, 60*time.Second, []string{"hello there"},
		"HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL="+gw.WSURL(), "HANDSET_AGENT_KEY="+gw.Token(),
		"HANDSET_AGENT_MODEL=openclaw/support", "HANDSET_AGENT_TIMEOUT=120s", "HANDSET_AGENT_TURN_TIMEOUT=180s",
		"HANDSET_SILENCE_REPROMPT=10m", "HANDSET_SILENCE_HANGUP=20m")
	if !strings.Contains(r.logs.String(), "the OpenClaw gateway is not ready") {
		t.Errorf("serve did not say it started without the gateway:\n%s", r.logs.String())
	}
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")

	// The caller speaks as soon as the gateway listens.
	addr := strings.TrimPrefix(gw.WSURL(), "ws://")
	for {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the gateway never listened:\n%s", gw.Log())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Logf("the gateway listens after %s", time.Since(begin).Round(time.Millisecond))
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 81)); err != nil {
		t.Fatal(err)
	}
	waitMarkFor(ctx, t, c, "t1-end", 4*time.Minute)
	t.Logf("answered after %s", time.Since(begin).Round(time.Millisecond))
	_ = c.Hangup()
	<-c.Done()
	events := r.journal()
	if n, errs := len(eventsOf(events, obs.AgentDone)), len(eventsOf(events, obs.AgentError)); n != 1 || errs != 0 {
		t.Errorf("agent.done %d (want 1), agent.error %d (want 0):\n%s", n, errs, dumpEvents(events))
	}
	// Whether the turn met the gateway while it was still starting depends on the machine's
	// speed; the fake gateway's tests pin that path down. Say which happened.
	if strings.Contains(r.logs.String(), "the gateway is starting; asking again shortly") {
		t.Log("the turn met the gateway while it was starting, and waited for it")
	} else {
		t.Log("the gateway was ready by the time the turn reached it")
	}
}
