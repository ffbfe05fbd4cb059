package fakehermes

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// keepalive writes SSE frames and a ": keepalive" comment after each silent period.
type keepalive struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	every time.Duration
	t     *time.Timer
	due   time.Time // when t fires
	err   error
	frame []byte // the frame being written, kept for the next
}

func newKeepalive(w http.ResponseWriter, every time.Duration) *keepalive {
	return &keepalive{w: w, rc: http.NewResponseController(w), every: every, t: time.NewTimer(every), due: time.Now().Add(every)}
}

func (k *keepalive) tick() <-chan time.Time { return k.t.C }

func (k *keepalive) stop() { k.t.Stop() }

// write sends raw bytes, flushes and restarts the silence timer.
func (k *keepalive) write(s string) bool {
	k.frame = append(k.frame[:0], s...)
	return k.writeFrame()
}

func (k *keepalive) writeFrame() bool {
	if k.err != nil {
		return false
	}
	if _, k.err = k.w.Write(k.frame); k.err == nil {
		k.err = k.rc.Flush()
	}
	k.t.Reset(k.every)
	k.due = time.Now().Add(k.every)
	return k.err == nil
}

func (k *keepalive) send() bool { return k.write(": keepalive\n\n") }

// data sends one "data:" frame (optionally named) carrying v as JSON.
func (k *keepalive) data(event string, v any) bool {
	b, _ := json.Marshal(v)
	k.frame = k.frame[:0]
	if event != "" {
		k.frame = append(append(append(k.frame, "event: "...), event...), '\n')
	}
	k.frame = append(append(append(k.frame, "data: "...), b...), "\n\n"...)
	return k.writeFrame()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func errorBody(message, typ, code string) map[string]any {
	return map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}}
}

func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.opts.Key {
			if s.opts.LegacyAuthError {
				writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
					"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}})
				return
			}
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{
				"message": "Invalid gateway API key (API_SERVER_KEY)", "type": "gateway_auth_error", "code": "gateway_auth_failed"}})
			return
		}
		h(w, r)
	}
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "platform": "hermes-agent", "version": "0.18.2"})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	s.record(r, nil, nil, "")
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{map[string]any{
		"id": DefaultModel, "object": "model", "created": time.Now().Unix(), "owned_by": "hermes",
		"permission": []any{}, "root": DefaultModel, "parent": nil}}})
}

func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	s.record(r, nil, nil, "")
	runs := !s.opts.NoRuns
	endpoints := map[string]any{
		"chat_completions": map[string]string{"method": "POST", "path": "/v1/chat/completions"},
	}
	if runs {
		endpoints["runs"] = map[string]string{"method": "POST", "path": "/v1/runs"}
		endpoints["run_events"] = map[string]string{"method": "GET", "path": "/v1/runs/{run_id}/events"}
		endpoints["run_stop"] = map[string]string{"method": "POST", "path": "/v1/runs/{run_id}/stop"}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "hermes.api_server.capabilities", "platform": "hermes-agent", "model": DefaultModel,
		"auth":    map[string]any{"type": "bearer", "required": true},
		"runtime": map[string]any{"mode": "server_agent", "tool_execution": "server", "split_runtime": false},
		"features": map[string]any{
			"chat_completions": true, "chat_completions_streaming": true, "responses_api": true,
			"run_submission": runs, "run_status": runs, "run_events_sse": runs, "run_stop": runs,
			"run_approval_response": runs, "tool_progress_events": true, "approval_events": runs,
			"audio_api": false, "realtime_voice": false,
			"session_continuity_header": "X-Hermes-Session-Id", "session_key_header": "X-Hermes-Session-Key",
		},
		"endpoints": endpoints,
	})
}

