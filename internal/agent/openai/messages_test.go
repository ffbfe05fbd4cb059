package openai

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/voice"
)

// sent runs one turn with history and returns the messages the runtime received.
func sent(t *testing.T, opts Options, history []voice.Message) []fakeopenai.Message {
	t.Helper()
	fake, a := setup(t, fakeopenai.Options{}, opts)
	s, err := a.Reply(t.Context(), voice.TurnRequest{CallID: "c_rules", Turn: 3, History: history})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := drain(t, s); err != nil {
		t.Fatal(err)
	}
	s.Close()
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	return reqs[0].Messages
}

func TestSystemAsUser(t *testing.T) {
	const prompt = "You are on the phone. Be brief."
	tests := []struct {
		name    string
		history []voice.Message
		want    []fakeopenai.Message
	}{{
		name: "latest user message carries the prompt",
		history: []voice.Message{
			{Role: voice.RoleUser, Content: "Hi."},
			{Role: voice.RoleAssistant, Content: "Hello."},
			{Role: voice.RoleUser, Content: "Book a table."},
		},
		want: []fakeopenai.Message{
			{Role: "user", Content: "Hi."},
			{Role: "assistant", Content: "Hello."},
			{Role: "user", Content: prompt + "\n\nBook a table."},
		},
	}, {
		name: "latest user message is not the last message",
		history: []voice.Message{
			{Role: voice.RoleUser, Content: "Hi."},
			{Role: voice.RoleAssistant, Content: "Hello."},
		},
		want: []fakeopenai.Message{
			{Role: "user", Content: prompt + "\n\nHi."},
			{Role: "assistant", Content: "Hello."},
		},
	}, {
		name:    "no user message: the prompt is sent as one",
		history: []voice.Message{{Role: voice.RoleAssistant, Content: "Hello."}},
		want: []fakeopenai.Message{
			{Role: "user", Content: prompt},
			{Role: "assistant", Content: "Hello."},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sent(t, Options{SystemPrompt: prompt, SystemAsUser: true}, tt.history)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSystemAsUserWithoutPrompt(t *testing.T) {
	got := sent(t, Options{SystemAsUser: true}, []voice.Message{{Role: voice.RoleUser, Content: "Hi."}})
	want := []fakeopenai.Message{{Role: "user", Content: "Hi."}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestHistoryFiltered(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	history := []voice.Message{
		{Role: voice.RoleSystem, Content: "Earlier context."},
		{Role: voice.RoleUser, Content: "What's the weather?"},
		{Role: "tool", Content: `{"secret":"tool output"}`},
		{Role: voice.RoleAssistant, Content: ""},
		{Role: "image", Content: "data:image/png;base64,AAAA"},
		{Role: "tool", Content: "more tool output"},
		{Role: voice.RoleAssistant, Content: "Sunny."},
		{Role: voice.RoleUser, Content: "   "},
		{Role: voice.RoleUser, Content: "Thanks."},
	}
	got := sent(t, Options{SystemPrompt: "Be brief.", Logger: log}, history)
	want := []fakeopenai.Message{
		{Role: "system", Content: "Be brief."},
		{Role: "system", Content: "Earlier context."},
		{Role: "user", Content: "What's the weather?"},
		{Role: "assistant", Content: "Sunny."},
		{Role: "user", Content: "Thanks."},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	out := logs.String()
	if n := strings.Count(out, "messages omitted"); n != 1 {
		t.Errorf("omission logged %d times, want once per turn:\n%s", n, out)
	}
	for _, want := range []string{"empty=2", "image×1", "tool×2", "turn=3"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	for _, secret := range []string{"tool output", "base64"} {
		if strings.Contains(out, secret) {
			t.Errorf("log leaks omitted content %q:\n%s", secret, out)
		}
	}
}

func TestHistoryNothingOmittedLogsNothing(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sent(t, Options{Logger: log}, []voice.Message{{Role: voice.RoleUser, Content: "Hi."}})
	if strings.Contains(logs.String(), "omitted") {
		t.Errorf("omission logged with nothing omitted:\n%s", logs.String())
	}
}

func TestHistoryAllOmitted(t *testing.T) {
	fake, a := setup(t, fakeopenai.Options{}, Options{})
	_, err := a.Reply(t.Context(), voice.TurnRequest{CallID: "c", Turn: 1, History: []voice.Message{
		{Role: "tool", Content: "x"}, {Role: voice.RoleUser, Content: ""},
	}})
	if voice.KindOf(err) != voice.KindBadInput {
		t.Fatalf("err %v, want bad_input", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests sent for a history with nothing to send", n)
	}
}

// TestKeepsConversation: a runtime with its own session gets the system prompt and one
// user message, the caller's words after a note of what it missed, never the history.
func TestKeepsConversation(t *testing.T) {
	a := &Agent{system: "be brief", keepsConversation: true, log: slog.New(slog.DiscardHandler)}
	req := voice.TurnRequest{History: []voice.Message{
		{Role: voice.RoleUser, Content: "one"}, {Role: voice.RoleAssistant, Content: "reply"},
		{Role: voice.RoleUser, Content: "two"},
	}}
	got := a.messages(a.system, req)
	if len(got) != 2 || got[0].Role != "system" || got[1].Content != "two" {
		t.Errorf("messages = %+v, want the system prompt and the latest user message", got)
	}
	req.Unseen = []voice.Message{{Role: voice.RoleUser, Content: "one and a half"}}
	got = a.messages(a.system, req)
	if len(got) != 2 || got[1].Role != "user" || got[1].Content != req.Catchup() {
		t.Errorf("messages = %+v, want the system prompt and the catch-up message", got)
	}
}
