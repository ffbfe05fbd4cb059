package fakedeepgram

import (
	"context"
	"net/http"
)

// Outages, as a test stages them. Deepgram's own failures look like these: a handshake
// refused with an HTTP status and its JSON error body (503 while the service is down, 401
// for a revoked key), a handshake that is never answered, and live sockets that die
// without a close frame.

// Refuse makes every later handshake fail with HTTP status and Deepgram's JSON error
// body, until Refuse(0). Open connections carry on (DropAll ends them). Refused handshakes
// count in Rejected.
func (s *Server) Refuse(status int) { s.update(func() { s.refuse = max(status, 0) }) }

// Stall leaves every later handshake unanswered, as a server that accepted the TCP
// connection and then hung does, until Stall(false) lets the waiting ones through or their
// clients give up. Totals.Stalled counts them.
func (s *Server) Stall(on bool) {
	s.update(func() {
		if on && s.unstall == nil {
			s.unstall = make(chan struct{})
		}
		if !on && s.unstall != nil {
			close(s.unstall)
			s.unstall = nil
		}
	})
}

// DropAll ends every open connection abruptly (no close frame), as a dying network path
// does. Each counts as Dropped.
func (s *Server) DropAll() {
	s.update(func() {
		for rec, cancel := range s.live {
			if !rec.Dropped {
				rec.Dropped = true
				s.totals.Dropped++
			}
			cancel()
		}
	})
}

// fault applies Refuse and Stall to a handshake; it reports whether the request was
// answered (refused, or its client gave up) and must go no further.
func (s *Server) fault(w http.ResponseWriter, r *http.Request, requestID string) bool {
	s.mu.Lock()
	refuse, unstall := s.refuse, s.unstall
	s.mu.Unlock()
	if unstall != nil {
		s.update(func() { s.totals.Stalled++ })
		select {
		case <-unstall:
		case <-r.Context().Done():
			return true
		case <-s.ctx.Done():
			return true
		}
		s.mu.Lock()
		refuse = s.refuse
		s.mu.Unlock()
	}
	if refuse != 0 {
		s.reject(w, refuse, errCode(refuse), http.StatusText(refuse), requestID)
		return true
	}
	return false
}

// errCode is Deepgram's err_code for a refused handshake's status.
func errCode(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "INVALID_AUTH"
	case http.StatusPaymentRequired:
		return "ASR_PAYMENT_REQUIRED"
	case http.StatusTooManyRequests:
		return "TOO_MANY_REQUESTS"
	case http.StatusServiceUnavailable:
		return "SERVICE_UNAVAILABLE"
	}
	return "INTERNAL_SERVER_ERROR"
}

// trackLocked registers a connection's cancel, so DropAll can end it. It is called as the
// connection is recorded, before the client's handshake returns.
func (s *Server) trackLocked(rec *ConnStats, cancel context.CancelFunc) {
	if s.live == nil {
		s.live = map[*ConnStats]context.CancelFunc{}
	}
	s.live[rec] = cancel
}
