package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// maxBody bounds a request body: a long conversation fits, a flood does not.
const maxBody = 4 << 20

// maxMessages bounds the messages of one request.
const maxMessages = 2000

// chatRequest is what the bridge reads of a POST /v1/chat/completions body: OpenAI's
// fields, and the call object Vapi adds to its custom-LLM requests. Other fields
// (temperature, tools, max_tokens, …) are the runtime's business and are ignored.
type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []wireMessage  `json:"messages"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options"`
	User          string         `json:"user"`
	Metadata      map[string]any `json:"metadata"`
	Call          *vapiCall      `json:"call"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// vapiCall is the part of Vapi's call object the bridge uses: the call's id keys the
// session, the customer's number the caller's memory (hashed; the number goes no further).
type vapiCall struct {
	ID       string `json:"id"`
	Customer *struct {
		Number string `json:"number"`
	} `json:"customer"`
}

// wireMessage is one message as OpenAI's clients send it; content is a string, null, or
// a list of parts.
type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentPart is one part of a list content; only text parts are read.
type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// turn is a request made ready for the runtime: the conversation without the client's
// instructions, the instructions apart, and what was left out.
type turn struct {
	history      []voice.Message
	instructions string
	omitted      omitted
}

// omitted counts what a request carried that no runtime is sent, for one log line.
type omitted struct {
	roles map[string]int // messages of roles other than system, user, assistant (tool, function)
	parts map[string]int // content parts other than text (image_url, input_audio, …)
	empty int            // messages with no text
}

func (o omitted) any() bool { return len(o.roles) > 0 || len(o.parts) > 0 || o.empty > 0 }

// errBadRequest is a request the bridge refuses with 400; its text goes back to the client.
type errBadRequest struct{ msg, param string }

func (e *errBadRequest) Error() string { return e.msg }

func badRequest(param, format string, args ...any) error {
	return &errBadRequest{msg: fmt.Sprintf(format, args...), param: param}
}

// parseChat reads a request body. Its errors are *errBadRequest.
func parseChat(body []byte) (chatRequest, error) {
	var req chatRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return req, badRequest(typ.Field, "%s: want %s, got JSON %s", typ.Field, typ.Type, typ.Value)
		}
		return req, badRequest("", "the body is not JSON: %v", err)
	}
	switch {
	case len(req.Messages) == 0:
		return req, badRequest("messages", "messages: at least one message is required")
	case len(req.Messages) > maxMessages:
		return req, badRequest("messages", "messages: %d messages, at most %d are taken", len(req.Messages), maxMessages)
	}
	return req, nil
}

// turn turns the messages into the runtime's history. System (and developer) messages
// become the instructions, in order; tool, function and other messages, and non-text
// content parts, are left out and counted. The last message kept must be the user's: a
// runtime answers a user.
func (req chatRequest) turn() (turn, error) {
	var t turn
	var instructions []string
	for i, m := range req.Messages {
		text, err := messageText(m.Content, &t.omitted)
		if err != nil {
			return t, badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: %v", i, err)
		}
		switch role := voice.Role(m.Role); role {
		case voice.RoleSystem, "developer":
			if strings.TrimSpace(text) != "" {
				instructions = append(instructions, text)
			}
		case voice.RoleUser, voice.RoleAssistant:
			if strings.TrimSpace(text) == "" {
				t.omitted.empty++
				continue
			}
			t.history = append(t.history, voice.Message{Role: role, Content: text})
		case "":
			return t, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d].role: required", i)
		default:
			if t.omitted.roles == nil {
				t.omitted.roles = map[string]int{}
			}
			t.omitted.roles[clipName(m.Role)]++
		}
	}
	t.instructions = strings.Join(instructions, "\n\n")
	if n := len(t.history); n == 0 || t.history[n-1].Role != voice.RoleUser {
		return t, badRequest("messages", "messages: the last message with text must be the user's")
	}
	return t, nil
}

// messageText is the text of a message's content: the string, or its text parts joined
// by newlines. Other parts are counted in o.
func messageText(raw json.RawMessage, o *omitted) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []contentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or a list of content parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
			continue
		}
		if o.parts == nil {
			o.parts = map[string]int{}
		}
		o.parts[clipName(p.Type)]++
	}
	return strings.Join(texts, "\n"), nil
}

// clipName bounds a client-chosen name before it reaches a log line.
func clipName(s string) string {
	if s == "" {
		return "(none)"
	}
	return voice.Clip(s, 40)
}
