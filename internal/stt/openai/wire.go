package openai

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/textproto"
	"strings"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/voice"
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
		return "", fmt.Errorf("unreadable answer (%s): %q", cmp.Or(mt, "no content type"), voice.Clip(string(trimmed), 80))
	}
	if v.Text == nil {
		return "", fmt.Errorf("answer has no text: %q", voice.Clip(string(trimmed), 80))
	}
	return strings.TrimSpace(*v.Text), nil
}
