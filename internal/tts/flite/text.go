package flite

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxChunk bounds, in characters, the text flite analyses before it speaks. flite turns a
// whole utterance into phones and, for the clustergen voices, into its acoustic
// parameters before the first sample (about 0.5 ms per character for slt, 0.1 for kal),
// so the first audio waits for the whole first utterance. A sentence longer than this is
// split at a clause or word boundary; the first one already past firstChunk, so a long
// opening sentence does not hold up the start.
const (
	maxChunk   = 160
	firstChunk = 80
)

// splitText cleans text and cuts it into the utterances flite should speak one after
// another: sentences, and pieces of at most maxChunk characters of longer ones. It returns
// nothing for blank text. flite's own command line also speaks a text file an utterance
// (about a sentence) at a time, so cutting at sentence ends costs no prosody; a cut inside
// a long sentence puts an utterance's pause where flite would make a shorter phrase break.
func splitText(text string) []string {
	var chunks []string
	for i, s := range sentences(clean(text)) {
		limit := maxChunk
		if i == 0 {
			limit = firstChunk
		}
		chunks = append(chunks, splitLong(s, limit)...)
	}
	return chunks
}

// clean replaces invalid UTF-8 and control characters (NUL included, which would cut a C
// string short) with spaces, keeping newlines for sentences to see paragraph breaks.
func clean(text string) string {
	text = strings.ToValidUTF8(text, " ")
	return strings.Map(func(r rune) rune {
		if r == '\n' {
			return r
		}
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, text)
}

// word is a whitespace-separated token and whether a blank line follows it.
type word struct {
	text      string
	paragraph bool
}

func words(text string) []word {
	var ws []word
	for len(text) > 0 {
		i := strings.IndexFunc(text, func(r rune) bool { return !unicode.IsSpace(r) })
		if i < 0 {
			break
		}
		if len(ws) > 0 && strings.Count(text[:i], "\n") >= 2 {
			ws[len(ws)-1].paragraph = true
		}
		text = text[i:]
		j := strings.IndexFunc(text, unicode.IsSpace)
		if j < 0 {
			j = len(text)
		}
		ws = append(ws, word{text: text[:j]})
		text = text[j:]
	}
	return ws
}

// sentences splits text into sentences, each with its words joined by single spaces.
func sentences(text string) []string {
	ws := words(text)
	var out, cur []string
	for i, w := range ws {
		cur = append(cur, w.text)
		next := ""
		if i+1 < len(ws) {
			next = ws[i+1].text
		}
		if w.paragraph || endsSentence(w.text, next) {
			out = append(out, strings.Join(cur, " "))
			cur = cur[:0]
		}
	}
	if len(cur) > 0 {
		out = append(out, strings.Join(cur, " "))
	}
	return out
}

// abbreviations end in a full stop that does not end a sentence.
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "st": true, "jr": true,
	"sr": true, "vs": true, "etc": true, "no": true, "approx": true, "dept": true,
	"mt": true, "ft": true, "inc": true, "ltd": true, "co": true, "corp": true,
}

// endsSentence reports whether a sentence ends with w, next being the word after it ("" at
// the end). ?, !, ;, : and … end one; a full stop does unless it ends an abbreviation or
// an initial, or the next word starts in lower case.
func endsSentence(w, next string) bool {
	core := strings.TrimRight(w, `"')]}»”’`)
	last, _ := utf8.DecodeLastRuneInString(core)
	switch last {
	case '?', '!', ';', ':', '…':
		return true
	case '.':
	default:
		return false
	}
	if next == "" {
		return true
	}
	stem := strings.TrimRight(core, ".")
	if strings.Contains(stem, ".") || utf8.RuneCountInString(stem) == 1 || abbreviations[strings.ToLower(stem)] {
		return false // "e.g.", "U.S.", "J.", "Dr."
	}
	first, _ := utf8.DecodeRuneInString(strings.TrimLeft(next, `"'([{«“‘`))
	return unicode.IsUpper(first) || unicode.IsDigit(first)
}

// splitLong cuts s into pieces of at most max characters (a longer single word stays
// whole), preferring to cut after a comma, dash or closing bracket in the last two thirds
// of a piece, otherwise between words.
func splitLong(s string, max int) []string {
	if utf8.RuneCountInString(s) <= max {
		return []string{s}
	}
	ws := strings.Fields(s)
	var out []string
	for len(ws) > 0 {
		n, size, clause := 0, 0, 0
		for n < len(ws) {
			add := utf8.RuneCountInString(ws[n])
			if n > 0 {
				add++
			}
			if n > 0 && size+add > max {
				break
			}
			size += add
			n++
			if r, _ := utf8.DecodeLastRuneInString(ws[n-1]); size > max/3 && strings.ContainsRune(",-—–)", r) {
				clause = n
			}
		}
		if clause > 0 && n < len(ws) {
			n = clause
		}
		out = append(out, strings.Join(ws[:n], " "))
		ws = ws[n:]
	}
	return out
}
