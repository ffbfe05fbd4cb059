package call

import (
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/voice"
)

// history is the conversation as the agent runtime will see it, kept by the owner loop.
// It knows what the caller actually heard of each reply: sentences whose carrier mark came
// back were heard whole; of the sentence playing at an interruption, the words that fit in
// the time it had been playing. An interrupted reply is recorded as
// "<heard part> [interrupted by caller]".
//
// It keeps the latest limit messages (zero: all of them): a long call's requests, and what
// the call holds, stop growing there. Message indexes are counted from the call's first
// message; base of them have been let go.
type history struct {
	msgs  []voice.Message
	limit int
	base  int
	turns map[int]*turnRecord
	// floor: the records of turns before it are forgotten (forget), and what still comes
	// for those turns (a late mark, a cancelled run's last words) changes nothing.
	floor int
	// told: the messages before it are in a runtime's own memory as they stand here
	// (see unseen.go).
	told int
}

type turnRecord struct {
	assistant   int      // index of the assistant message (see history.msg), -1 if none yet
	lost        []string // sentences no voice could speak: never heard, never in msgs
	segments    []segment
	interrupted bool
	logged      bool      // its transcript line was written
	audioAt     time.Time // the turn's first audio reached the carrier
	lastEcho    time.Time // the latest mark the carrier returned: the next segment starts playing
	// pendingBytes holds first-byte times of sentences still being synthesised.
	pendingBytes map[string]time.Time
}

type segment struct {
	mark, text string
	dur        time.Duration
	firstByte  time.Time
	silent     bool // filler or error message: takes play time, is not the agent's words
	heard      bool
}

