package fakeopenclaw

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
)

// FoldedPrefix starts the prompt of a run that follows a run aborted after its prompt
// reached the model: the aborted run's words come next, then the run's own, as the real
// gateway writes them.
const FoldedPrefix = "[Queued user message from a previous active turn; preserved as context only. Continue with the active prompt below.]"

// Entry is one message a session's transcript kept: the message of a run that finished,
// or its reply. Aborted runs leave none.
type Entry struct {
	Role  string // "user" or "assistant"
	Text  string
	RunID string
}

// Prompt is one run's prompt as it reached the model.
type Prompt struct {
	RunID, SessionKey string // the canonical key
	Folded            []string
	Message           string
}

// Text is the prompt as the model reads it: the folded words, if any, under FoldedPrefix,
// then the run's message.
func (p Prompt) Text() string {
	if len(p.Folded) == 0 {
		return p.Message
	}
	return FoldedPrefix + "\n" + strings.Join(append(slices.Clone(p.Folded), p.Message), "\n\n")
}

// session is the gateway's state for one canonical session key: one run at a time, the
// messages waiting for it to end, and what it keeps.
type session struct {
	active     *liveRun
	queue      []*liveRun // accepted while a run was going; each runs in turn
	folded     []string   // words of runs aborted after their prompt started
	transcript []Entry
}

// liveRun is a run, running or waiting in its session's queue. Its prompt reaches the
// model as it starts (the fake has no preparation phase), so only a waiting run can be
// aborted before that.
type liveRun struct {
	id, key, message string
	method           string
	origin           *conn  // the connection that asked for it
	reqID            string // its request, which an "agent" run answers again at its end
	ctx              context.Context
	cancel           context.CancelFunc
	dropLate         bool          // DROPLATE: the connection goes after the first delta
	onEnd            []func()      // chat.abort answers waiting for it to end; under Server.mu
	ended            chan struct{} // closed once it has left its session
}

// Transcript returns what the session (its canonical key, "agent:<agent>:<key>") keeps:
// the messages and replies of runs that finished.
func (s *Server) Transcript(key string) []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[key]; ss != nil {
		return slices.Clone(ss.transcript)
	}
	return nil
}

// Prompts returns every run's prompt as it reached the model, in order.
func (s *Server) Prompts() []Prompt { s.mu.Lock(); defer s.mu.Unlock(); return slices.Clone(s.prompts) }

// sessionOf returns the session for key, creating it; the caller holds s.mu.
func (s *Server) sessionOf(key string) *session {
	ss := s.sessions[key]
	if ss == nil {
		ss = &session{}
		s.sessions[key] = ss
	}
	return ss
}

// newRun makes a run of msg on key; the caller holds s.mu.
func (s *Server) newRun(id, key, msg, method string, origin *conn, reqID string) *liveRun {
	ctx, cancel := context.WithCancel(s.ctx)
	return &liveRun{id: id, key: key, message: msg, method: method, origin: origin, reqID: reqID,
		ctx: ctx, cancel: cancel, ended: make(chan struct{})}
}

// startLocked makes lr its session's run, its prompt reaching the model at once with the
// words it takes over from aborted runs; the caller holds s.mu, then calls go s.run(lr).
func (s *Server) startLocked(ss *session, lr *liveRun) {
	ss.active = lr
	s.runs[lr.id] = lr
	s.prompts = append(s.prompts, Prompt{RunID: lr.id, SessionKey: lr.key, Folded: ss.folded, Message: lr.message})
	ss.folded = nil
	s.wg.Add(1)
}

// queued finds a run waiting in key's queue by id; the caller holds s.mu.
func (s *Server) queued(key, id string) *liveRun {
	if ss := s.sessions[key]; ss != nil {
		if i := slices.IndexFunc(ss.queue, func(q *liveRun) bool { return q.id == id }); i >= 0 {
			return ss.queue[i]
		}
	}
	return nil
}

// leave ends lr: a run that finished is kept in the transcript with its reply, the words of
// an aborted one are folded into the next prompt; the aborts waiting for it are answered,
// then its request's outcome; then the next message waiting starts its run.
func (s *Server) leave(lr *liveRun, reply string, finished bool) {
	var (
		next  *liveRun
		ended []func()
	)
	s.record(func() {
		ended, lr.onEnd = lr.onEnd, nil
		ss := s.sessionOf(lr.key)
		if s.runs[lr.id] == lr {
			delete(s.runs, lr.id)
		}
		switch {
		case finished:
			ss.transcript = append(ss.transcript, Entry{Role: "user", Text: lr.message, RunID: lr.id},
				Entry{Role: "assistant", Text: reply, RunID: lr.id})
		case lr.ctx.Err() != nil && s.ctx.Err() == nil:
			ss.folded = append(ss.folded, lr.message)
		}
		if ss.active == lr {
			ss.active = nil
			if len(ss.queue) > 0 && s.ctx.Err() == nil {
				next, ss.queue = ss.queue[0], ss.queue[1:]
				s.startLocked(ss, next)
			}
		}
	})
	for _, f := range ended {
		f()
	}
	s.answerOutcome(lr, reply, finished)
	lr.cancel()
	close(lr.ended)
	if next != nil {
		go s.run(next)
	}
}

// gatewayRunID is a run id the gateway makes itself, as for a chat.send message that had
// to wait for the session's run.
func gatewayRunID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
