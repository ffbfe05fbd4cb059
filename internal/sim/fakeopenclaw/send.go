package fakeopenclaw

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// sendParams are the fields of chat.send and agent the fake reads.
type sendParams struct {
	SessionKey, Message, IdempotencyKey, AgentID, ExtraSystemPrompt, QueueMode string
}

// send answers chat.send or agent: a new run on an idle session, the same run for a key
// already running (in_flight), and on a session with a run going, the message steered into
// that run, unless queueMode "interrupt" asks for that run to be aborted first.
func (s *Server) send(c *conn, id, method string, params json.RawMessage) {
	var p sendParams
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
	var (
		drop        string
		dup         bool
		into, fresh *liveRun
		interrupted bool
	)
	s.record(func() {
		rec := Send{Method: method, SessionKey: p.SessionKey, AgentID: p.AgentID, Message: p.Message,
			IdempotencyKey: p.IdempotencyKey, ExtraSystemPrompt: p.ExtraSystemPrompt, QueueMode: p.QueueMode}
		defer func() { s.sends = append(s.sends, rec) }()
		for _, w := range []string{"DROP", "DROPLATE", "DROPSEND"} {
			if words[w] && !s.dropped[runID] {
				s.dropped[runID] = true
				drop = w
			}
		}
		if drop == "DROP" || drop == "DROPSEND" {
			return
		}
		ss := s.sessionOf(key)
		if s.runs[runID] != nil || ss.active.hasSteered(runID) {
			dup = true
			return
		}
		if ss.active != nil && p.QueueMode != "interrupt" {
			into = ss.active
			into.steered = append(into.steered, steer{runID: runID, message: p.Message})
			rec.SteeredInto = into.id
			return
		}
		if ss.active != nil {
			ss.active.cancel()
			interrupted = true
		}
		rctx, cancel := context.WithCancel(s.ctx)
		fresh = &liveRun{id: runID, key: key, ctx: rctx, cancel: cancel, ended: make(chan struct{})}
		ss.active = fresh
		s.runs[runID] = fresh
	})
	ack := map[string]any{"runId": runID, "status": "started"}
	if method == "agent" {
		ack = map[string]any{"runId": runID, "sessionKey": key, "agentId": agentOf(key),
			"status": "accepted", "acceptedAt": time.Now().UnixMilli()}
	}
	switch {
	case drop == "DROPSEND": // the request is lost with the connection, unanswered
		c.cancel()
		return
	case drop == "DROP": // accepted, then the connection and the run are lost before any reply
		s.reply(c, id, ack, nil)
		s.dropAfterQueued(c)
		return
	case dup:
		s.reply(c, id, map[string]any{"runId": runID, "status": "in_flight"}, nil)
		return
	case into != nil: // acknowledged as if it had a run of its own
		s.reply(c, id, ack, nil)
		return
	}
	if interrupted {
		ack["interruptedActiveRun"] = true
	}
	s.reply(c, id, ack, nil)
	s.wg.Add(1)
	go s.run(fresh, p.Message, drop == "DROPLATE", c)
}

// agentOf is the agent a canonical key "agent:<agent>:…" belongs to.
func agentOf(key string) string {
	agent, _, _ := strings.Cut(strings.TrimPrefix(key, "agent:"), ":")
	return agent
}

// canonical qualifies a session key as the gateway does.
func (s *Server) canonical(key, agentID string) (string, string) {
	if key == "" {
		return "", "invalid chat.send params: must have required property 'sessionKey'"
	}
	if strings.HasPrefix(key, "agent:") {
		owner := agentOf(key)
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
