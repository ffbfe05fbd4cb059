package call

import (
	"strings"
	"unicode"
)

// sentenceChunker cuts streaming reply text into sentences so the first one can be spoken
// while the agent is still writing the rest.
type sentenceChunker struct {
	buf strings.Builder
}

// maxSentence is where a sentence with no end punctuation is cut anyway (at a space), so
// a runtime that never punctuates still gets spoken.
const maxSentence = 240

// minSentence keeps tiny fragments ("Hi.") together with what follows when more text is
// still coming, so TTS gets prosody-friendly pieces.
const minSentence = 8

var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "st": true, "jr": true, "sr": true,
	"vs": true, "etc": true, "e.g": true, "i.e": true, "prof": true, "no": true, "approx": true,
}

// Add appends streamed text and returns the sentences it completed.
func (c *sentenceChunker) Add(text string) []string {
	c.buf.WriteString(text)
	var out []string
	for {
		s := c.buf.String()
		cut := sentenceEnd(s)
		if cut < 0 && len(s) > maxSentence {
			cut = lastSpaceBefore(s, maxSentence)
		}
		if cut <= 0 {
			return out
		}
		sentence := strings.TrimSpace(s[:cut])
		rest := s[cut:]
		c.buf.Reset()
		c.buf.WriteString(rest)
		if sentence != "" {
			out = append(out, sentence)
		}
	}
}

// Flush returns whatever text is left as a last sentence.
func (c *sentenceChunker) Flush() string {
	s := strings.TrimSpace(c.buf.String())
	c.buf.Reset()
	return s
}

// sentenceEnd returns the index just past the first sentence end in s that is followed by
// whitespace (so "3.5" and "example.com" never split), or -1.
func sentenceEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\n':
			if strings.TrimSpace(s[:i]) != "" {
				return i + 1
			}
		case '.', '!', '?', ';':
			j := i + 1
			for j < len(s) && strings.ContainsRune(`.!?"')]`, rune(s[j])) {
				j++
			}
			if j >= len(s) || !unicode.IsSpace(rune(s[j])) {
				continue // need to see what follows before deciding
			}
			if s[i] == '.' && isAbbreviation(s[:i]) {
				continue
			}
			if len(strings.TrimSpace(s[:j])) < minSentence {
				continue
			}
			return j
		}
	}
	return -1
}

func isAbbreviation(before string) bool {
	start := strings.LastIndexFunc(before, unicode.IsSpace) + 1
	word := strings.ToLower(before[start:])
	if abbreviations[word] {
		return true
	}
	// single letters ("J. Smith") and numbered lists ("1.") are not sentence ends
	return len(word) == 1 || (word != "" && strings.Trim(word, "0123456789") == "")
}

func lastSpaceBefore(s string, n int) int {
	if i := strings.LastIndexAny(s[:n], ",;:"); i > minSentence {
		return i + 1
	}
	if i := strings.LastIndexFunc(s[:n], unicode.IsSpace); i > 0 {
		return i + 1
	}
	return n
}
