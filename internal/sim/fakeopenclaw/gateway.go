package fakeopenclaw

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// clientIDs is the closed enum of connect.params.client.id.
var clientIDs = map[string]bool{
	"webchat-ui": true, "openclaw-control-ui": true, "openclaw-browser-copilot": true,
	"openclaw-tui": true, "webchat": true, "cli": true, "gateway-client": true,
	"openclaw-macos": true, "openclaw-linux": true, "openclaw-ios": true, "openclaw-watchos": true,
	"openclaw-android": true, "node-host": true, "openclaw-worker": true, "test": true,
	"fingerprint": true, "openclaw-probe": true,
}

// handshake sends connect.challenge and checks the connect request; false means the
// client was refused and the socket closed.
func (s *Server) handshake(ctx context.Context, c *conn) bool {
	nonce := make([]byte, 16)
	rand.Read(nonce)
	ch, _ := json.Marshal(map[string]any{"type": "event", "event": "connect.challenge",
		"payload": map[string]any{"nonce": hex.EncodeToString(nonce), "ts": time.Now().UnixMilli()}})
	if c.ws.Write(ctx, websocket.MessageText, ch) != nil {
		return false
	}
	hctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_, data, err := c.ws.Read(hctx)
	if err != nil {
		return false
	}
	s.record(func() { s.frames = append(s.frames, string(data)) })
	var req struct {
		Type, ID, Method string
		Params           struct {
			MinProtocol, MaxProtocol int
			Client                   struct{ ID, Mode string }
			Auth                     struct{ Token string }
			Scopes                   []string
		}
	}
	refuse := func(id string, gerr map[string]any) bool {
		b, _ := json.Marshal(map[string]any{"type": "res", "id": id, "ok": false, "error": gerr})
		c.ws.Write(ctx, websocket.MessageText, b)
		c.ws.Close(websocket.StatusPolicyViolation, "connect refused")
		return false
	}
	if json.Unmarshal(data, &req) != nil || req.Type != "req" || req.Method != "connect" {
		return refuse(req.ID, gwError("INVALID_REQUEST", "invalid handshake: first request must be connect", ""))
	}
	if s.opts.Starting != nil && s.opts.Starting() {
		s.record(func() { s.refusals++ })
		if !s.opts.StartingCloseOnly {
			b, _ := json.Marshal(map[string]any{"type": "res", "id": req.ID, "ok": false, "error": map[string]any{
				"code": "UNAVAILABLE", "message": "gateway starting; retry shortly", "retryable": true,
				"retryAfterMs": s.opts.StartingRetryAfter.Milliseconds(), "details": map[string]any{"reason": "startup-sidecars"}}})
			c.ws.Write(ctx, websocket.MessageText, b)
		}
		c.ws.Close(websocket.StatusTryAgainLater, "gateway starting")
		return false
	}
	p := req.Params
	switch {
	case p.MinProtocol > 4 || p.MaxProtocol < 4:
		b, _ := json.Marshal(map[string]any{"type": "res", "id": req.ID, "ok": false,
			"error": gwError("INVALID_REQUEST", "protocol mismatch", "PROTOCOL_MISMATCH")})
		c.ws.Write(ctx, websocket.MessageText, b)
		c.ws.Close(websocket.StatusProtocolError, "protocol mismatch")
		return false
	case !clientIDs[p.Client.ID]:
		return refuse(req.ID, gwError("INVALID_REQUEST", "invalid connect params: at /client/id: must be equal to one of the allowed values", ""))
	case p.Auth.Token == "" && s.opts.Token != "":
		// No shared token: the real gateway falls back to device pairing, which a backend
		// client without a device identity cannot do.
		return refuse(req.ID, gwError("NOT_PAIRED", "device identity required", "DEVICE_IDENTITY_REQUIRED"))
	case p.Auth.Token != s.opts.Token:
		return refuse(req.ID, gwError("INVALID_REQUEST", "unauthorized: gateway token mismatch (provide gateway auth token)", "AUTH_TOKEN_MISMATCH"))
	}
	hello := map[string]any{
		"type": "hello-ok", "protocol": 4,
		"server":   map[string]any{"version": "fake", "connId": hex.EncodeToString(nonce[:8])},
		"features": map[string]any{"methods": []string{"chat.send", "chat.abort", "agent", "agents.list"}, "events": []string{"connect.challenge", "chat", "agent", "tick", "shutdown"}},
		"snapshot": map[string]any{"sessionDefaults": map[string]any{"defaultAgentId": s.opts.Agents[0].ID,
			"selectionRequired": len(s.opts.Agents) > 1, "mainKey": "main"}},
		"auth":   map[string]any{"method": "token", "role": "operator", "scopes": p.Scopes},
		"policy": map[string]any{"maxPayload": 26214400, "tickIntervalMs": s.opts.TickEvery.Milliseconds()},
	}
	b, _ := json.Marshal(map[string]any{"type": "res", "id": req.ID, "ok": true, "payload": hello})
	// Registered before hello-ok is written: a client that has hello-ok gets every event
	// from then on. Events queue in c.out until the writer starts, after hello-ok.
	s.record(func() { s.conns[c] = true; s.connections++ })
	return c.ws.Write(ctx, websocket.MessageText, b) == nil
}

