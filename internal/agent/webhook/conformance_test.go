package webhook_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/agenttest"
	"github.com/handset-voice/handset/internal/agent/webhook"
	"github.com/handset-voice/handset/internal/sim/fakewebhook"
	"github.com/handset-voice/handset/internal/voice"
)

func TestConformance(t *testing.T) {
	agenttest.Run(t, func(t *testing.T) agenttest.Peer {
		const key = "conformance-key"
		fake := fakewebhook.New(fakewebhook.Options{Key: key, Mode: fakewebhook.ModeSSE, SlowEvery: 10 * time.Millisecond})
		ts := httptest.NewServer(fake)
		t.Cleanup(func() {
			fake.Close()
			ts.Close()
		})
		agent := func(t *testing.T, key, url string) voice.Agent {
			// a webhook silent for a second is stalled: the suite's timeout case waits that long
			a, err := webhook.New(webhook.Options{URL: url, Key: key, Timeout: time.Second, HTTPClient: ts.Client()})
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
				last := reqs[len(reqs)-1]
				sent := agenttest.Sent{Session: last.CallID}
				for _, m := range last.History {
					sent.Messages = append(sent.Messages, voice.Message{Role: voice.Role(m.Role), Content: m.Content})
				}
				return sent
			},
			Sessions: true,
			// the fake answers word by word, SLOW putting a pause between the words
			LongText:        "Please read me the whole menu, every dish and every price, one by one. " + fakewebhook.MagicSlow,
			Aborted:         fake.AwaitAborted,
			WrongKey:        func(t *testing.T) voice.Agent { return agent(t, "revoked-key", ts.URL) },
			Unreachable:     func(t *testing.T, root string) voice.Agent { return agent(t, key, root) },
			ServerErrorText: "Help. " + fakewebhook.MagicFail500,
			StallText:       "Help. " + fakewebhook.MagicHang,
			MalformedText:   "Help. " + fakewebhook.MagicBadJSON,
		}
	})
}
