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
	chunk := func(d streamDelta, finish string) streamChunk {
		c := streamChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			Choices: []streamChoice{{Delta: d}}}
		if finish != "" {
			c.Choices[0].FinishReason = &finish
		}
		return c
	}
	ctx := r.Context()
	if !ka.data("", chunk(streamDelta{Role: "assistant"}, "")) {
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
		if !ka.data("", chunk(streamDelta{Content: p}, "")) {
			return false
		}
	}
	if words[MagicCutoff] {
		return false
	}
	if words[MagicFailRun] {
		last := chunk(streamDelta{}, "error")
		last.Usage = usage
		last.Error = &streamError{Message: "Agent run failed (FAILRUN requested)", Type: "server_error"}
		last.Hermes = &runState{Failed: true}
		ka.data("", last)
	} else {
		last := chunk(streamDelta{}, "stop")
		last.Usage = usage
		ka.data("", last)
	}
	return ka.write("data: [DONE]\n\n")
}

// streamChunk is one chat.completion.chunk as Hermes streams it. Typed rather than a map:
// the bridge's benchmark runs this fake in the bridge's process, where a fake that allocates
// more than the runtime it stands for would make the collector run for it.
type streamChunk struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []streamChoice `json:"choices"`
	Usage   map[string]int `json:"usage,omitempty"`
	Error   *streamError   `json:"error,omitempty"`
	Hermes  *runState      `json:"hermes,omitempty"`
}

type streamChoice struct {
	Index        int         `json:"index"`
	Delta        streamDelta `json:"delta"`
	FinishReason *string     `json:"finish_reason"`
}

type streamDelta struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content,omitempty"`
}

type streamError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
}

// runState is Hermes' own account of how a failed run ended.
type runState struct {
	Completed bool `json:"completed"`
	Partial   bool `json:"partial"`
	Failed    bool `json:"failed"`
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
