package fakeopenclaw

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
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
func (s *Server) handle(c *conn, id, method string, params json.RawMessage) {
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
		s.abort(c, id, params)
	default:
		s.reply(c, id, nil, needsAdmin())
	}
}

// needsAdmin is the refusal of a method (or command) that needs operator.admin.
func needsAdmin() map[string]any {
	return map[string]any{"code": "FORBIDDEN", "message": "missing scope: operator.admin",
		"details": map[string]any{"code": "MISSING_SCOPE", "missingScope": "operator.admin", "requiredScopes": []string{"operator.admin"}}}
}
