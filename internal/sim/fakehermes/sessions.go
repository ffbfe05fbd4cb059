package fakehermes

import "slices"

// Sessions, as Hermes keeps them for chat completions that carry X-Hermes-Session-Id: the
// session's transcript lives on the server (Hermes' state.db). A turn's model is given the
// request's system messages, the stored transcript and the request's last message; the
// earlier messages of the body are ignored. The turn stores that last message as it
// starts, and the reply once the run completes; a client that goes away before then
// leaves "Operation interrupted." as the reply, as Hermes does after interrupting its
// agent. A failed run stores no reply. Runs build their context from the request body
// (Hermes 0.18 does not load a session's transcript for them), so they neither read nor
// keep one here.

// Interrupted is the reply Hermes stores for a turn whose client went away.
const Interrupted = "Operation interrupted."

// Transcript returns a copy of the messages stored for a chat session, oldest first.
func (s *Server) Transcript(sessionID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sessions[sessionID])
}

// prompt is what the model of a turn on session id is given: the request's system
// messages, the stored transcript, then the request's last other message.
func (s *Server) prompt(id string, msgs []Message) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var system []Message
	for _, m := range msgs {
		if m.Role == "system" {
			system = append(system, m)
		}
	}
	out := append(system, s.sessions[id]...)
	if last, ok := lastTurnMessage(msgs); ok {
		out = append(out, last)
	}
	return out
}

// store appends m to session id's transcript.
func (s *Server) store(id string, m Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions == nil {
		s.sessions = map[string][]Message{}
	}
	s.sessions[id] = append(s.sessions[id], m)
}

// lastTurnMessage is the body's last message that is not a system message.
func lastTurnMessage(msgs []Message) (Message, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "system" {
			return msgs[i], true
		}
	}
	return Message{}, false
}
