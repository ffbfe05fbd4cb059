package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
)

// journalOf stamps events at their ms from one start, as a journal would.
func journalOf(events ...obs.Event) []obs.Event {
	t0 := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	for i := range events {
		events[i].TS = t0.Add(time.Duration(events[i].MS) * time.Millisecond)
	}
	return events
}

func TestConversationOfAFailedTurnACutOffReplyAndAHandoff(t *testing.T) {
	events := journalOf(
		obs.Event{MS: 0, Type: obs.CallStart},
		obs.Event{MS: 10, Type: obs.TTSRequest, Turn: 0, Text: "Hello, this is Handset."},
		obs.Event{MS: 30, Type: obs.PlayoutFirstAudio, Turn: 0},
		obs.Event{MS: 2000, Type: obs.TurnCommit, Turn: 1, Text: "book a table"},
		obs.Event{MS: 2000, Type: obs.AgentRequest, Turn: 1},
		obs.Event{MS: 2500, Type: obs.AgentError, Turn: 1, Kind: "timeout", Message: "no answer in 10 s"},
		obs.Event{MS: 2510, Type: obs.TTSRequest, Turn: 1, Text: "Sorry, I ran into a problem."},
		obs.Event{MS: 5000, Type: obs.TurnCommit, Turn: 2, Text: "try again"},
		obs.Event{MS: 5000, Type: obs.AgentRequest, Turn: 2},
		obs.Event{MS: 5300, Type: obs.TTSRequest, Turn: 2, Text: "Sure, for how many people?"},
		obs.Event{MS: 5400, Type: obs.TTSRequest, Turn: 2, Text: "And at what time?"},
		obs.Event{MS: 5420, Type: obs.PlayoutFirstAudio, Turn: 2},
		obs.Event{MS: 6000, Type: obs.BargeIn, Turn: 2, Text: "Sure, for how"},
		obs.Event{MS: 6000, Type: obs.TurnInterrupted, Turn: 2},
		obs.Event{MS: 7000, Type: obs.HandoffRequested, Name: "sms"},
		obs.Event{MS: 7100, Type: obs.HandoffFailed, Name: "sms", Message: "no channel"},
		obs.Event{MS: 8000, Type: obs.CallEnd, Reason: "caller_hangup"},
	)
	got := conversation(events)
	want := []struct{ kind, text string }{
		{lineAgent, "Hello, this is Handset."},
		{lineCaller, "book a table"},
		{lineError, "The agent failed: timeout: no answer in 10 s"},
		{lineSpoken, "Sorry, I ran into a problem."},
		{lineCaller, "try again"},
		{lineAgent, "Sure, for how many people? And at what time?"},
		{lineNote, "Handoff asked for: sms"},
		{lineError, "Handoff failed: sms: no channel"},
		{lineNote, "The call ended: caller_hangup"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Kind != w.kind || got[i].Text != w.text {
			t.Errorf("line %d: %s %q, want %s %q", i, got[i].Kind, got[i].Text, w.kind, w.text)
		}
	}
	cut := got[5]
	if !cut.Barged || cut.Heard != "Sure, for how" || cut.Unheard != "many people? And at what time?" {
		t.Errorf("the cut-off reply: %+v", cut)
	}
	for i := 1; i < len(got); i++ {
		if got[i].MS < got[i-1].MS {
			t.Errorf("line %d is out of call-time order", i)
		}
	}
}

func TestScriptNeverWritesMarkup(t *testing.T) {
	js, err := files.ReadFile("static/dashboard.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "setAttribute(\"style"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("dashboard.js uses %s", bad)
		}
	}
}
