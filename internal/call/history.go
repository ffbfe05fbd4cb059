package call

import (
	"slices"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// history is the conversation as the agent runtime will see it, kept by the owner loop.
// It knows which sentences of each reply the caller actually heard (from carrier marks), so
// an interrupted reply is recorded as "<heard part> [interrupted by caller]".
type history struct {
	msgs  []voice.Message
	turns map[int]*turnRecord
}

type turnRecord struct {
	assistant   int // index of the assistant message in msgs, -1 if none yet
	segments    []segment
	interrupted bool
}

type segment struct {
	mark, text string
	heard      bool
}

func (h *history) record(turn int) *turnRecord {
	if h.turns == nil {
		h.turns = map[int]*turnRecord{}
	}
	r := h.turns[turn]
	if r == nil {
		r = &turnRecord{assistant: -1}
		h.turns[turn] = r
	}
	return r
}

// user appends the caller's committed words.
func (h *history) user(text string) {
	h.msgs = append(h.msgs, voice.Message{Role: voice.RoleUser, Content: text})
}

// snapshot returns a copy the agent may keep.
func (h *history) snapshot() []voice.Message { return slices.Clone(h.msgs) }

// assistant records a finished reply, unless the caller already interrupted it.
func (h *history) assistant(turn int, text string) {
	r := h.record(turn)
	if r.interrupted || text == "" || r.assistant >= 0 {
		return
	}
	r.assistant = len(h.msgs)
	h.msgs = append(h.msgs, voice.Message{Role: voice.RoleAssistant, Content: text})
}

// segment notes a sentence queued for playout behind mark.
func (h *history) segment(turn int, mark, text string) {
	r := h.record(turn)
	r.segments = append(r.segments, segment{mark: mark, text: text})
}

// heard marks the sentence behind mark as played; it reports false for marks that come
// back after the turn was interrupted (the carrier returns cleared marks at once).
func (h *history) heard(turn int, mark string) bool {
	r := h.record(turn)
	if r.interrupted {
		return false
	}
	for i := range r.segments {
		if r.segments[i].mark == mark {
			r.segments[i].heard = true
		}
	}
	return true
}

// interrupt rewrites turn's reply to what the caller heard and returns that text.
func (h *history) interrupt(turn int) string {
	r := h.record(turn)
	r.interrupted = true
	var heard []string
	for _, s := range r.segments {
		if s.heard {
			heard = append(heard, s.text)
		}
	}
	text := strings.Join(heard, " ")
	content := strings.TrimSpace(text + " " + voice.InterruptedMarker)
	if r.assistant >= 0 {
		h.msgs[r.assistant].Content = content
	} else {
		r.assistant = len(h.msgs)
		h.msgs = append(h.msgs, voice.Message{Role: voice.RoleAssistant, Content: content})
	}
	return text
}