// record is turn's record, made on first use; nil for a forgotten turn.
func (h *history) record(turn int) *turnRecord {
	if turn < h.floor {
		return nil
	}
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

// forget drops the records of the turns before keep, so a long call holds the records of
// two turns, not of every turn it had: a turn older than the one before the current has
// played out, been interrupted or been cut off, and only its message is still needed.
func (h *history) forget(keep int) {
	if keep <= h.floor {
		return
	}
	h.floor = keep
	for t := range h.turns {
		if t < keep {
			delete(h.turns, t)
		}
	}
}

// user appends the caller's committed words, escaped so that no runtime takes them for
// a command.
func (h *history) user(text string) {
	h.add(voice.Message{Role: voice.RoleUser, Content: voice.EscapeCommand(text)})
}

// add appends m, letting the oldest message go when the window is full, and returns m's
// index.
func (h *history) add(m voice.Message) int {
	h.msgs = append(h.msgs, m)
	if over := len(h.msgs) - h.limit; h.limit > 0 && over > 0 {
		n := copy(h.msgs, h.msgs[over:])
		clear(h.msgs[n:]) // the let-go texts are garbage now, not held by the backing array
		h.msgs = h.msgs[:n]
		h.base += over
	}
	return h.base + len(h.msgs) - 1
}

// msg is the message at index i, nil once it has left the window.
func (h *history) msg(i int) *voice.Message {
	if i < h.base || i-h.base >= len(h.msgs) {
		return nil
	}
	return &h.msgs[i-h.base]
}

// snapshot returns a copy the agent may keep, without replies of which nothing was heard.
func (h *history) snapshot() []voice.Message {
	out := make([]voice.Message, 0, len(h.msgs))
	for _, m := range h.msgs {
		if m.Role != voice.RoleAssistant || m.Content != "" {
			out = append(out, m)
		}
	}
	return out
}

// assistant records a finished reply, unless the caller already interrupted it, less
// any sentence no voice could speak.
func (h *history) assistant(turn int, text string) {
	r := h.record(turn)
	if r == nil || r.interrupted || text == "" || r.assistant >= 0 {
		return
	}
	for _, s := range r.lost {
		text = without(text, s)
	}
	r.assistant = h.add(voice.Message{Role: voice.RoleAssistant, Content: text})
}

// lose takes a sentence no voice could speak out of turn's reply: the caller never heard
// it. (An interrupted reply already holds only what was heard.)
func (h *history) lose(turn int, sentence string) {
	r := h.record(turn)
	if r == nil {
		return
	}
	r.lost = append(r.lost, sentence)
	if m := h.msg(r.assistant); m != nil && !r.interrupted {
		m.Content = without(m.Content, sentence)
		h.retell(r.assistant)
	}
}

// without removes the first occurrence of sentence from text, and the space around it.
func without(text, sentence string) string {
	i := strings.Index(text, sentence)
	if i < 0 || sentence == "" {
		return text
	}
	before, after := strings.TrimRight(text[:i], " \t\n"), strings.TrimLeft(text[i+len(sentence):], " \t\n")
	if before == "" || after == "" {
		return before + after
	}
	return before + " " + after
}

func (h *history) audioStarted(turn int, at time.Time) {
	if r := h.record(turn); r != nil {
		r.audioAt = at
	}
}

// firstByte notes when the sentence behind mark started arriving from TTS.
func (h *history) firstByte(turn int, mark string, at time.Time) {
	r := h.record(turn)
	if r == nil {
		return
	}
	if r.pendingBytes == nil {
		r.pendingBytes = map[string]time.Time{}
	}
	r.pendingBytes[mark] = at
}

// segment notes a sentence queued for playout behind mark, with its audio length.
func (h *history) segment(turn int, mark, text string, dur time.Duration, silent bool) {
	r := h.record(turn)
	if r == nil {
		return
	}
	r.segments = append(r.segments, segment{mark: mark, text: text, dur: dur, silent: silent, firstByte: r.pendingBytes[mark]})
	delete(r.pendingBytes, mark)
}

// heard marks the sentence behind mark as played; it reports false for marks that come
// back after the turn was interrupted (the carrier returns cleared marks at once).
func (h *history) heard(turn int, mark string, at time.Time) bool {
	r := h.record(turn)
	if r == nil || r.interrupted {
		return false
	}
	r.lastEcho = at
	for i := range r.segments {
		if r.segments[i].mark == mark {
			r.segments[i].heard = true
		}
	}
	return true
}

// heardText is what the caller heard of turn by now.
func (r *turnRecord) heardText(now time.Time) string {
	var heard []string
	for _, s := range r.segments {
		if s.heard {
			if !s.silent {
				heard = append(heard, s.text)
			}
			continue
		}
		// The first sentence not yet played through: it started when the previous mark came
		// back (or the turn's first audio went out), or when its own audio arrived if later.
		start := r.lastEcho
		if start.IsZero() {
			start = r.audioAt
		}
		if s.firstByte.After(start) {
			start = s.firstByte
		}
		if !s.silent && !start.IsZero() && s.dur > 0 && now.After(start) {
			if part := turn.CutAtWord(s.text, float64(now.Sub(start))/float64(s.dur)); part != "" {
				heard = append(heard, part)
			}
		}
		break
	}
	return strings.Join(heard, " ")
}

// settled returns turn's reply as its transcript line will hold it, once: when it has
// played to its end (whole), or when the call ends first (what was heard by now, marked
// interrupted when that is not all of it). ok is false when there is nothing to log.
func (h *history) settled(turn int, now time.Time, ended bool) (text string, interrupted, ok bool) {
	r := h.turns[turn]
	if r == nil || r.logged {
		return "", false, false
	}
	m := h.msg(r.assistant)
	if m == nil {
		if !ended {
			return "", false, false
		}
		// The call ended while the agent was still writing: what was heard is the line.
		if text = r.heardText(now); text == "" {
			return "", false, false
		}
		r.logged = true
		return text, true, true
	}
	r.logged = true
	text = m.Content
	if ended && !r.interrupted {
		if heard := r.heardText(now); heard != text {
			return heard, true, true
		}
	}
	return text, r.interrupted, true
}

// interrupt rewrites turn's reply to what the caller heard by now and returns that text.
func (h *history) interrupt(turn int, now time.Time) string {
	r := h.record(turn)
	if r == nil {
		return ""
	}
	text := r.heardText(now)
	r.interrupted = true
	r.logged = true // the caller interrupted: the transcript line is what they heard
	content := strings.TrimSpace(text + " " + voice.InterruptedMarker)
	if m := h.msg(r.assistant); m != nil {
		m.Content = content
		h.retell(r.assistant)
	} else if r.assistant < 0 {
		r.assistant = h.add(voice.Message{Role: voice.RoleAssistant, Content: content})
	}
	return text
}
