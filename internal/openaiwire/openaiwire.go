// Package openaiwire holds what every OpenAI-compatible API shares on the wire, for the
// providers that speak one (transcription, speech): reading the error bodies of OpenAI and
// of the servers that imitate it (FastAPI's "detail" shapes from speaches, Kokoro-FastAPI).
package openaiwire

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/voice"
)

// ErrorMessage extracts the vendor's message from an error answer: OpenAI's
// {"error":{"message":…}} (or a bare string error), FastAPI's {"detail": "…"},
// {"detail":{"message":…}} or {"detail":[{"msg":…}, …]} (speaches, Kokoro-FastAPI), or a
// short plain-text body; otherwise the status text.
func ErrorMessage(body []byte, status int) string {
	if msg := jsonMessage(body); msg != "" {
		return voice.Clip(msg, voice.EchoLimit)
	}
	text := strings.TrimSpace(string(body))
	if text != "" && utf8.ValidString(text) && !strings.HasPrefix(text, "<") && !strings.HasPrefix(text, "{") {
		return voice.Clip(text, voice.EchoLimit)
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

// Endpoint checks an API root and key as the providers take them and returns the URL of
// path under the root ("https://api.openai.com/v1" + "/audio/speech"). what names the
// provider in errors ("openai tts").
func Endpoint(what, base, key, path string) (string, error) {
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return "", fmt.Errorf("%s: base URL %q: %w", what, base, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("%s: base URL %q: scheme must be http or https", what, base)
	case u.Host == "":
		return "", fmt.Errorf("%s: base URL %q has no host", what, base)
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("%s: base URL %q must not have a query or fragment", what, base)
	case strings.ContainsAny(key, "\r\n\x00"):
		return "", fmt.Errorf("%s: key contains a line break or NUL", what)
	}
	return strings.TrimRight(base, "/") + path, nil
}
