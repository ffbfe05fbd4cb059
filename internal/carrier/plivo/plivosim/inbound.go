package plivosim

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Ring places a call from from to to, one of the account's numbers: Plivo fetches the
// answer URL of the application the number is linked to (signed, Direction inbound) and
// runs the document; the hangup URL hears the end. It returns the call as it starts.
func (s *Server) Ring(ctx context.Context, from, to string) (Call, error) {
	if !digits(plain(from)) || !digits(plain(to)) {
		return Call{}, fmt.Errorf("plivosim: ring %s from %s: not phone numbers", to, from)
	}
	c := &call{ctl: make(chan control, 4), callee: Callee{Hold: time.Hour}}
	c.Direction, c.CallUUID, c.From, c.To = "inbound", newUUID(), "+"+plain(from), "+"+plain(to)
	c.Status = StatusRinging
	s.mu.Lock()
	n := s.numberLocked(plain(to))
	var app *Application
	if n != nil {
		app = s.apps[n.AppID]
	}
	switch {
	case n == nil:
		s.mu.Unlock()
		return Call{}, fmt.Errorf("plivosim: %s is not a number of the account", to)
	case app == nil || app.AnswerURL == "":
		s.mu.Unlock()
		return Call{}, fmt.Errorf("plivosim: %s is linked to no application with an answer URL", to)
	}
	c.AnswerURL, c.HangupURL = app.AnswerURL, app.HangupURL
	s.calls = append(s.calls, c)
	s.changedLocked()
	snap := c.snapshot()
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return Call{}, err
	}
	s.wg.Add(1)
	go s.run(c)
	return snap, nil
}

// ErrNoCall: Hangup named no call the fake holds.
var ErrNoCall = errors.New("plivosim: no such call")

// Hangup ends call ref (a CallUUID or request id) as source ("Caller", "Callee") hanging
// up: its hangup callback follows.
func (s *Server) Hangup(ref, source string) error {
	s.mu.Lock()
	c := s.findLocked(ref)
	s.mu.Unlock()
	if c == nil {
		return ErrNoCall
	}
	s.order(c, control{hangup: source})
	return nil
}
