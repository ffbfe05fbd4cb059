package fakeopenclaw

import (
	"encoding/json"
	"strings"
	"time"
)

// sendParams are the fields of chat.send and agent the fake reads.
type sendParams struct {
	SessionKey, Message, IdempotencyKey, AgentID, ExtraSystemPrompt, QueueMode string
}

// send answers chat.send or agent. An idle session starts the message's run at once. A
// session with a run going (without queueMode "interrupt") keeps the message until that run
// ends, however it ends, and then runs it: an "agent" request is acknowledged as usual and
// its run has its own id; a chat.send is acknowledged as started and at once given an
// empty final, and its run later goes under an id the gateway makes. queueMode
// "interrupt" aborts the session's run and starts the message's at once. A key already
// running or waiting is "in_flight". An "agent" request for "/reset" is refused: commands
// need operator.admin.
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
	if method == "agent" && strings.TrimSpace(p.Message) == "/reset" {
		s.reply(c, id, nil, needsAdmin())
		return
	}
	words := magicWords(p.Message)
	runID := p.IdempotencyKey
	var (
		drop        string
		dup, waits  bool
		interrupted bool
		lr          *liveRun
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
		if s.runs[runID] != nil || s.queued(key, runID) != nil {
			dup = true
			return
		}
		own := runID
		if ss.active != nil && p.QueueMode != "interrupt" && method == "chat.send" {
			own = gatewayRunID()
		}
		lr = s.newRun(own, key, p.Message, method, c, id)
		lr.dropLate = drop == "DROPLATE"
		switch {
		case ss.active != nil && p.QueueMode != "interrupt":
			rec.QueuedBehind = ss.active.id
			ss.queue = append(ss.queue, lr)
			waits = true
		case ss.active != nil:
			ss.active.cancel()
			interrupted = true
			fallthrough
		default:
			s.startLocked(ss, lr)
		}
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
	}
	if interrupted {
		ack["interruptedActiveRun"] = true
	}
	s.reply(c, id, ack, nil)
	switch {
	case waits && method == "chat.send": // its own id is done with at once
		(&chatEvents{s: s, runID: runID, key: key}).send("final", nil)
	case !waits:
		go s.run(lr)
	}
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

// magicWords returns the whole words of msg's last line: the caller's newest words, where
// lines before them may quote earlier ones (a client's note of what the session missed),
// whose magic words must not act again.
func magicWords(msg string) map[string]bool {
	out := map[string]bool{}
	msg = strings.TrimSpace(msg)
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
		msg = msg[i+1:]
	}
	for _, w := range strings.FieldsFunc(msg, func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z')
	}) {
		out[w] = true
	}
	return out
}
