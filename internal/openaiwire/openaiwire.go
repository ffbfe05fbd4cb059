// Package openaiwire holds what every OpenAI-compatible API shares on the wire, for the
// providers that speak one (transcription, speech): reading the error bodies of OpenAI and
// of the servers that imitate it (FastAPI's "detail" shapes from speaches, Kokoro-FastAPI).
package openaiwire

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"
)

// maxErrorMessage bounds the vendor message kept in an error.
const maxErrorMessage = 300

// ErrorMessage extracts the vendor's message from an error answer: OpenAI's
// {"error":{"message":…}} (or a bare string error), FastAPI's {"detail": "…"},
// {"detail":{"message":…}} or {"detail":[{"msg":…}, …]} (speaches, Kokoro-FastAPI), or a
// short plain-text body; otherwise the status text.
func ErrorMessage(body []byte, status int) string {
	if msg := jsonMessage(body); msg != "" {
		return Truncate(msg, maxErrorMessage)
	}
	text := strings.TrimSpace(string(body))
	if text != "" && utf8.ValidString(text) && !strings.HasPrefix(text, "<") && !strings.HasPrefix(text, "{") {
		return Truncate(text, maxErrorMessage)
	}
	return http.StatusText(status)
}

// jsonMessage reads the message of a JSON error body, "" if it has none.
func jsonMessage(body []byte) string {
	var env struct {
		Error   json.RawMessage `json:"error"`
		Detail  json.RawMessage `json:"detail"`
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(body, &env) != nil {
		return ""
	}
	for _, raw := range []json.RawMessage{env.Error, env.Detail} {
		if msg := messageOf(raw); msg != "" {
			return msg
		}
	}
	var s string
	if json.Unmarshal(env.Message, &s) == nil {
		return s
	}
	return ""
}

// messageOf reads an error member: a string, an object with message (or msg), or a list
// of those joined with "; ".
func messageOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Message string `json:"message"`
		Msg     string `json:"msg"`
		Code    any    `json:"code"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		if m := cmp.Or(obj.Message, obj.Msg); m != "" {
			return m
		}
		if c, ok := obj.Code.(string); ok {
			return c
		}
		return ""
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		var msgs []string
		for _, item := range list {
			if m := messageOf(item); m != "" {
				msgs = append(msgs, m)
			}
		}
		return strings.Join(msgs, "; ")
	}
	return ""
}

// Truncate cuts s to at most n bytes on a rune boundary, marking the cut with "…".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
