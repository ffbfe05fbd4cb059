package voice

import "strings"

// Catchup is the turn as one message for a runtime that keeps the conversation itself
// (an OpenClaw session, a Hermes session) and is sent only the caller's latest words: those
// words, preceded by a bracketed note of what it missed on the line (Unseen) when it
// missed anything. The note travels in the caller's message because that is what such a
// runtime stores; a system prompt is not kept in its transcript.
func (r TurnRequest) Catchup() string {
	latest := ""
	if n := len(r.History); n > 0 && r.History[n-1].Role == RoleUser {
		latest = r.History[n-1].Content
	}
	var lines []string
	for _, m := range r.Unseen {
		if line := unseenLine(m); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return latest
	}
	var b strings.Builder
	b.WriteString("[Note from Handset, not the caller: what happened on the call since your last reply, which you have not seen]\n")
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString("[The caller now says:]\n")
	b.WriteString(latest)
	return b.String()
}

// unseenLine tells one missed message in the note.
func unseenLine(m Message) string {
	text := strings.TrimSpace(m.Content)
	switch m.Role {
	case RoleUser:
		if text == "" {
			return ""
		}
		return "The caller said: " + quote(text)
	case RoleAssistant:
		heard, cut := strings.CutSuffix(text, InterruptedMarker)
		heard = strings.TrimSpace(heard)
		switch {
		case cut && heard == "":
			return "The caller interrupted before hearing any of your reply."
		case cut:
			return "You were cut off: of your reply the caller heard only " + quote(heard) + ", then interrupted."
		case text != "":
			return "You said: " + quote(text)
		}
	}
	return ""
}

func quote(s string) string { return "\u201c" + s + "\u201d" }

// EscapeCommand keeps a caller's words from being read as a runtime command: text that
// starts with a slash (an STT transcribing "slash reset" as "/reset") is prefixed with
// "(spoken) ", so the runtime sees speech, never a command. Other text is returned as is.
func EscapeCommand(text string) string {
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "/") || strings.HasPrefix(t, "\\") {
		return "(spoken) " + t
	}
	return text
}