// handle answers one request after the handshake.
func (s *Server) handle(ctx context.Context, c *conn, id, method string, params json.RawMessage) {
	switch method {
	case "agents.list":
		list := make([]map[string]any, len(s.opts.Agents))
		for i, a := range s.opts.Agents {
			list[i] = map[string]any{"id": a.ID, "name": a.Name}
		}
		s.reply(c, id, map[string]any{"defaultId": s.opts.Agents[0].ID, "selectionRequired": len(list) > 1, "agents": list}, nil)
	case "chat.send", "agent":
		s.send(c, id, method, params)
	case "chat.abort":
		var p struct{ SessionKey, RunID string }
		json.Unmarshal(params, &p)
		s.record(func() { s.aborts = append(s.aborts, Abort{SessionKey: p.SessionKey, RunID: p.RunID}) })
		s.mu.Lock()
		stop := s.runs[p.RunID]
		s.mu.Unlock()
		runIDs := []string{}
		if stop != nil {
			stop()
			runIDs = append(runIDs, p.RunID)
		}
		s.reply(c, id, map[string]any{"ok": true, "aborted": stop != nil, "runIds": runIDs}, nil)
	default:
		s.reply(c, id, nil, map[string]any{"code": "FORBIDDEN", "message": "missing scope: operator.admin",
			"details": map[string]any{"code": "MISSING_SCOPE", "missingScope": "operator.admin"}})
	}
}

// send starts a run for chat.send or agent.
func (s *Server) send(c *conn, id, method string, params json.RawMessage) {
	var p struct {
		SessionKey, Message, IdempotencyKey, AgentID, ExtraSystemPrompt string
	}
	if json.Unmarshal(params, &p) != nil || p.IdempotencyKey == "" {
		s.reply(c, id, nil, gwError("INVALID_REQUEST", "invalid "+method+" params: must have required property 'idempotencyKey'", ""))
		return
	}
	key, err := s.canonical(p.SessionKey, p.AgentID)
	if err != "" {
		s.reply(c, id, nil, gwError("INVALID_REQUEST", err, ""))
		return
	}
	words := magicWords(p.Message)
	runID := p.IdempotencyKey
	drop := ""
	s.record(func() {
		s.sends = append(s.sends, Send{Method: method, SessionKey: p.SessionKey, AgentID: p.AgentID,
			Message: p.Message, IdempotencyKey: p.IdempotencyKey, ExtraSystemPrompt: p.ExtraSystemPrompt})
		for _, w := range []string{"DROP", "DROPLATE", "DROPSEND"} {
			if words[w] && !s.dropped[runID] {
				s.dropped[runID] = true
				drop = w
			}
		}
	})
	switch drop {
	case "DROPSEND": // the request is lost with the connection, unanswered
		c.cancel()
		return
	case "DROP": // accepted, then the connection and the run are lost before any reply
		s.reply(c, id, map[string]any{"runId": runID, "status": "started"}, nil)
		s.dropAfterQueued(c)
		return
	}
	s.mu.Lock()
	_, busy := s.runs[runID]
	var rctx context.Context
	if !busy {
		var cancel context.CancelFunc
		rctx, cancel = context.WithCancel(s.ctx)
		s.runs[runID] = cancel
	}
	s.mu.Unlock()
	if busy {
		s.reply(c, id, map[string]any{"runId": runID, "status": "in_flight"}, nil)
		return
	}
	status := "started"
	if method == "agent" {
		status = "accepted"
	}
	s.reply(c, id, map[string]any{"runId": runID, "sessionKey": key, "status": status}, nil)
	s.wg.Add(1)
	go s.run(rctx, c, runID, key, p.Message, words, drop == "DROPLATE")
}

