package fakeopenai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// maxBody bounds a request body, as real servers do.
const maxBody = 10 << 20

// wireRequest is the part of a chat-completions request the fake reads.
type wireRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream        *bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type chunkJSON struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"`
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	// Usage is present only when the request asked for it: null on every chunk but the last.
	Usage json.RawMessage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        deltaJSON `json:"delta"`
	FinishReason *string   `json:"finish_reason"`
}

type deltaJSON struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

type completionJSON struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   usageJSON          `json:"usage"`
}

type completionChoice struct {
	Index        int         `json:"index"`
	Message      messageJSON `json:"message"`
	FinishReason string      `json:"finish_reason"`
}

type messageJSON struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// errorJSON is OpenAI's error envelope.
type errorJSON struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func newError(message, typ, code string) errorJSON {
	var e errorJSON
	e.Error.Message, e.Error.Type = message, typ
	if code != "" {
		e.Error.Code = &code
	}
	return e
}

// Errors the fake answers, worded after OpenAI's.
var (
	errServer = newError("The server had an error while processing your request. Sorry about that!", "server_error", "")
	errFail   = newError("Invalid request: the fake was asked to fail (FAIL400).", "invalid_request_error", "")
)

// chat serves POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	rec, seq := s.record(r)
	defer s.finished(rec)
	reply := func(code int, v any) {
		s.update(func() { rec.Status = code })
		writeJSON(w, code, v)
	}
	req, msgs, code, refusal := s.admit(r, rec)
	if code != 0 {
		reply(code, refusal)
		return
	}
	stream := req.Stream != nil && *req.Stream
	s.log.Debug("fake chat request", "model", req.Model, "messages", len(msgs), "stream", stream)

	magic := magicWords(s.said(msgs))
	switch {
	case magic[MagicFail500]:
		reply(http.StatusInternalServerError, errServer)
		return
	case magic[MagicFail400]:
		reply(http.StatusBadRequest, errFail)
		return
	case magic[MagicHang], magic[MagicStall] && !stream:
		s.hold(w, r, rec)
		return
	}
	text := s.ReplyText(msgs)
	id := fmt.Sprintf("chatcmpl-fake%016x", seq)
	if !stream {
		if magic[MagicFailMid] {
			reply(http.StatusInternalServerError, errServer)
			return
		}
		c := completionJSON{ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: req.Model}
		c.Choices = []completionChoice{{Message: messageJSON{Role: "assistant", Content: text}, FinishReason: "stop"}}
		c.Usage = usageOf(msgs, text)
		reply(http.StatusOK, c)
		return
	}
	s.update(func() { rec.Status = http.StatusOK })
	var usage *usageJSON
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		u := usageOf(msgs, text)
		usage = &u
	}
	if !s.stream(w, r, req.Model, id, text, magic, usage) {
		s.abandoned(rec)
	}
}

