package voice

import (
	"strings"
	"testing"
)

func TestCatchup(t *testing.T) {
	latest := Message{Role: RoleUser, Content: "the order number is 553"}
	if got := (TurnRequest{History: []Message{latest}}).Catchup(); got != latest.Content {
		t.Errorf("with nothing unseen Catchup = %q, want the caller's words alone", got)
	}
	req := TurnRequest{History: []Message{latest}, Unseen: []Message{
		{Role: RoleAssistant, Content: "Hello, this is Sam from Acme Plumbing."},
		{Role: RoleUser, Content: "hi, I am calling about my order"},
		{Role: RoleAssistant, Content: "Sure, your order " + InterruptedMarker},
		{Role: RoleAssistant, Content: InterruptedMarker},
		{Role: RoleAssistant, Content: ""},
	}}
	got := req.Catchup()
	for _, want := range []string{
		"[Note from Handset",
		"You said: \u201cHello, this is Sam from Acme Plumbing.\u201d",
		"The caller said: \u201chi, I am calling about my order\u201d",
		"of your reply the caller heard only \u201cSure, your order\u201d, then interrupted",
		"The caller interrupted before hearing any of your reply.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Catchup lacks %q:\n%s", want, got)
		}
	}
	if !strings.HasSuffix(got, "\n"+latest.Content) || strings.Count(got, "\n") != 6 {
		t.Errorf("Catchup should be the note's lines, then the caller's words:\n%s", got)
	}
}

func TestEscapeCommand(t *testing.T) {
	for in, want := range map[string]string{
		"/reset":       "(spoken) /reset",
		"  /new":       "(spoken) /new",
		`\help`:        `(spoken) \help`,
		"reset please": "reset please",
		"press 1/2":    "press 1/2",
		"[DTMF 1]":     "[DTMF 1]",
		"":             "",
	} {
		if got := EscapeCommand(in); got != want {
			t.Errorf("EscapeCommand(%q) = %q, want %q", in, got, want)
		}
	}
}
