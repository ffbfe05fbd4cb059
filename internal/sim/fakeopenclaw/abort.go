package fakeopenclaw

import (
	"context"
	"encoding/json"
	"time"
)

// abort answers chat.abort. The run named (or, with no runId, the session's run) is
// stopped and the answer sent once it has left its session, so a message sent after the
// answer starts a run of its own. With Options.AbortAnswerDelay the gateway is slow to act:
// the run goes on meanwhile, and a message sent to its session is steered into it and
// lost with it. With Options.AbortUnanswered the run is stopped but no answer comes.
func (s *Server) abort(ctx context.Context, c *conn, id string, params json.RawMessage) {
	var p struct{ SessionKey, AgentID, RunID string }
	json.Unmarshal(params, &p)
	s.record(func() { s.aborts = append(s.aborts, Abort{SessionKey: p.SessionKey, RunID: p.RunID}) })
	if s.opts.AbortAnswerDelay <= 0 {
		s.stopAndAnswer(ctx, c, id, p.SessionKey, p.AgentID, p.RunID)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(s.opts.AbortAnswerDelay)
		defer t.Stop()
		select {
		case <-t.C:
			s.stopAndAnswer(ctx, c, id, p.SessionKey, p.AgentID, p.RunID)
		case <-ctx.Done():
		}
	}()
}

// stopAndAnswer stops the run and answers as the gateway does: {ok, aborted, runIds}.
func (s *Server) stopAndAnswer(ctx context.Context, c *conn, id, sessionKey, agentID, runID string) {
	s.mu.Lock()
	lr := s.runs[runID]
	if runID == "" {
		if key, err := s.canonical(sessionKey, agentID); err == "" && s.sessions[key] != nil {
			lr = s.sessions[key].active
		}
	}
	s.mu.Unlock()
	runIDs := []string{}
	if lr != nil {
		lr.cancel()
		select {
		case <-lr.ended:
		case <-ctx.Done():
			return
		}
		runIDs = append(runIDs, lr.id)
	}
	if !s.opts.AbortUnanswered {
		s.reply(c, id, map[string]any{"ok": true, "aborted": lr != nil, "runIds": runIDs}, nil)
	}
}
