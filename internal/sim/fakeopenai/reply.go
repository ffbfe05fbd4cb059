package fakeopenai

import (
	"strings"
	"unicode"
)

// ReplyText returns the text the server answers to messages: Options.Reply's, or the
// deterministic default (two sentences, twelve with LONG). Fault magic words do not change it.
func (s *Server) ReplyText(messages []Message) string {
	if s.opts.Reply != nil {
		return s.opts.Reply(messages)
	}
	return defaultReply(s.said(messages))
}

// said is what the user said in messages: Options.Said's pick, or the last user message.
func (s *Server) said(messages []Message) string {
	if s.opts.Said != nil {
		return s.opts.Said(messages)
	}
	return lastUser(messages)
}

// longFiller are the middle sentences of a LONG reply.
var longFiller = []string{"two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven"}

func defaultReply(last string) string {
	heard := strings.TrimRight(strings.Join(strings.Fields(last), " "), ".!?… ")
	if heard == "" {
		return "Hello! What can I do for you?"
	}
	first := "I heard you say: " + heard + "."
	if !magicWords(last)[MagicLong] {
		return first + " What else can I do for you?"
	}
	var b strings.Builder
	b.WriteString(first)
	for _, n := range longFiller {
		b.WriteString(" This is sentence " + n + " of a long answer, so there is time to interrupt me.")
	}
	b.WriteString(" That is the end of my long answer.")
	return b.String()
}

// lastUser returns the content of the last user message ("" if none).
func lastUser(messages []Message) string {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == "user" {
			return messages[i].Content
		}
	}
	return ""
}

// magicWords returns the magic words present in text as whole words.
func magicWords(text string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		switch w {
		case MagicSlow, MagicLong, MagicStall, MagicHang, MagicFail500, MagicFail400,
			MagicFailMid, MagicCutoff, MagicKeepalive:
			out[w] = true
		}
	}
	return out
}

// piece is one streamed content chunk.
type piece struct {
	text         string
	endsSentence bool
}

// pieces cuts text into chunks of at most two words, never across a sentence end.
// Joined, the pieces give back text exactly.
func pieces(text string) []piece {
	var (
		out   []piece
		start int // start of the current piece
		words int // words in the current piece
	)
	i := 0
	for i < len(text) {
		// Skip to the end of the word, then past its trailing spaces.
		for i < len(text) && !isSpace(text[i]) {
			i++
		}
		wordEnd := i
		for i < len(text) && isSpace(text[i]) {
			i++
		}
		if wordEnd == start && words == 0 && i < len(text) {
			continue // leading spaces: keep them with the first word
		}
		words++
		end := endsSentence(text[start:wordEnd])
		if words == 2 || end || i == len(text) {
			out = append(out, piece{text: text[start:i], endsSentence: end})
			start, words = i, 0
		}
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// endsSentence reports whether a word closes a sentence: '.', '!' or '?', perhaps followed
// by closing quotes or brackets.
func endsSentence(s string) bool {
	s = strings.TrimRight(s, `"')]”’`)
	return strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?")
}