// canonical qualifies a session key as the gateway does.
func (s *Server) canonical(key, agentID string) (string, string) {
	if key == "" {
		return "", "invalid chat.send params: must have required property 'sessionKey'"
	}
	if strings.HasPrefix(key, "agent:") {
		owner, _, _ := strings.Cut(strings.TrimPrefix(key, "agent:"), ":")
		if agentID != "" && owner != agentID {
			return "", "The agent-scoped session key belongs to \"" + owner + "\", not \"" + agentID + "\"."
		}
		return key, ""
	}
	if agentID == "" {
		if len(s.opts.Agents) > 1 {
			return "", "Multiple agents are configured, but session key \"" + key + "\" has no explicit owner. Use an agent-prefixed session key or select an agent explicitly."
		}
		agentID = s.opts.Agents[0].ID
	}
	return "agent:" + agentID + ":" + key, ""
}

// magicWords returns the upper-case whole words of msg.
func magicWords(msg string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(msg, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z')
	}) {
		out[w] = true
	}
	return out
}

// ReplyText is the fake agent's reply to msg.
func ReplyText(msg string) string {
	return "FAKE-REPLY: you said " + msg + ". That is all from the fake gateway."
}

// run streams one run's chat events to every client.
func (s *Server) run(ctx context.Context, origin *conn, runID, key, msg string, words map[string]bool, dropLate bool) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.runs, runID)
		s.mu.Unlock()
	}()
	seq := 0
	ev := func(state string, fields map[string]any) {
		seq++
		p := map[string]any{"runId": runID, "sessionKey": key, "seq": seq, "state": state}
		for k, v := range fields {
			p[k] = v
		}
		s.broadcast("chat", p)
	}
	msgOf := func(text string) map[string]any {
		return map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": text}}}
	}
	sent := ""
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			if s.ctx.Err() == nil { // chat.abort, not shutdown
				ev("aborted", map[string]any{"stopReason": "rpc", "message": msgOf(sent)})
			}
			return false
		}
	}
	ev("status", map[string]any{"phase": "preparing_context"})
	if words["TOOLCALL"] {
		item := map[string]any{"itemId": "tool:1", "toolCallId": "1", "name": "web_search", "kind": "tool",
			"phase": "start", "title": "Search the web", "status": "running"}
		s.broadcast("agent", map[string]any{"runId": runID, "sessionKey": key, "stream": "item", "data": item})
		if !wait(s.opts.ToolCallFor) {
			return
		}
		item["phase"], item["status"] = "end", "completed"
		s.broadcast("agent", map[string]any{"runId": runID, "sessionKey": key, "stream": "item", "data": item})
	}
	for n := 1; words["TOOLLOOP"]; n++ {
		for _, phase := range []string{"start", "end"} {
			item := map[string]any{"itemId": fmt.Sprintf("tool:%d", n), "toolCallId": strconv.Itoa(n), "name": "web_search",
				"kind": "tool", "phase": phase, "title": "Search the web", "status": map[string]string{"start": "running", "end": "completed"}[phase]}
			s.broadcast("agent", map[string]any{"runId": runID, "sessionKey": key, "stream": "item", "data": item})
		}
		if !wait(s.opts.ToolEvery) {
			return
		}
	}
	switch {
	case words["DOUBLEERROR"]:
		ev("error", map[string]any{"errorMessage": "LLM request failed: provider rejected the request schema or tool payload.",
			"errorDetail": map[string]any{"provider": "fake", "httpStatus": 400}})
		seq = 0
		ev("error", map[string]any{"errorMessage": "⚠️ Agent failed before reply."})
		return
	case words["FAIL400"]:
		ev("error", map[string]any{"errorMessage": "LLM request failed: 400", "errorDetail": map[string]any{"provider": "fake", "httpStatus": 400}})
		return
	case words["FAIL500"]:
		ev("error", map[string]any{"errorMessage": "LLM request failed: 500", "errorDetail": map[string]any{"provider": "fake", "httpStatus": 500}})
		return
	}
	for i, piece := range strings.SplitAfter(ReplyText(msg), " ") {
		if words["SLOW"] && !wait(s.opts.SlowEvery) {
			return
		}
		if ctx.Err() != nil {
			if s.ctx.Err() == nil {
				ev("aborted", map[string]any{"stopReason": "rpc", "message": msgOf(sent)})
			}
			return
		}
		sent += piece
		ev("delta", map[string]any{"deltaText": piece, "message": msgOf(sent)})
		if i == 0 && dropLate {
			s.dropAfterQueued(origin)
			return
		}
	}
	// As the real gateway reports a run's usage: an agent event with the output tokens so
	// far (a token a word here), before the final; input tokens are never sent.
	s.broadcast("agent", map[string]any{"runId": runID, "sessionKey": key, "stream": "usage",
		"data": map[string]any{"outputTokens": len(strings.Fields(sent))}})
	seq-- // the final repeats the last delta's seq
	ev("final", map[string]any{"stopReason": "stop", "message": msgOf(sent)})
}
