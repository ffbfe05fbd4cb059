package cli

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/realopenclaw"
	"github.com/handset-voice/handset/internal/testpeer"
)

// TestMemoryFidelityRealOpenClaw runs the memory matrix (memory_test.go) through the real
// OpenClaw gateway over both transports, with the fake LLM behind it: what the gateway
// gives the model on each turn, and the session's transcript as chat.history reads it
// back. One gateway serves both transports, each with a caller (and so a session) of its
// own. Without the install (scripts/openclaw.sh) it skips, and fails in the full tier.
func TestMemoryFidelityRealOpenClaw(t *testing.T) {
	testpeer.Slow(t, "starts the real OpenClaw gateway and places four calls")
	realopenclaw.NeedInstall(t)
	llm := fakeopenai.New(fakeopenai.Options{Key: "llm-key", Said: llmSaid, Reply: llmReply})
	llmSrv := httptest.NewServer(realopenclaw.HumanLast(llm))
	defer func() { llm.Close(); llmSrv.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	begin := time.Now()
	gw, err := realopenclaw.Start(ctx, realopenclaw.Options{
		LLMURL: llmSrv.URL + "/v1", LLMKey: "llm-key", Agents: []string{"support", "billing"}, Dir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Stop()
	t.Logf("gateway ready in %s", time.Since(begin).Round(time.Millisecond))
	base := strings.TrimSuffix(gw.HTTPURL(), "/v1")

	for _, tc := range []struct{ transport, from string }{{"ws", alice}, {"http", bob}} {
		t.Run(tc.transport, func(t *testing.T) {
			begin := time.Now()
			before := len(llm.Requests()) // the other transport's turns are not this one's
			rt := memoryRuntime{
				settings: []string{"HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL=" + base, "HANDSET_AGENT_KEY=" + gw.Token(),
					"HANDSET_AGENT_MODEL=openclaw/support", "HANDSET_AGENT_TRANSPORT=" + tc.transport},
				saw:     func(words string) [][]turnMessage { return llmSaw(llm.Requests()[before:], words) },
				working: func(words string) bool { return llmWorking(llm.Requests()[before:], words) },
				kept: func(t *testing.T, _, callerHash string) []turnMessage {
					key := openclaw.SessionKey("support", session.ByCallerHash, session.Context{CallerHash: callerHash})
					msgs, err := gatewayHistory(context.Background(), gw, key)
					if err != nil {
						t.Fatalf("chat.history of %s: %v", key, err)
					}
					return msgs
				},
			}
			o := startMemoryRig(t, rt)
			mc := driveMemoryCalls(t, o, rt, tc.from)
			checkMemory(t, rt, mc)
			t.Logf("the model was given, turn by turn:\n%s", dumpTurns(llm.Requests()[before:]))
			if t.Failed() {
				t.Logf("the gateway's log ends:\n%s", tail(gw.Log(), 80))
			}
			t.Logf("%s: %s", tc.transport, time.Since(begin).Round(time.Millisecond))
		})
	}
}

// gatewayHistory reads a session's transcript back from the gateway (chat.history over its
// WebSocket): each message's role and text.
func gatewayHistory(ctx context.Context, gw *realopenclaw.Gateway, sessionKey string) ([]turnMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := realopenclaw.DialWS(ctx, gw.WSURL())
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if _, err := c.Handshake(ctx, gw.Token()); err != nil {
		return nil, err
	}
	msgs, err := c.History(ctx, sessionKey, 200)
	if err != nil {
		return nil, err
	}
	out := make([]turnMessage, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, turnMessage{Role: m.Role, Content: m.Text})
	}
	return out, nil
}

// dumpTurns shows what the model was given in each request: the newest words, then the
// messages.
func dumpTurns(reqs []fakeopenai.Request) string {
	var b strings.Builder
	for i, r := range reqs {
		msgs := fromLLM(r.Messages)
		fmt.Fprintf(&b, "request %d (aborted %v), newest words %q:\n%s", i+1, r.Aborted, newestWords(msgs), dumpMessages(msgs))
	}
	return b.String()
}
