package bridge

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/voice"
)

func TestMissedTellsTheRuntimeWhatTheLineHad(t *testing.T) {
	user := func(s string) voice.Message { return voice.Message{Role: voice.RoleUser, Content: s} }
	agent := func(s string) voice.Message { return voice.Message{Role: voice.RoleAssistant, Content: s} }
	cutOff := func(s string) voice.Message { return agent(s + " " + voice.InterruptedMarker) }
	const reply = "Once upon a time, a fox lived in a wood. It was clever."
	finished := lastTurn{turn: 1, historyLen: 1, user: "Tell me a story.", reply: reply, finished: true}
	stopped := finished
	stopped.finished = false
	for _, tc := range []struct {
		name    string
		last    lastTurn
		history []voice.Message
		unseen  []voice.Message
		heard   string
	}{
		{"heard whole", finished, []voice.Message{user("Tell me a story."), agent(reply), user("Nice.")}, nil, ""},
		{"heard whole, spoken with other spacing and punctuation", finished,
			[]voice.Message{user("Tell me a story."), agent("Once upon a time a fox lived in a wood... It was clever"), user("Nice.")}, nil, ""},
		{"cut off", finished, []voice.Message{user("Tell me a story."), agent("Once upon a time,"), user("Stop.")},
			[]voice.Message{cutOff("Once upon a time,")}, "Once upon a time,"},
		{"cut off before a word", finished, []voice.Message{user("Tell me a story."), user("Stop.")},
			[]voice.Message{agent(voice.InterruptedMarker)}, ""},
		{"rewritten by the client: not told", finished,
			[]voice.Message{user("Tell me a story."), agent("A different text."), user("Stop.")}, nil, ""},
		{"a message the runtime never got", finished,
			[]voice.Message{user("Tell me a story."), agent(reply), user("Hm."), agent("Still there?"), user("Yes.")},
			[]voice.Message{user("Hm."), agent("Still there?")}, ""},
		{"stopped: the message again, and what was heard", stopped,
			[]voice.Message{user("Tell me a story."), agent("Once upon"), user("Stop.")},
			[]voice.Message{user("Tell me a story."), cutOff("Once upon")}, "Once upon"},
		{"stopped before any text", lastTurn{turn: 1, historyLen: 1, user: "Tell me a story."},
			[]voice.Message{user("Tell me a story."), user("Hello?")}, []voice.Message{user("Tell me a story.")}, ""},
		{"a history that trims old messages", lastTurn{turn: 5, historyLen: 9, user: "Tell me a story.", reply: reply, finished: true},
			[]voice.Message{user("Tell me a story."), agent("Once"), user("Stop.")}, []voice.Message{cutOff("Once")}, "Once"},
		{"a history without the last turn", finished, []voice.Message{user("Something else."), agent("Yes."), user("Stop.")}, nil, ""},
		{"the first turn", lastTurn{}, []voice.Message{user("Hi.")}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unseen, heard, cut := tc.last.missed(tc.history)
			if diff := cmp.Diff(tc.unseen, unseen); diff != "" {
				t.Errorf("unseen (-want +got):\n%s", diff)
			}
			wantCut := false
			for _, m := range tc.unseen {
				wantCut = wantCut || m.Role == voice.RoleAssistant && len(m.Content) >= len(voice.InterruptedMarker) &&
					m.Content[len(m.Content)-len(voice.InterruptedMarker):] == voice.InterruptedMarker
			}
			if cut != wantCut || heard != tc.heard {
				t.Errorf("heard %q, cut %v; want %q, %v", heard, cut, tc.heard, wantCut)
			}
		})
	}
}
