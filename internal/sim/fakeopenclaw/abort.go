package fakeopenclaw

import (
	"encoding/json"
	"slices"
)

// abort answers chat.abort. The run named (or, with no runId, the session's run) is
// stopped and the answer sent once it has left its session, so a message sent after the
// answer finds the session idle. With Options.AbortAnswerDelay the gateway is slow to act:
// the run goes on meanwhile, and a message sent to its session waits for it. With
// Options.AbortUnanswered the run is stopped but no answer comes.
func (s *Server) abort(c *conn, id string, params json.RawMessage) {
	var p struct{ SessionKey, AgentID, RunID string }
	json.Unmarshal(params, &p)
	s.record(func() { s.aborts = append(s.aborts, Abort{SessionKey: p.SessionKey, RunID: p.RunID}) })
	if s.opts.AbortAnswerDelay <= 0 {
		s.stopAndAnswer(c, id, p.SessionKey, p.AgentID, p.RunID)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// Only the gateway stopping ends the wait: a client going away does not stop the abort.
		if sleep(s.ctx, s.opts.AbortAnswerDelay) {
			s.stopAndAnswer(c, id, p.SessionKey, p.AgentID, p.RunID)
		}
	}()
}

// stopAndAnswer stops the run and answers as the gateway does, {ok, aborted, runIds},
// once the run has left its session. A run still waiting for its session is dropped from
// the queue with an aborted event and, for an "agent" request, its outcome; it never
// reaches the model.
func (s *Server) stopAndAnswer(c *conn, id, sessionKey, agentID, runID string) {
	answer := func(runIDs ...string) {
		if !s.opts.AbortUnanswered {
			s.reply(c, id, map[string]any{"ok": true, "aborted": len(runIDs) > 0, "runIds": append([]string{}, runIDs...)}, nil)
		}
	}
	key, _ := s.canonical(sessionKey, agentID)
	var lr, waiting *liveRun
	s.record(func() {
		lr = s.runs[runID]
		if ss := s.sessions[key]; ss != nil {
			if runID == "" {
				lr = ss.active
			} else if waiting = s.queued(key, runID); waiting != nil {
				ss.queue = slices.DeleteFunc(ss.queue, func(q *liveRun) bool { return q == waiting })
			}
		}
		if lr != nil {
			stopped := lr.id
			lr.onEnd = append(lr.onEnd, func() { answer(stopped) })
		}
	})
	switch {
	case waiting != nil:
		waiting.cancel()
		(&chatEvents{s: s, runID: waiting.id, key: waiting.key}).send("aborted", map[string]any{"stopReason": "rpc"})
		answer(waiting.id)
		s.answerOutcome(waiting, "", false)
	case lr != nil:
		lr.cancel()
	default:
		answer()
	}
}
