package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/audio/wav"
)

// form builds the multipart body of one transcription request and returns it with its
// Content-Type. The fields come before the file, so a server may read them first.
func (r *Recognizer) form(u upload) ([]byte, string, error) {
	var b bytes.Buffer
	b.Grow(len(u.pcm) + 1024)
	mw := multipart.NewWriter(&b)
	fields := [][2]string{{"model", r.model}, {"response_format", "json"}}
	if r.language != "" {
		fields = append(fields, [2]string{"language", r.language})
	}
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return nil, "", err
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="utterance.wav"`)
	h.Set("Content-Type", "audio/wav")
	part, err := mw.CreatePart(h)
	if err != nil {
		return nil, "", err
	}
	if err := wav.Write(part, u.format, u.pcm); err != nil {
		return nil, "", err
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return b.Bytes(), mw.FormDataContentType(), nil
}

// parseTranscription reads a successful answer: {"text": …} (json and verbose_json), or
// the bare text of a server that answers text/plain. The text is trimmed, as Whisper often
// starts it with a space.
func parseTranscription(contentType string, body []byte) (string, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	trimmed := bytes.TrimSpace(body)
	if mt == "text/plain" && (len(trimmed) == 0 || trimmed[0] != '{') {
		if !utf8.Valid(trimmed) {
			return "", errors.New("text answer is not UTF-8")
		}
		return string(trimmed), nil
	}
	var v struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(trimmed, &v); err != nil {
		return "", fmt.Errorf("unreadable answer (%s): %q", cmp.Or(mt, "no content type"), truncate(string(trimmed), 80))
	}
	if v.Text == nil {
		return "", fmt.Errorf("answer has no text: %q", truncate(string(trimmed), 80))
	}
	return strings.TrimSpace(*v.Text), nil
}

// maxErrorMessage bounds the vendor message kept in an error.
const maxErrorMessage = 300

// errorMessage extracts the vendor's message from an error answer: OpenAI's
// {"error":{"message":…}} (or a bare string error), FastAPI's {"detail": "…"},
// {"detail":{"message":…}} or {"detail":[{"msg":…}, …]} (speaches, Kokoro-FastAPI), or a
// short plain-text body; otherwise the status text.
func errorMessage(body []byte, status int) string {
	if msg := jsonMessage(body); msg != "" {
		return truncate(msg, maxErrorMessage)
	}
	text := strings.TrimSpace(string(body))
	if text != "" && utf8.ValidString(text) && !strings.HasPrefix(text, "<") && !strings.HasPrefix(text, "{") {
		return truncate(text, maxErrorMessage)
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

// truncate cuts s to at most n bytes on a rune boundary, marking the cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