// wireMessage is a message as clients send it; content may be a string or text parts.
type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func (m wireMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(m.Content, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// failure answers FAIL400/FAIL500 and reports whether it did.
func failure(w http.ResponseWriter, words map[string]bool) bool {
	switch {
	case words[MagicFail400]:
		writeJSON(w, http.StatusBadRequest, errorBody("Invalid request (FAIL400 requested)", "invalid_request_error", "invalid_request"))
	case words[MagicFail500]:
		writeJSON(w, http.StatusInternalServerError, errorBody("Internal server error: FAIL500 requested", "server_error", "internal_error"))
	default:
		return false
	}
	return true
}

func newID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// outcome is the reply text and usage for a turn, after WARNING/ZEROUSAGE/FAILRUN. The
// fake counts a token a word: the words of the messages in, of the reply out.
func (s *Server) outcome(msgs []Message, words map[string]bool) (string, map[string]int) {
	zero := map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
	switch {
	case words[MagicWarning]:
		return WarningText, zero
	case words[MagicZeroUsage], words[MagicFailRun]:
		return "", zero
	}
	text := s.replyText(msgs)
	in, out := 0, len(strings.Fields(text))
	for _, m := range msgs {
		in += len(strings.Fields(m.Content))
	}
	return text, map[string]int{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}
}

// ---- runs ----

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 10_000_000))
	var req struct {
		Input        json.RawMessage `json:"input"`
		Instructions string          `json:"instructions"`
		History      []wireMessage   `json:"conversation_history"`
		SessionID    string          `json:"session_id"`
		Model        string          `json:"model"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Input) == 0 {
		s.record(r, body, nil, "")
		writeJSON(w, http.StatusBadRequest, errorBody("Missing 'input'", "invalid_request_error", "missing_input"))
		return
	}
	var msgs []Message
	if req.Instructions != "" {
		msgs = append(msgs, Message{Role: "system", Content: req.Instructions})
	}
	for _, m := range req.History {
		msgs = append(msgs, Message{Role: m.Role, Content: m.text()})
	}
	var input string
	if json.Unmarshal(req.Input, &input) == nil {
		msgs = append(msgs, Message{Role: "user", Content: input})
	} else {
		var items []wireMessage
		_ = json.Unmarshal(req.Input, &items)
		for _, m := range items {
			if m.Role == "" {
				m.Role = "user"
			}
			msgs = append(msgs, Message{Role: m.Role, Content: m.text()})
		}
	}
	words := magic(s.said(msgs))
	if failure(w, words) {
		s.record(r, body, msgs, "")
		return
	}
	id := newID("run_", 16)
	s.mu.Lock()
	s.runs[id] = &run{id: id, messages: msgs, status: "queued", stop: make(chan struct{}), done: make(chan struct{})}
	s.order = append(s.order, id)
	s.mu.Unlock()
	s.record(r, body, msgs, id)
	writeJSON(w, http.StatusAccepted, map[string]any{"run_id": id, "status": "started"})
}

func (s *Server) runStatus(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.record(r, nil, nil, id)
	s.mu.Lock()
	ru := s.runs[id]
	var status string
	if ru != nil {
		status = ru.status
	}
	s.mu.Unlock()
	if ru == nil {
		writeJSON(w, http.StatusNotFound, errorBody("Run not found: "+id, "invalid_request_error", "run_not_found"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "hermes.run", "run_id": id, "status": status, "model": DefaultModel})
}

func (s *Server) stopRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.record(r, nil, nil, id)
	s.mu.Lock()
	s.stops++
	ru := s.runs[id]
	live := ru != nil && (ru.status == "queued" || ru.status == "running")
	if live {
		ru.stopped = true
		ru.status = "stopping"
		if !ru.streaming {
			ru.status = "cancelled" // no event stream is running it: it ends at once
		}
		close(ru.stop)
	}
	s.mu.Unlock()
	if !live {
		writeJSON(w, http.StatusNotFound, errorBody("Run not found: "+id, "invalid_request_error", "run_not_found"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"run_id": id, "status": "stopping"})
}

// setStatus moves a run to status unless it is already terminal; it reports whether it did.
func (s *Server) setStatus(ru *run, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ru.status {
	case "completed", "failed", "cancelled":
		return
	}
	ru.status = status
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.record(r, nil, nil, id)
	s.mu.Lock()
	ru := s.runs[id]
	first := ru != nil && !ru.consumed
	if first {
		ru.consumed = true
		ru.streaming = true
		if ru.status == "queued" {
			ru.status = "running"
		}
	}
	s.mu.Unlock()
	if !first {
		writeJSON(w, http.StatusNotFound, errorBody("Run not found: "+id, "invalid_request_error", "run_not_found"))
		return
	}
	defer close(ru.done)
	ctx := r.Context()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_ = http.NewResponseController(w).Flush()
	ka := newKeepalive(w, s.opts.Keepalive)
	defer ka.stop()

	ended := false
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		ru.streaming = false
		if !ended {
			ru.abandoned = true
		}
		if ru.status == "stopping" {
			ru.status = "cancelled"
		}
	}()
	ev := func(name string, fields map[string]any) bool {
		m := map[string]any{"event": name, "run_id": id, "timestamp": float64(time.Now().UnixMilli()) / 1000}
		for k, v := range fields {
			m[k] = v
		}
		return ka.data("", m)
	}
	// interrupted finishes the stream after the client left, a stop or a server close.
	interrupted := func() {
		select {
		case <-ru.stop:
			s.setStatus(ru, "cancelled")
			if ev("run.cancelled", nil) {
				ended = true
				ka.write(": stream closed\n\n")
			}
		default:
		}
	}
	select {
	case <-ru.stop:
		interrupted()
		return
	default:
	}
	words := magic(s.said(ru.messages))
	if words[MagicHang] && !words[MagicToolCall] {
		select {
		case <-ctx.Done():
		case <-s.quit:
		case <-ru.stop:
		}
		interrupted()
		return
	}
	text, usage := s.outcome(ru.messages, words)
	if words[MagicToolCall] {
		if !ev("tool.started", map[string]any{"tool": "terminal", "preview": "sleep 60"}) {
			return
		}
		if !s.wait(ctx, s.toolDuration(words), ru.stop, ka) {
			if ctx.Err() == nil {
				ev("tool.completed", map[string]any{"tool": "terminal", "duration": 0.1, "error": true})
			}
			interrupted()
			return
		}
		if !ev("tool.completed", map[string]any{"tool": "terminal", "duration": s.opts.ToolDuration.Seconds(), "error": false}) {
			return
		}
		if text != "" {
			text = "\n\n" + text
		}
	}
	for _, p := range pieces(text) {
		if words[MagicSlow] && !s.wait(ctx, s.opts.SlowEvery, ru.stop, ka) {
			interrupted()
			return
		}
		select {
		case <-ru.stop:
			interrupted()
			return
		default:
		}
		if !ev("message.delta", map[string]any{"delta": p}) {
			return
		}
	}
	if words[MagicCutoff] {
		ended = true // the server cut it: the client did not leave
		return
	}
	if words[MagicFailRun] {
		s.setStatus(ru, "failed")
		ended = ev("run.failed", map[string]any{"error": "Agent run failed (FAILRUN requested)"})
	} else {
		s.setStatus(ru, "completed")
		ev("reasoning.available", map[string]any{"text": strings.TrimSpace(text)})
		ended = ev("run.completed", map[string]any{"output": strings.TrimSpace(text), "usage": map[string]int{
			"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"], "total_tokens": usage["total_tokens"]}})
	}
	if ended {
		ka.write(": stream closed\n\n")
	}
}
