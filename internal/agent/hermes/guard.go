package hermes

import (
	"errors"
	"strings"
	"unicode"
)

// warningPrefixes start Hermes' fail-open answers: text shaped as a reply that is really an
// error ("⚠️ Provider authentication failed: ..."). Matched case-insensitively at the start
// of the reply, after leading white space.
var warningPrefixes = []string{
	"⚠",
	"❌",
	"provider authentication failed",
	"api call failed",
	"error code:",
	"an error occurred",
}

// errWarning is the cause of a fail-open answer we refused to speak.
var errWarning = errors.New("Hermes answered with a warning instead of a reply")

// errEmpty is the cause of a completion with no text and zero usage.
var errEmpty = errors.New("Hermes completed with no text and zero usage (a silent failure)")

// gate holds back the first text of a reply until it cannot be a fail-open warning.
type gate struct {
	held string
	open bool
}

// add takes a text delta and returns what may be spoken now, or errWarning.
func (g *gate) add(text string) (string, error) {
	if g.open {
		return text, nil
	}
	g.held += text
	lead := strings.TrimLeftFunc(g.held, unicode.IsSpace)
	if lead == "" {
		return "", nil
	}
	low := strings.ToLower(lead)
	for _, p := range warningPrefixes {
		if strings.HasPrefix(low, p) {
			return "", errWarning
		}
		if strings.HasPrefix(p, low) {
			return "", nil // could still become a warning: keep holding
		}
	}
	g.open, g.held = true, ""
	return lead, nil
}

// finish ends the reply: it returns held text that is not a warning, or errWarning.
func (g *gate) finish() (string, error) {
	if g.open {
		return "", nil
	}
	lead := strings.TrimSpace(g.held)
	g.open, g.held = true, ""
	if isWarning(lead) {
		return "", errWarning
	}
	return lead, nil
}

// isWarning reports whether a whole reply is a fail-open warning.
func isWarning(text string) bool {
	low := strings.ToLower(strings.TrimSpace(text))
	for _, p := range warningPrefixes {
		if strings.HasPrefix(low, p) {
			return true
		}
	}
	return false
}
