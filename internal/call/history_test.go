package call

import (
	"fmt"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// TestHistoryWindow: with a limit, the history keeps the latest messages only, and the
// current reply's message can still be rewritten (a lost sentence, an interruption) after
// older ones have left the window.
func TestHistoryWindow(t *testing.T) {
	h := history{limit: 4}
	for turn := 1; turn <= 5; turn++ {
		h.forget(turn - 1)
		h.user(fmt.Sprintf("question %d", turn))
		h.assistant(turn, fmt.Sprintf("Answer %d. More %d.", turn, turn))
	}
	got := h.snapshot()
	want := []string{"question 4", "Answer 4. More 4.", "question 5", "Answer 5. More 5."}
	if len(got) != len(want) {
		t.Fatalf("snapshot holds %d messages, want the latest %d: %+v", len(got), len(want), got)
	}
	for i, m := range got {
		if m.Content != want[i] {
			t.Errorf("message %d = %q, want %q", i, m.Content, want[i])
		}
	}
	if cap(h.msgs) > 2*h.limit {
		t.Errorf("the window's backing array grew to %d for a limit of %d", cap(h.msgs), h.limit)
	}

	h.lose(5, "More 5.")
	if m := h.snapshot()[3]; m.Content != "Answer 5." {
		t.Errorf("after a lost sentence the reply reads %q, want %q", m.Content, "Answer 5.")
	}
	text, _, ok := h.settled(5, time.Now(), false)
	if !ok || text != "Answer 5." {
		t.Errorf("settled(5) = %q, %v; want the reply less its lost sentence", text, ok)
	}

	// A reply that left the window is not rewritten into someone else's message.
	h.user("question 6")
	h.user("question 7")
	h.lose(4, "More 4.")
	for _, m := range h.snapshot() {
		if m.Role == voice.RoleAssistant && m.Content != "Answer 5." {
			t.Errorf("a message outside turn 4 was rewritten: %+v", h.snapshot())
		}
	}
}

// TestHistoryUnlimited: a zero limit keeps the whole call.
func TestHistoryUnlimited(t *testing.T) {
	var h history
	for turn := 1; turn <= 300; turn++ {
		h.user("q")
		h.assistant(turn, "a")
	}
	if n := len(h.snapshot()); n != 600 {
		t.Fatalf("snapshot holds %d messages, want all 600", n)
	}
}

// TestHistoryForget: a long call holds the records of the current and the previous turn
// only, and what still arrives for a forgotten turn (a late mark, a cancelled run's reply)
// changes nothing.
func TestHistoryForget(t *testing.T) {
	var h history
	now := time.Unix(1000, 0)
	for turn := 1; turn <= 50; turn++ {
		h.forget(turn - 1)
		h.user("q")
		h.firstByte(turn, "m", now)
		h.segment(turn, "m", "A.", time.Second, false)
		h.assistant(turn, "A.")
	}
	if n := len(h.turns); n > 2 {
		t.Fatalf("after 50 turns the history holds %d turn records, want at most 2", n)
	}
	if h.heard(10, "m", now) {
		t.Error("a mark of a forgotten turn counted as heard")
	}
	h.assistant(10, "late words")
	h.lose(10, "A.")
	if got := h.interrupt(10, now); got != "" {
		t.Errorf("interrupting a forgotten turn returned %q", got)
	}
	if n := len(h.snapshot()); n != 100 {
		t.Errorf("events of a forgotten turn changed the history: %d messages, want 100", n)
	}
	if _, _, ok := h.settled(10, now, true); ok {
		t.Error("a forgotten turn settled a transcript line")
	}
}
