package store

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on a transcript search (ListCalls.Text): what is past them is ignored.
const (
	MaxSearchText  = 200 // bytes of Text read
	MaxSearchWords = 8   // words looked for
)

// SearchWords is what a transcript search looks for in ListCalls.Text: its runs of letters,
// digits and combining marks, lowercased, from the first MaxSearchText bytes, at most
// MaxSearchWords of them. Anything else (quotes, stars, dashes, colons, brackets) only
// separates words, so no query syntax of either back end's full-text engine survives it.
// None means no search.
func SearchWords(text string) []string {
	if len(text) > MaxSearchText {
		cut := MaxSearchText
		for cut > 0 && !utf8.RuneStart(text[cut]) {
			cut--
		}
		text = text[:cut]
	}
	words := strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r)
	})
	if len(words) > MaxSearchWords {
		words = words[:MaxSearchWords]
	}
	for i, w := range words {
		words[i] = strings.ToLower(w)
	}
	return words
}
