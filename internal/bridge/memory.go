package bridge

import (
	"strings"
	"unicode"

	"github.com/handset-voice/handset/internal/voice"
)

// What a runtime that keeps the conversation itself (an OpenClaw or Hermes session) holds
// after a bridged turn differs from what the client's listener heard in two ways. The
// runtime stores a finished run's message and its whole reply, but a voice platform
// stops speaking where its user cut in, and its next request carries the reply as far as
// it was spoken. And a run the client stopped (it left mid-stream) may never be stored
// at all: the OpenClaw gateway drops the message of a run aborted before its prompt
// starts. So each session remembers its last turn, and the next request's history shows
// what became of it; what the runtime misses goes as voice.TurnRequest.Unseen, as on
// Handset's own calls.

// lastTurn is what a session's runtime was last asked and answered.
type lastTurn struct {
	turn       int    // its number
	historyLen int    // messages in its request, the user's last
	user       string // the user's words it answered
	reply      string // the runtime's text, whole or as far as it came
	finished   bool   // the run ended with its reply: the runtime stored both
}

// missed compares the history of a session's new request (its last message the user's
// new words) with the session's last turn, and returns what the runtime has not been
// told, oldest first, and what the listener heard of a reply they cut off (cut false
// when none was). A history that does not show the last turn's user message (a client
// that keeps no history, or trims it) tells nothing, and nothing is returned.
func (last lastTurn) missed(history []voice.Message) (unseen []voice.Message, heard string, cut bool) {
	n := len(history)
	if last.user == "" || n < 2 {
		return nil, "", false
	}
	u := last.userIndex(history[:n-1])
	if u < 0 {
		return nil, "", false
	}
	after := history[u+1 : n-1]
	if !last.finished {
		// the runtime may hold neither the message nor its reply: told again
		unseen = append(unseen, history[u])
	}
	said := ""
	replied := len(after) > 0 && after[0].Role == voice.RoleAssistant
	if replied {
		said = after[0].Content
		after = after[1:]
	}
	switch {
	case last.reply == "" && !replied:
	case !last.finished || isCutOff(said, last.reply):
		unseen = append(unseen, voice.Message{Role: voice.RoleAssistant,
			Content: strings.TrimSpace(said + " " + voice.InterruptedMarker)})
		heard, cut = said, true
	case !replied:
		// a finished reply the client has no message for: its user heard none of it
		unseen = append(unseen, voice.Message{Role: voice.RoleAssistant, Content: voice.InterruptedMarker})
		cut = true
	}
	for _, m := range after {
		if strings.TrimSpace(m.Content) != "" {
			unseen = append(unseen, m)
		}
	}
	return unseen, heard, cut
}

// userIndex finds the last turn's user message in history: where the client's history
// had it, or else its latest occurrence (a client that trims old messages). -1: absent.
func (last lastTurn) userIndex(history []voice.Message) int {
	isUser := func(i int) bool {
		return history[i].Role == voice.RoleUser && strings.TrimSpace(history[i].Content) == strings.TrimSpace(last.user)
	}
	if i := last.historyLen - 1; i >= 0 && i < len(history) && isUser(i) {
		return i
	}
	for i := len(history) - 1; i >= 0; i-- {
		if isUser(i) {
			return i
		}
	}
	return -1
}

// isCutOff reports whether heard is a shorter start of reply, comparing letters and
// digits only: platforms re-space and re-punctuate what they spoke.
func isCutOff(heard, reply string) bool {
	h, r := fold(heard), fold(reply)
	return len(h) < len(r) && strings.HasPrefix(r, h)
}

func fold(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}
