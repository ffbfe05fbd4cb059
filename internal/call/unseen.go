package call

import "github.com/handset-voice/handset/internal/voice"

// What a runtime that keeps the conversation itself (OpenClaw, Hermes sessions) has not
// been told. Such a runtime stores a turn's caller message and its own reply when the run
// finishes, and nothing else: not the greeting or a callback's message Handset spoke for
// it, not a caller sentence whose run was cancelled before it finished (the OpenClaw
// gateway drops the message of a run aborted before its prompt starts), and not what the
// caller actually heard of a reply they cut off. The history keeps a cursor, told: the
// messages before it are in the runtime's memory as they stand here. Each turn carries
// the messages from the cursor on (voice.TurnRequest.Unseen), so the runtime's memory
// catches up with the line; a sentence told twice is better than one lost.

// unseen returns the messages the runtime has not been told, without the caller's new
// message (the history's last).
func (h *history) unseen() []voice.Message {
	from := max(h.told-h.base, 0)
	end := len(h.msgs) - 1
	if from >= end {
		return nil
	}
	out := make([]voice.Message, 0, end-from)
	for _, m := range h.msgs[from:end] {
		if m.Content != "" {
			out = append(out, m)
		}
	}
	return out
}

// finished records turn's reply as the runtime finished its run: the runtime now holds
// every message so far, the reply as it wrote it. Where the caller will not hear all of
// that (a sentence no voice could speak), the reply is told again as heard.
func (h *history) finished(turn int, text string) {
	h.assistant(turn, text)
	h.told = h.base + len(h.msgs)
	if r := h.record(turn); r != nil && len(r.lost) > 0 {
		h.retell(r.assistant)
	}
}

// retell notes that message i changed after the runtime was told it (the caller cut the
// reply off, or a sentence of it could not be spoken): it is told again, as it now is.
func (h *history) retell(i int) {
	if i >= 0 && i < h.told {
		h.told = i
	}
}
