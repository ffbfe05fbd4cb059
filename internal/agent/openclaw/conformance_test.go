package openclaw_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/agenttest"
	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/voice"
)

func TestConformance(t *testing.T) {
	agenttest.Run(t, func(t *testing.T) agenttest.Peer {
		fake := fakeopenclaw.New(fakeopenclaw.Options{Token: token})
		ts := httptest.NewServer(fake)
		var agents []*openclaw.Agent
		t.Cleanup(func() {
			for _, a := range agents {
				a.Close()
			}
			fake.Close()
			ts.Close()
		})
		agent := func(t *testing.T, token, root string) voice.Agent {
			// a run silent for a second is stalled: the suite's timeout case waits that long
			a, err := openclaw.New(openclaw.Options{URL: "ws" + strings.TrimPrefix(root, "http"), Token: token,
				Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			agents = append(agents, a)
			return a
		}
		return agenttest.Peer{
			Agent: agent(t, token, ts.URL),
			Sent: func(t *testing.T) agenttest.Sent {
				sends := fake.Sends()
				if len(sends) == 0 {
					t.Fatal("the gateway received no turn")
				}
				last := sends[len(sends)-1]
				return agenttest.Sent{Session: last.SessionKey,
					Messages: []voice.Message{{Role: voice.RoleUser, Content: last.Message}}}
			},
			KeepsConversation: true,
			Sessions:          true,
			LongText:          "Please read me the whole menu, every dish and every price, one by one. SLOW",
			Aborted: func(ctx context.Context, n int) error {
				return fake.WaitFor(ctx, func(s *fakeopenclaw.Server) bool { return len(s.Aborts()) >= n })
			},
			WrongKey:        func(t *testing.T) voice.Agent { return agent(t, "revoked-token", ts.URL) },
			Unreachable:     func(t *testing.T, root string) voice.Agent { return agent(t, token, root) },
			ServerErrorText: "Help. FAIL500",
			// a tool that runs without a word: the run goes silent after its first event
			StallText:     "Help. TOOLCALL",
			MalformedText: "Help. DROPLATE",
		}
	})
}
