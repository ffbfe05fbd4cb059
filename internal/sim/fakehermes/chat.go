package fakehermes

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// toolHangs is how long a TOOLCALL tool runs with HANG: longer than any test.
const toolHangs = 24 * time.Hour

// toolDuration is how long the tool of a TOOLCALL turn runs.
func (s *Server) toolDuration(words map[string]bool) time.Duration {
	if words[MagicHang] {
		return toolHangs
	}
	return s.opts.ToolDuration
}

// chat serves POST /v1/chat/completions.
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 10_000_000))
	var req struct {
		Model    string        `json:"model"`
		Messages []wireMessage `json:"messages"`
		Stream   bool          `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		s.record(r, body, nil, "")
		writeJSON(w, http.StatusBadRequest, errorBody("Missing or invalid 'messages'", "invalid_request_error", "missing_message"))
		return
	}
	msgs := make([]Message, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = Message{Role: m.Role, Content: m.text()}
	}
	sid := r.Header.Get("X-Hermes-Session-Id")
	session := sid != ""
	prompt := msgs
	if session {
		prompt = s.prompt(sid, msgs)
	}
	s.recordPrompt(r, body, msgs, prompt, "")
	words := magic(s.said(prompt))
	if failure(w, words) {
		return
	}
	if !session {
		sum := sha256.Sum256([]byte(sysPrompt(msgs) + "\n" + firstUser(msgs)))
		sid = "api-" + hex.EncodeToString(sum[:])[:16]
	}
	w.Header().Set("X-Hermes-Session-Id", sid)
	if k := r.Header.Get("X-Hermes-Session-Key"); k != "" {
		w.Header().Set("X-Hermes-Session-Key", k)
	}
	model := req.Model
	if model == "" {
		model = DefaultModel
	}
	text, usage := s.outcome(prompt, words)
	// The turn's outcome, as the session stores it: the reply, or the interruption when
	// the client left first; a failed run stores none.
	reply, failed := Interrupted, words[MagicFailRun]
	if session {
		if last, ok := lastTurnMessage(msgs); ok {
			s.store(sid, last)
		}
		defer func() {
			if !failed {
				s.store(sid, Message{Role: "assistant", Content: reply})
			}
		}()
	}
	if !req.Stream {
		if s.answerWhole(w, r, model, text, usage, words) {
			reply = text
		}
		return
	}
	if s.stream(w, r, model, text, usage, words) {
		reply = text
	}
}

// answerWhole answers a non-streamed chat completion; it reports whether the run completed.
func (s *Server) answerWhole(w http.ResponseWriter, r *http.Request, model, text string, usage map[string]int, words map[string]bool) bool {
	if words[MagicHang] {
		select {
		case <-r.Context().Done():
		case <-s.quit:
		}
		return false
	}
	if words[MagicFailRun] {
		writeJSON(w, http.StatusBadGateway, errorBody("Agent run failed (FAILRUN requested)", "server_error", "agent_incomplete"))
		return false
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": newID("chatcmpl-", 14), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   usage})
	return true
}

// stream answers a streamed chat completion; it reports whether the run completed.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, model, text string, usage map[string]int, words map[string]bool) bool {
	if words[MagicHang] && !words[MagicToolCall] {
		select {
		case <-r.Context().Done():
		case <-s.quit:
		}
		return false
	}
	id, created := newID("chatcmpl-", 14), time.Now().Unix()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ka := newKeepalive(w, s.opts.Keepalive)
	defer ka.stop()
	chunk := func(delta map[string]any, finish any, extra map[string]any) map[string]any {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	ctx := r.Context()
	if !ka.data("", chunk(map[string]any{"role": "assistant"}, nil, nil)) {
		return false
	}
	if words[MagicToolCall] {
		call := newID("call_", 4)
		if !ka.data("hermes.tool.progress", map[string]any{"tool": "terminal", "emoji": "💻", "label": "sleep 60", "toolCallId": call, "status": "running"}) {
			return false
		}
		if !s.wait(ctx, s.toolDuration(words), nil, ka) {
			return false
		}
		if !ka.data("hermes.tool.progress", map[string]any{"tool": "terminal", "toolCallId": call, "status": "completed"}) {
			return false
		}
		if text != "" {
			text = "\n\n" + text
		}
	}
	for _, p := range pieces(text) {
		if words[MagicSlow] && !s.wait(ctx, s.opts.SlowEvery, nil, ka) {
			return false
		}
		if !ka.data("", chunk(map[string]any{"content": p}, nil, nil)) {
			return false
		}
	}
	if words[MagicCutoff] {
		return false
	}
	if words[MagicFailRun] {
		ka.data("", chunk(map[string]any{}, "error", map[string]any{"usage": usage,
			"error":  map[string]any{"message": "Agent run failed (FAILRUN requested)", "type": "server_error"},
			"hermes": map[string]any{"completed": false, "partial": false, "failed": true}}))
	} else {
		ka.data("", chunk(map[string]any{}, "stop", map[string]any{"usage": usage}))
	}
	return ka.write("data: [DONE]\n\n")
}

func sysPrompt(msgs []Message) string {
	for _, m := range msgs {
		if m.Role == "system" {
			return m.Content
		}
	}
	return ""
}

func firstUser(msgs []Message) string {
	for _, m := range msgs {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}
