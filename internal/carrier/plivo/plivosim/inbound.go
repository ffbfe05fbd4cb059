package plivosim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// WithheldCaller is From for a caller who withheld their number (UNCONFIRMED how Plivo
// shows one: the word most carriers use).
const WithheldCaller = "anonymous"

// The answer callback's STIR/SHAKEN parameters (UNCONFIRMED names and values: Plivo's
// call details name stir_attestation and stir_verification).
const (
	ParamSTIRAttestation  = "STIRAttestation"
	ParamSTIRVerification = "STIRVerification"
	STIRVerified          = "Verified"
	STIRNotVerified       = "Not Verified"
)

// RingOptions shape an inbound call beyond its numbers.
type RingOptions struct {
	// CallUUID is the call's id; empty generates one.
	CallUUID string
	// Withheld shows the caller as WithheldCaller; the from number is ignored.
	Withheld bool
	// Attestation is the STIR/SHAKEN level ("A", "B", "C") the callbacks carry in
	// ParamSTIRAttestation, with ParamSTIRVerification Verified; empty sends neither.
	Attestation string
	// Params are further callback parameters, sent as given (they override the above).
	Params map[string]string
}

// Ring places a call from from to to, one of the account's numbers: Plivo fetches the
// answer URL of the application the number is linked to (signed, Direction inbound) and
// runs the document; the hangup URL hears the end. It returns the call as it starts.
func (s *Server) Ring(ctx context.Context, from, to string) (Call, error) {
	return s.RingWith(ctx, from, to, RingOptions{})
}

// RingWith is Ring with options.
func (s *Server) RingWith(ctx context.Context, from, to string, o RingOptions) (Call, error) {
	if o.Withheld {
		from = WithheldCaller
	} else if !digits(plain(from)) {
		return Call{}, fmt.Errorf("plivosim: ring %s from %s: not a phone number", to, from)
	}
	if !digits(plain(to)) {
		return Call{}, fmt.Errorf("plivosim: ring %s from %s: not a phone number", to, from)
	}
	if o.CallUUID != "" && !validUUID(o.CallUUID) {
		return Call{}, fmt.Errorf("plivosim: ring: %q is not a CallUUID", o.CallUUID)
	}
	c := &call{ctl: make(chan control, 4), callee: Callee{Hold: time.Hour}, extra: url.Values{}}
	c.Direction, c.CallUUID, c.From, c.To = "inbound", cmp.Or(o.CallUUID, newUUID()), "+"+plain(from), "+"+plain(to)
	if o.Withheld {
		c.From = WithheldCaller
	}
	if o.Attestation != "" {
		c.extra.Set(ParamSTIRAttestation, o.Attestation)
		c.extra.Set(ParamSTIRVerification, STIRVerified)
	}
	for k, v := range o.Params {
		c.extra.Set(k, v)
	}
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
