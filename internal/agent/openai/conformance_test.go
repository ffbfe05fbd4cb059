package openai_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/agenttest"
	"github.com/handset-voice/handset/internal/agent/openai"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/voice"
)

func TestConformance(t *testing.T) {
	agenttest.Run(t, func(t *testing.T) agenttest.Peer {
		const key = "sk-conformance"
		// a pause between chunks, so a long reply streams for a while as a model's does
		fake := fakeopenai.New(fakeopenai.Options{Key: key, ChunkEvery: 5 * time.Millisecond})
		ts := httptest.NewServer(fake)
		t.Cleanup(func() {
			fake.Close()
			ts.Close()
		})
		agent := func(t *testing.T, key, root string) voice.Agent {
			// a runtime silent for a second is stalled: the suite's timeout case waits that long
			a, err := openai.New(openai.Options{Key: key, BaseURL: root + "/v1", Model: "conformance-model",
				SystemPrompt: "You answer phone calls.", Timeout: time.Second, HTTPClient: ts.Client()})
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		return agenttest.Peer{
			Agent: agent(t, key, ts.URL),
			Sent: func(t *testing.T) agenttest.Sent {
				reqs := fake.Requests()
				if len(reqs) == 0 {
					t.Fatal("the fake received no request")
				}
				var sent agenttest.Sent
				for _, m := range reqs[len(reqs)-1].Messages {
					if m.Role != string(voice.RoleSystem) {
						sent.Messages = append(sent.Messages, voice.Message{Role: voice.Role(m.Role), Content: m.Content})
					}
				}
				return sent
			},
			LongText:        "Tell me everything. " + fakeopenai.MagicLong,
			Aborted:         fake.AwaitAborted,
			WrongKey:        func(t *testing.T) voice.Agent { return agent(t, "sk-revoked", ts.URL) },
			Unreachable:     func(t *testing.T, root string) voice.Agent { return agent(t, key, root) },
			ServerErrorText: "Help. " + fakeopenai.MagicFail500,
			StallText:       "Help. " + fakeopenai.MagicHang,
			MalformedText:   "Help. " + fakeopenai.MagicCutoff,
		}
	})
}
