package cli

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/fakewebhook"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
)

// TestMemoryFidelity runs the memory matrix (memory_test.go) against the fakes of the
// OpenAI-compatible, Hermes (runs and chat) and webhook runtimes. A stateless runtime's
// memory is what it is sent on the next turn; a Hermes chat session's is also the
// transcript the fake keeps as Hermes does.
func TestMemoryFidelity(t *testing.T) {
	testpeer.Slow(t, "places eight calls through serve (over two minutes with -race)")
	for _, tc := range []struct {
		name string
		rt   func(t *testing.T) memoryRuntime
	}{
		{"openai", openaiMemory},
		{"hermes runs", func(t *testing.T) memoryRuntime { return hermesMemory(t, hermes.TransportRuns) }},
		{"hermes chat", func(t *testing.T) memoryRuntime { return hermesMemory(t, hermes.TransportChat) }},
		{"webhook", webhookMemory},
	} {
		t.Run(tc.name, func(t *testing.T) {
			begin := time.Now()
			rt := tc.rt(t)
			o := startMemoryRig(t, rt)
			checkMemory(t, rt, driveMemoryCalls(t, o, rt, alice))
			t.Logf("%s: %s", tc.name, time.Since(begin).Round(time.Millisecond))
		})
	}
}

// openaiMemory is an OpenAI-compatible runtime: it is sent the whole history every turn.
func openaiMemory(t *testing.T) memoryRuntime {
	llm := fakeopenai.New(fakeopenai.Options{Key: "agent-key", Said: llmSaid, Reply: llmReply})
	srv := httptest.NewServer(llm)
	t.Cleanup(func() { llm.Close(); srv.Close() })
	return memoryRuntime{
		settings: []string{"HANDSET_AGENT=openai", "HANDSET_AGENT_URL=" + srv.URL + "/v1", "HANDSET_AGENT_KEY=agent-key"},
		saw:      func(words string) [][]turnMessage { return llmSaw(llm.Requests(), words) },
		working:  func(words string) bool { return llmWorking(llm.Requests(), words) },
	}
}

// llmReply is the fake LLM's answer to the newest words, as every runtime's.
func llmReply(msgs []fakeopenai.Message) string { return memoryReply(newestWords(fromLLM(msgs))) }

// llmSaid picks the newest words for the fake LLM's magic words.
func llmSaid(msgs []fakeopenai.Message) string { return newestWords(fromLLM(msgs)) }

func fromLLM(msgs []fakeopenai.Message) []turnMessage {
	out := make([]turnMessage, len(msgs))
	for i, m := range msgs {
		out[i] = turnMessage(m)
	}
	return out
}

// llmSaw is what the fake LLM was given for each turn whose newest words were words.
func llmSaw(reqs []fakeopenai.Request, words string) [][]turnMessage {
	var out [][]turnMessage
	for _, r := range reqs {
		if msgs := fromLLM(r.Messages); newestWords(msgs) == words {
			out = append(out, msgs)
		}
	}
	return out
}

// llmWorking: the fake LLM holds a request of words open.
func llmWorking(reqs []fakeopenai.Request, words string) bool {
	for _, r := range reqs {
		if !r.Done && newestWords(fromLLM(r.Messages)) == words {
			return true
		}
	}
	return false
}

// hermesMemory is Hermes over transport: runs are sent the history; a chat session is
// sent the newest words after a note of what it missed, and keeps the transcript.
func hermesMemory(t *testing.T, transport string) memoryRuntime {
	from := func(msgs []fakehermes.Message) []turnMessage {
		out := make([]turnMessage, len(msgs))
		for i, m := range msgs {
			out[i] = turnMessage(m)
		}
		return out
	}
	h := fakehermes.New(fakehermes.Options{Key: "hermes-key-0123456789", Keepalive: 200 * time.Millisecond, ToolDuration: time.Minute,
		Said:  func(msgs []fakehermes.Message) string { return newestWords(from(msgs)) },
		Reply: func(msgs []fakehermes.Message) string { return memoryReply(newestWords(from(msgs))) }})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); srv.Close() })
	rt := memoryRuntime{
		settings: []string{"HANDSET_AGENT=hermes", "HANDSET_AGENT_URL=" + srv.URL + "/v1",
			"HANDSET_AGENT_KEY=hermes-key-0123456789", "HANDSET_AGENT_TRANSPORT=" + transport},
		saw: func(words string) [][]turnMessage {
			var out [][]turnMessage
			for _, r := range h.Requests() {
				if msgs := from(r.Prompt); r.Method == "POST" && newestWords(msgs) == words {
					out = append(out, msgs)
				}
			}
			return out
		},
		// At work: a run still running, or a chat session that stored the turn's message
		// and no reply yet.
		working: func(words string) bool {
			for _, r := range h.Requests() {
				if r.Method != "POST" || newestWords(from(r.Messages)) != words {
					continue
				}
				if strings.HasSuffix(r.Path, "/runs") && h.Status(r.RunID) == "running" {
					return true
				}
				if stored := from(h.Transcript(r.SessionID)); len(stored) > 0 && newestWords(stored[len(stored)-1:]) == words {
					return true
				}
			}
			return false
		},
	}
	if transport == hermes.TransportChat {
		rt.kept = func(t *testing.T, callID, _ string) []turnMessage {
			return from(h.Transcript(hermes.SessionID(voice.CallID(callID))))
		}
	}
	return rt
}

// webhookMemory is a webhook runtime: each turn is posted with the whole history.
func webhookMemory(t *testing.T) memoryRuntime {
	hook := fakewebhook.New(fakewebhook.Options{Mode: fakewebhook.ModeSSE,
		Reply: func(r fakewebhook.Request) string { return memoryReply(r.Text) }})
	srv := httptest.NewServer(hook)
	t.Cleanup(func() { hook.Close(); srv.Close() })
	return memoryRuntime{
		settings: []string{"HANDSET_AGENT=webhook", "HANDSET_AGENT_URL=" + srv.URL + "/turn", "HANDSET_AGENT_KEY="},
		saw: func(words string) [][]turnMessage {
			var out [][]turnMessage
			for _, r := range hook.Requests() {
				if r.Text == words {
					msgs := make([]turnMessage, len(r.History))
					for i, m := range r.History {
						msgs[i] = turnMessage(m)
					}
					out = append(out, msgs)
				}
			}
			return out
		},
		working: func(words string) bool {
			for _, r := range hook.Requests() {
				if r.Text == words && !r.Done {
					return true
				}
			}
			return false
		},
	}
}
