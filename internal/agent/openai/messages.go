package openai

import (
	"fmt"
	"slices"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// messages builds the conversation sent for one turn, applying the conversation rules:
//
//   - Only text messages of role system, user or assistant are forwarded; a message with
//     empty content or any other role (tool results, images, function calls) is omitted,
//     and what was omitted is logged once per turn (counts and roles, never content).
//   - A runtime that keeps the conversation itself (KeepsConversation) gets one user
//     message, TurnRequest.Catchup, instead of the history.
//   - The system prompt (SystemPrompt, then Handset's note about an unverified or withheld
//     caller) goes first as a system message, or, with SystemAsUser, is prepended to the
//     latest user message ("<prompt>\n\n<text>"); with no user message at all it is sent
//     as the first message, with role user.
func (a *Agent) messages(system string, req voice.TurnRequest) []wireMessage {
	out := make([]wireMessage, 0, len(req.History)+1)
	if system != "" && !a.sysAsUser {
		out = append(out, wireMessage{Role: string(voice.RoleSystem), Content: system})
	}
	var empty int
	var roles map[string]int
	history := req.History
	if a.keepsConversation {
		history = []voice.Message{{Role: voice.RoleUser, Content: req.Catchup()}}
	}
	for _, m := range history {
		switch {
		case m.Role != voice.RoleSystem && m.Role != voice.RoleUser && m.Role != voice.RoleAssistant:
			if roles == nil {
				roles = map[string]int{}
			}
			roles[string(m.Role)]++
			continue
		case strings.TrimSpace(m.Content) == "":
			empty++
			continue
		}
		out = append(out, wireMessage{Role: string(m.Role), Content: m.Content})
	}
	if system != "" && a.sysAsUser {
		out = prependToLastUser(out, system)
	}
	if empty > 0 || len(roles) > 0 {
		a.log.Info("agent history: messages omitted", "provider", a.name, "call", req.CallID,
			"turn", req.Turn, "empty", empty, "other_roles", omittedRoles(roles))
	}
	return out
}

// prependToLastUser puts prompt before the text of the latest user message.
func prependToLastUser(msgs []wireMessage, prompt string) []wireMessage {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == string(voice.RoleUser) {
			msgs[i].Content = prompt + "\n\n" + msgs[i].Content
			return msgs
		}
	}
	return append([]wireMessage{{Role: string(voice.RoleUser), Content: prompt}}, msgs...)
}

// omittedRoles describes dropped roles as "tool×2, image×1" in a stable order.
func omittedRoles(roles map[string]int) string {
	if len(roles) == 0 {
		return ""
	}
	names := make([]string, 0, len(roles))
	for r := range roles {
		names = append(names, r)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, r := range names {
		parts[i] = fmt.Sprintf("%s×%d", voice.Clip(r, 32), roles[r])
	}
	return strings.Join(parts, ", ")
}