// admit checks the key and reads the request into rec. A non-zero code refuses it with
// the error envelope returned.
func (s *Server) admit(r *http.Request, rec *Request) (wireRequest, []Message, int, errorJSON) {
	var req wireRequest
	if s.opts.Key != "" {
		switch got := r.Header.Get("Authorization"); {
		case got == "":
			return req, nil, http.StatusUnauthorized, newError("You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.", "invalid_request_error", "invalid_api_key")
		case got != "Bearer "+s.opts.Key:
			return req, nil, http.StatusUnauthorized, newError("Incorrect API key provided: "+mask(strings.TrimPrefix(got, "Bearer "))+".", "invalid_request_error", "invalid_api_key")
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	switch {
	case err != nil:
		return req, nil, http.StatusBadRequest, newError("Could not read the request body.", "invalid_request_error", "")
	case len(body) > maxBody:
		return req, nil, http.StatusRequestEntityTooLarge, newError("Request body too large.", "invalid_request_error", "body_too_large")
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return req, nil, http.StatusBadRequest, newError("We could not parse the JSON body of your request: "+err.Error(), "invalid_request_error", "")
	}
	msgs, err := messages(req)
	s.update(func() {
		rec.Model, rec.Messages, rec.Stream = req.Model, msgs, req.Stream != nil && *req.Stream
		rec.IncludeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	})
	switch {
	case err != nil:
		return req, nil, http.StatusBadRequest, newError(err.Error(), "invalid_request_error", "")
	case req.Model == "":
		return req, nil, http.StatusBadRequest, newError("You must provide a model parameter.", "invalid_request_error", "")
	case len(s.opts.Models) > 0 && !slices.Contains(s.opts.Models, req.Model):
		return req, nil, http.StatusNotFound, newError(fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model), "invalid_request_error", "model_not_found")
	case len(msgs) == 0:
		return req, nil, http.StatusBadRequest, newError("[] is too short - 'messages'", "invalid_request_error", "")
	}
	return req, msgs, 0, errorJSON{}
}

// stream writes a streamed reply, with the usage chunk at its end when usage is set. It
// returns false if the client went away first.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, model, id, text string, magic map[string]bool, usage *usageJSON) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	created := time.Now().Unix()
	send := func(delta deltaJSON, finish *string) bool {
		if magic[MagicKeepalive] {
			if _, err := io.WriteString(w, ": keepalive\n\n"); err != nil {
				return false
			}
		}
		c := chunkJSON{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []chunkChoice{{Delta: delta, FinishReason: finish}}}
		if usage != nil {
			c.Usage = json.RawMessage("null")
		}
		return writeEvent(w, rc, mustJSON(c))
	}
	if !send(deltaJSON{Role: "assistant"}, nil) {
		return false
	}
	every := s.opts.ChunkEvery
	if magic[MagicSlow] {
		every = s.opts.SlowEvery
	}
	// next is the pause before the next chunk: FirstTokenDelay, when set, before the first
	// one after the role chunk.
	first := true
	next := func() time.Duration {
		if first {
			first = false
			if s.opts.FirstTokenDelay > 0 {
				return s.opts.FirstTokenDelay
			}
		}
		return every
	}
	for _, p := range pieces(text) {
		if !s.pause(r, next()) || !send(deltaJSON{Content: p.text}, nil) {
			return r.Context().Err() == nil && s.quitting()
		}
		if !p.endsSentence {
			continue
		}
		switch {
		case magic[MagicStall]:
			select {
			case <-r.Context().Done():
				return false
			case <-s.quit:
				return true
			}
		case magic[MagicFailMid]:
			return writeEvent(w, rc, mustJSON(errServer))
		case magic[MagicCutoff]:
			return true
		}
	}
	stop := "stop"
	if !s.pause(r, next()) || !send(deltaJSON{}, &stop) {
		return r.Context().Err() == nil && s.quitting()
	}
	if usage != nil {
		c := chunkJSON{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []chunkChoice{}, Usage: mustJSON(usage)}
		if !writeEvent(w, rc, mustJSON(c)) {
			return false
		}
	}
	return writeEvent(w, rc, []byte("[DONE]"))
}

// usageOf counts a turn's tokens the fake's way: words in, words out.
func usageOf(msgs []Message, reply string) usageJSON {
	u := usageJSON{PromptTokens: countWords(msgs), CompletionTokens: len(strings.Fields(reply))}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// pause waits d (nothing when d is 0). It returns false if the client went away or the
// server is closing.
func (s *Server) pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.quit:
		return false
	}
}

func (s *Server) quitting() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

// hold sends nothing until the client goes away (recorded as aborted) or Close is called
// (answered 503).
func (s *Server) hold(w http.ResponseWriter, r *http.Request, rec *Request) {
	select {
	case <-r.Context().Done():
		s.abandoned(rec)
	case <-s.quit:
		s.update(func() { rec.Status = http.StatusServiceUnavailable })
		writeJSON(w, http.StatusServiceUnavailable, newError("The fake server is shutting down.", "server_error", ""))
	}
}

// models serves GET /v1/models.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if s.opts.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.Key {
		writeJSON(w, http.StatusUnauthorized, newError("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"))
		return
	}
	names := s.opts.Models
	if len(names) == 0 {
		names = []string{DefaultModel}
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, n := range names {
		list.Data = append(list.Data, model{ID: n, Object: "model", Created: 1700000000, OwnedBy: "handset"})
	}
	writeJSON(w, http.StatusOK, list)
}

// notFound answers any other route the way OpenAI does.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, newError(fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path), "invalid_request_error", ""))
}

// messages reads the request's messages; content may be a string or an array of parts.
func messages(req wireRequest) ([]Message, error) {
	out := make([]Message, 0, len(req.Messages))
	for i, m := range req.Messages {
		if m.Role == "" {
			return nil, fmt.Errorf("Missing required parameter: 'messages[%d].role'.", i)
		}
		content, err := contentText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("Invalid type for 'messages[%d].content': %v", i, err)
		}
		out = append(out, Message{Role: m.Role, Content: content})
	}
	return out, nil
}

func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("expected a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

func countWords(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(strings.Fields(m.Content))
	}
	return n
}

// mask shows a key the way OpenAI's error message does: its ends only.
func mask(key string) string {
	if len(key) <= 8 {
		return "****"
	}
	return key[:3] + "****" + key[len(key)-4:]
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakeopenai: encode %T: %v", v, err))
	}
	return b
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(mustJSON(v), '\n'))
}

// writeEvent writes one "data:" event and flushes it. It returns false when the write fails.
func writeEvent(w io.Writer, rc *http.ResponseController, data []byte) bool {
	var b bytes.Buffer
	b.Grow(len(data) + 8)
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return false
	}
	return rc.Flush() == nil
}
