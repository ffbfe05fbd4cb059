package voice

import "unicode/utf8"

// Bounds for text from outside (a request, a caller's words, a runtime's or carrier's
// error answer) that Handset repeats in its own errors, log lines and journal events, so a
// 100 KB input never becomes a 100 KB log line or a journal several times its size.
const (
	// EchoLimit bounds one echoed value: a field of a request, an error answer's text.
	EchoLimit = 300
	// MessageLimit bounds a whole message made of Handset's words and echoed values: an
	// API error, a job's stored error.
	MessageLimit = 1024
	// TranscriptLimit bounds the text of what was said in a journal event (stt.final,
	// turn.commit, agent.done); the store keeps the transcript itself whole.
	TranscriptLimit = 4096
)

// Ellipsis ends a clipped text.
const Ellipsis = "…"

// Clip returns s when it is at most max bytes, otherwise its longest prefix that ends on a
// UTF-8 boundary and, with Ellipsis after it, fits in max bytes. It allocates only when it
// cuts.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len(Ellipsis)
	if n < 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + Ellipsis
}
