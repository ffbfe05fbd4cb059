package turn

import (
	"strings"
	"unicode"
)

// normalize lowercases, keeps letters and digits (any script) and single spaces.
func normalize(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		} else {
			space = true
		}
	}
	return b.String()
}

func wordCount(norm string) int { return len(strings.Fields(norm)) }

// wordPrefix reports whether a's words begin b's words ("no" is not a prefix of "nothing").
func wordPrefix(a, b string) bool {
	return a != "" && (a == b || strings.HasPrefix(b, a+" "))
}

// minEchoWords: shorter transcripts are never echo, so a caller repeating an offered word
// ("monday", "yes please") is always heard.
const minEchoWords = 4

// IsEcho reports whether a transcript is the agent's own voice coming back: at least four
// words that appear verbatim in what the agent is saying, or of which at least 60 % are
// the agent's words.
func IsEcho(transcript, agentText string) bool {
	t, a := normalize(transcript), normalize(agentText)
	words := strings.Fields(t)
	if len(words) < minEchoWords || a == "" {
		return false
	}
	if strings.Contains(" "+a+" ", " "+t+" ") {
		return true
	}
	agentWords := map[string]bool{}
	for _, w := range strings.Fields(a) {
		agentWords[w] = true
	}
	shared := 0
	for _, w := range words {
		if agentWords[w] {
			shared++
		}
	}
	return shared*10 >= len(words)*6
}

// nonSpeech are captions recognisers invent from music, noise or silence. Real short words
// ("yes", "okay", "thanks") are never here: they are answers.
var nonSpeech = map[string]bool{
	"thanks for watching": true, "thank you for watching": true, "thanks for watching bye": true,
	"please subscribe": true, "like and subscribe": true, "subtitles by the amara org community": true,
	"music": true, "silence": true, "blank audio": true, "blank_audio": true, "noise": true,
	"applause": true, "laughter": true, "inaudible": true, "no speech": true, "sound": true,
}

// IsHallucination reports whether a transcript is only non-speech artefacts: bracketed
// tags like "[music]" or known caption closers, every sentence of it.
func IsHallucination(transcript string) bool {
	pieces := strings.FieldsFunc(transcript, func(r rune) bool { return strings.ContainsRune(".!?\n", r) })
	if len(pieces) == 0 {
		return false
	}
	for _, p := range pieces {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		bracketed := (strings.HasPrefix(p, "[") && strings.HasSuffix(p, "]")) ||
			(strings.HasPrefix(p, "(") && strings.HasSuffix(p, ")"))
		if !bracketed && !nonSpeech[normalize(p)] {
			return false
		}
	}
	return true
}

// CutAtWord returns the part of text a listener heard after fraction (0..1) of its audio:
// whole words only, rounded down, so a word cut mid-way counts as unheard.
func CutAtWord(text string, fraction float64) string {
	limit := int(float64(len(text)) * fraction)
	switch {
	case limit <= 0:
		return ""
	case limit >= len(text):
		return text
	case unicode.IsSpace(rune(text[limit])):
		return strings.TrimSpace(text[:limit])
	}
	i := strings.LastIndexFunc(text[:limit], unicode.IsSpace)
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(text[:i])
}
