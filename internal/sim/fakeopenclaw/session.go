package fakeopenclaw

import (
	"context"
	"slices"
)

// Entry is one message a session's transcript kept: a user message whose run got as far as
// the model, or the assistant's reply to it.
type Entry struct {
	Role  string // "user" or "assistant"
	Text  string
	RunID string // the run that carried it
}

// session is the gateway's state for one canonical session key.
type session struct {
	active     *liveRun // the run in progress; nil when the session is idle
	transcript []Entry
}

// liveRun is a run in progress and the messages steered into it.
type liveRun struct {
	id, key string
	ctx     context.Context // ends when the run is aborted (or the gateway stops)
	cancel  context.CancelFunc
	steered []steer       // messages sent to the session while the run was going
	ended   chan struct{} // closed once the run has ended and left its session
}

// steer is a message steered into a running run: it gets no run of its own.
type steer struct{ runID, message string }

// Transcript returns what the session (its canonical key, "agent:<agent>:<key>") kept:
// the messages whose runs reached the model and the replies to them.
func (s *Server) Transcript(key string) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[key]; ss != nil {
		return slices.Clone(ss.transcript)
	}
	return nil
}

// sessionOf returns the session for key, creating it; the caller holds s.mu.
func (s *Server) sessionOf(key string) *session {
	ss := s.sessions[key]
	if ss == nil {
		ss = &session{}
		s.sessions[key] = ss
	}
	return ss
}

// keep appends e to the transcript of key and wakes WaitFor.
func (s *Server) keep(key string, e Entry) {
	s.record(func() {
		ss := s.sessionOf(key)
		ss.transcript = append(ss.transcript, e)
	})
}

// hasSteered reports whether runID was steered into lr (nil: no run).
func (lr *liveRun) hasSteered(runID string) bool {
	if lr == nil {
		return false
	}
	return slices.ContainsFunc(lr.steered, func(st steer) bool { return st.runID == runID })
}

// nextSteered takes the next message steered into lr; with none left, lr leaves its
// session in the same step, so a message sent from then on starts a run of its own.
func (s *Server) nextSteered(lr *liveRun) (steer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(lr.steered) == 0 {
		s.leaveLocked(lr)
		return steer{}, false
	}
	next := lr.steered[0]
	lr.steered = lr.steered[1:]
	return next, true
}

// leave ends lr: it leaves its session, and the messages still steered into it are lost.
func (s *Server) leave(lr *liveRun) {
	s.record(func() { s.leaveLocked(lr) })
	lr.cancel()
	close(lr.ended)
}

func (s *Server) leaveLocked(lr *liveRun) {
	if ss := s.sessions[lr.key]; ss != nil && ss.active == lr {
		ss.active = nil
	}
	if s.runs[lr.id] == lr {
		delete(s.runs, lr.id)
	}
	lr.steered = nil
}
