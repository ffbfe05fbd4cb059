package hermes_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/agenttest"
	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/voice"
)

// Both transports run the suite. The runs API is sent the history and stops a cancelled
// run (before Close returns); a chat session keeps the conversation on Hermes' side and
// cancels by closing the request, which the fake does not record.
func TestConformance(t *testing.T) {
	for _, transport := range []string{hermes.TransportRuns, hermes.TransportChat} {
		t.Run(transport, func(t *testing.T) { conformance(t, transport) })
	}
}

func conformance(t *testing.T, transport string) {
	agenttest.Run(t, func(t *testing.T) agenttest.Peer {
		fake := fakehermes.New(fakehermes.Options{Key: testKey, SlowEvery: 10 * time.Millisecond})
		ts := httptest.NewServer(fake)
		t.Cleanup(func() {
			fake.Close()
			ts.Close()
		})
		agent := func(t *testing.T, key, root string) voice.Agent {
			// a Hermes silent for a second is stalled: the suite's timeout case waits that long
			a, err := hermes.New(hermes.Options{BaseURL: root + "/v1", Key: key, SystemPrompt: "Speak briefly.",
				Transport: transport, Timeout: time.Second, HTTPClient: ts.Client()})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		p := agenttest.Peer{
			Agent: agent(t, testKey, ts.URL),
			Sent: func(t *testing.T) agenttest.Sent {
				var last *fakehermes.Request
				for _, r := range fake.Requests() {
					if r.Method == http.MethodPost && len(r.Messages) > 0 {
						last = &r
					}
				}
				if last == nil {
					t.Fatal("the fake received no turn")
				}
				sent := agenttest.Sent{Session: last.SessionID}
				for _, m := range last.Messages {
					if m.Role != string(voice.RoleSystem) {
						sent.Messages = append(sent.Messages, voice.Message{Role: voice.Role(m.Role), Content: m.Content})
					}
				}
				return sent
			},
			KeepsConversation: transport == hermes.TransportChat,
			Sessions:          true,
			LongText:          "Please read me the whole menu, every dish and every price, one by one. " + fakehermes.MagicSlow,
			WrongKey:          func(t *testing.T) voice.Agent { return agent(t, "revoked-key-0123456789", ts.URL) },
			Unreachable:       func(t *testing.T, root string) voice.Agent { return agent(t, testKey, root) },
			ServerErrorText:   "Help. " + fakehermes.MagicFail500,
			StallText:         "Help. " + fakehermes.MagicHang,
			MalformedText:     "Help. " + fakehermes.MagicCutoff,
		}
		if transport == hermes.TransportRuns {
			p.Aborted = func(_ context.Context, n int) error {
				if got := fake.StopCount(); got < n {
					return fmt.Errorf("%d runs stopped by the time Close returned, want %d", got, n)
				}
				return nil
			}
		}
		return p
	})
}
