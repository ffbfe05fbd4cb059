package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/realopenclaw"
	"github.com/handset-voice/handset/internal/testpeer"
)

// TestRealOpenClawGateway runs calls through Handset against the real OpenClaw gateway
// (installed from npm by scripts/openclaw.sh), with our fake LLM behind it, over both
// transports: a normal turn, then a barge-in over the filler while the LLM never answers,
// which must cancel the gateway's run (the LLM sees its request dropped), then the next
// turn.
func TestRealOpenClawGateway(t *testing.T) {
	testpeer.Slow(t, "starts the real OpenClaw gateway")
	realopenclaw.NeedInstall(t)
	llm := fakeopenai.New(fakeopenai.Options{Key: "llm-key"})
	llmSrv := httptest.NewServer(onlyNewTurnHangs(realopenclaw.HumanLast(llm)))
	defer func() { llm.Close(); llmSrv.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gw, err := realopenclaw.Start(ctx, realopenclaw.Options{
		LLMURL: llmSrv.URL + "/v1", LLMKey: "llm-key", Agents: []string{"support", "billing"}, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Stop()
	base := strings.TrimSuffix(gw.HTTPURL(), "/v1")

	// `handset agents` reads the real roster and applies the selection rule.
	env := []string{"HANDSET_AGENT_URL=" + base, "OPENCLAW_GATEWAY_TOKEN=" + gw.Token()}
	if code, out := runCmd(t, env, "agents"); code != 1 || !strings.Contains(out, "support") ||
		!strings.Contains(out, "billing") || !strings.Contains(out, "would refuse") {
		t.Errorf("agents with none named: exit %d\n%s", code, out)
	}
	if code, out := runCmd(t, append(env, "HANDSET_AGENT_MODEL=openclaw/billing"), "agents"); code != 0 ||
		!strings.Contains(out, "Handset uses billing") {
		t.Errorf("agents with billing named: exit %d\n%s", code, out)
	}

	for _, transport := range []string{"ws", "http"} {
		t.Run(transport, func(t *testing.T) {
			abortedBefore := llm.Aborted()
			r := startServe(t, []string{"hello there", "HANG look up my order", "never mind then"},
				"HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL="+base, "HANDSET_AGENT_KEY="+gw.Token(),
				"HANDSET_AGENT_MODEL=openclaw/support", "HANDSET_AGENT_TRANSPORT="+transport,
				"HANDSET_SESSION_KEY_FROM=caller_hash", "HANDSET_AGENT_TIMEOUT=120s",
				"HANDSET_LONG_TURN_MESSAGE=One moment while I check that for you.", "HANDSET_LONG_TURN_AFTER=1s")
			c := r.dial(ctx)
			waitMark(ctx, t, c, "t0-end")
			if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 81)); err != nil {
				t.Fatal(err)
			}
			waitMarkFor(ctx, t, c, "t1-end", 90*time.Second)
			if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 82)); err != nil {
				t.Fatal(err)
			}
			waitMarkFor(ctx, t, c, "t2-s1", 30*time.Second) // the filler played: the run is silent
			// Barge in only once the gateway has asked the LLM (on a loaded machine the run
			// can start late): the test is about that request being cancelled.
			if err := awaitHangingRequest(ctx, llm); err != nil {
				t.Fatalf("the gateway never asked the LLM for the silent turn: %v\n%s", err, gw.Log())
			}
			if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 83)); err != nil {
				t.Fatal(err)
			}
			waitMarkFor(ctx, t, c, "t3-end", 90*time.Second)
			abortCtx, stop := context.WithTimeout(ctx, 30*time.Second)
			defer stop()
			if err := llm.AwaitAborted(abortCtx, abortedBefore+1); err != nil {
				t.Errorf("the gateway did not cancel its run after the barge-in: %v\n%s", err, gw.Log())
			}
			_ = c.Hangup()
			<-c.Done()
			events := r.journal()
			if n := len(eventsOf(events, obs.AgentDone)); n != 2 {
				t.Errorf("agent.done %d, want 2 (turns 1 and 3):\n%s", n, dumpEvents(events))
			}
			// The gateway's usage, as it reports it: output tokens only over the WebSocket,
			// both counts from its OpenAI-compatible endpoint.
			for _, e := range eventsOf(events, obs.AgentDone) {
				if e.OutputTokens <= 0 || (transport == "http") != (e.InputTokens > 0) {
					t.Errorf("turn %d: agent.done with %d input and %d output tokens; want output tokens, and input tokens only over http",
						e.Turn, e.InputTokens, e.OutputTokens)
				}
			}
			if n := len(eventsOf(events, obs.Clear)); n != 1 {
				t.Errorf("clears %d, want 1", n)
			}
		})
	}
}

// onlyNewTurnHangs: after a cancelled run, OpenClaw folds that turn's words into the next
// prompt as a "queued user message" kept for context. The fake LLM would read the HANG in
// them as a fault for the new turn too; only the caller's new words should count.
func onlyNewTurnHangs(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil && bytes.Contains(body, []byte("Queued user message")) {
			body = bytes.ReplaceAll(body, []byte("HANG"), []byte("(was hanging)"))
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// awaitHangingRequest waits until the LLM holds a request for a HANG turn open.
func awaitHangingRequest(ctx context.Context, llm *fakeopenai.Server) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		for _, r := range llm.Requests() {
			if !r.Done && len(r.Messages) > 0 && strings.Contains(r.Messages[len(r.Messages)-1].Content, "HANG") {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
