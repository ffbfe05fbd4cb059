package sip

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/clock"
)

// Session timers (RFC 4028). A SIP dialog has no keepalive of its own: when one side
// vanishes without a BYE (a crash, a lost route) the other would keep the call, and its
// media port and admission slot, forever. Session timers bound that: the INVITE names an
// interval (Session-Expires) and which side refreshes the session within it (the
// refresher, "uac" the caller or "uas" the callee) with a re-INVITE or UPDATE. When the
// refresher is Handset, it refreshes at half the interval; when it is the peer and no
// refresh arrives, Handset hangs up with a BYE shortly before the interval runs out.

// Session timer defaults.
const (
	// DefaultMinSE is the shortest interval Handset accepts: RFC 4028's floor.
	DefaultMinSE = 90 * time.Second
	// DefaultSessionExpires is the interval Handset asks for when it chooses.
	DefaultSessionExpires = 30 * time.Minute
)

// testMinSE is a shorter floor a test of `handset serve` sets, so a session can expire
// in seconds; zero everywhere else.
var testMinSE atomic.Int64

// SetTestMinSE lowers the session interval's floor of the trunks serve starts from now
// on, for tests that watch a session expire; it returns the function that restores it.
// Nothing but tests calls it: below 90 s is against RFC 4028.
func SetTestMinSE(d time.Duration) (restore func()) {
	old := testMinSE.Swap(int64(d))
	return func() { testMinSE.Store(old) }
}

// testSessionExpires is the interval the trunks serve starts ask for in a test; zero
// everywhere else.
var testSessionExpires atomic.Int64

// SetTestSessionExpires sets the session interval the trunks serve starts from now on ask
// for when they choose, for tests that watch a session Handset placed; it returns the
// function that restores it.
func SetTestSessionExpires(d time.Duration) (restore func()) {
	old := testSessionExpires.Swap(int64(d))
	return func() { testSessionExpires.Store(old) }
}

// errSessionExpired ends a call whose peer let the session expire without refreshing it.
var errSessionExpired = errors.New("sip: the session expired: the peer did not refresh it (RFC 4028)")

// errRefreshFailed ends a call whose session Handset could not refresh.
var errRefreshFailed = errors.New("sip: the session refresh failed (RFC 4028)")

// minSE is the shortest session interval the trunk accepts.
func (o Options) minSE() time.Duration {
	if o.MinSE > 0 {
		return o.MinSE
	}
	return DefaultMinSE
}

// sessionExpires is the interval the trunk asks for when it chooses: never below the floor.
func (o Options) sessionExpires() time.Duration {
	d := o.SessionExpires
	if d <= 0 {
		d = DefaultSessionExpires
	}
	return max(d, o.minSE())
}

func (o Options) clock() clock.Clock {
	if o.Clock != nil {
		return o.Clock
	}
	return clock.Real{}
}

// tooBrief answers 422 with Handset's floor, which the caller's next INVITE must meet.
func (t *Trunk) tooBrief(req *sip.Request, tx sip.ServerTransaction) {
	res := sip.NewResponseFromRequest(req, statusIntervalTooSmall, "Session Interval Too Small", nil)
	res.AppendHeader(sip.NewHeader("Min-SE", strconv.Itoa(int(t.opts.minSE()/time.Second))))
	_ = tx.Respond(res)
}

// refuseTerms answers a request whose session timer Handset cannot take: 422 when its
// interval is below the floor, 400 when a header is malformed.
func (t *Trunk) refuseTerms(req *sip.Request, tx sip.ServerTransaction, err error) {
	if errors.Is(err, errTooBrief) {
		t.tooBrief(req, tx)
		return
	}
	_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusBadRequest, clipReason(err), nil))
}

// expiryLead is how long before the interval ends Handset hangs up a session the peer
// did not refresh: a third of it, at most 32 s (RFC 4028 10).
func expiryLead(interval time.Duration) time.Duration { return min(32*time.Second, interval/3) }

// sessionTimer runs one dialog's session timer: it refreshes the session at half the
// interval when Handset is the refresher, or ends the call shortly before the interval
// when the peer is and did not refresh.
type sessionTimer struct {
	clk     clock.Clock
	refresh func(sessionTerms) // Handset's turn to refresh, on a goroutine of its own
	expire  func()             // the peer did not refresh, on a goroutine of its own

	mu      sync.Mutex
	timer   clock.Timer
	gen     uint64 // bumped on every arm, so a timer that fired late does nothing
	stopped bool
}

// arm (re)starts the timer for terms: on the 2xx that set them up, and on every refresh.
func (s *sessionTimer) arm(terms sessionTerms) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	if s.timer != nil {
		s.timer.Stop()
	}
	s.gen++
	gen := s.gen
	fire := func(run func()) func() {
		return func() {
			s.mu.Lock()
			current := !s.stopped && s.gen == gen
			s.mu.Unlock()
			if current {
				go run()
			}
		}
	}
	if terms.handsetRefreshes {
		s.timer = s.clk.AfterFunc(terms.interval/2, fire(func() { s.refresh(terms) }))
		return
	}
	s.timer = s.clk.AfterFunc(terms.interval-expiryLead(terms.interval), fire(s.expire))
}

// stop stops the timer for good: the call is over.
func (s *sessionTimer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
	}
}

// disarm stops the timer until the next arm: a refresh that names no timer turns it off.
func (s *sessionTimer) disarm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	if s.timer != nil {
		s.timer.Stop()
	}
}

// newSessionTimer is an inbound call's session timer, armed once the 200 OK is
// acknowledged.
func (t *Trunk) newSessionTimer(c *inboundCall) *sessionTimer {
	return &sessionTimer{
		clk:     t.opts.clock(),
		refresh: func(terms sessionTerms) { t.refreshInbound(c, terms) },
		expire: func() {
			t.log.Warn("the caller did not refresh the SIP session: hanging up", "call_id", c.leg.info.CarrierRef)
			c.endSession("session expired", errSessionExpired)
		},
	}
}

// answerOK is the 200 OK of an inbound INVITE: the SDP answer, the methods Handset takes
// (a peer looks for UPDATE there) and the session timer's terms when there are any.
func answerOK(req *sip.Request, answer []byte, terms sessionTerms, timed bool) *sip.Response {
	res := sip.NewSDPResponseFromRequest(req, answer)
	res.AppendHeader(sip.NewHeader("Allow", allowedMethods))
	res.AppendHeader(sip.NewHeader("Supported", timerTag))
	if timed {
		addTerms(res, terms)
	}
	return res
}

// applyRefresh takes the terms of a peer's refresh (a re-INVITE or UPDATE) into the 2xx
// that answers it and restarts the timer; a refresh that names no timer turns it off.
func (c *inboundCall) applyRefresh(res *sip.Response, terms sessionTerms, timed bool) {
	if !timed {
		c.timer.disarm()
		return
	}
	addTerms(res, terms)
	c.timer.arm(terms)
}

// onUpdate answers an UPDATE inside a call (RFC 3311): a session refresh, with an SDP
// offer or without one.
func (t *Trunk) onUpdate(req *sip.Request, tx sip.ServerTransaction) {
	c, terms, timed := t.readInDialog(req, tx)
	if c == nil {
		return
	}
	c.leg.signals.signal(time.Now(), "UPDATE", "in", "")
	if len(req.Body()) > 0 { // an offer, answered as a re-INVITE's is
		t.answerOffer(c, req, tx, terms, timed)
		return
	}
	t.respondInDialog(c, req, tx, sip.NewResponseFromRequest(req, sip.StatusOK, "OK", nil), terms, timed)
}

// refreshTimeout bounds a refresh Handset sends: 64·T1, a transaction's lifetime.
const refreshTimeout = 32 * time.Second

// refreshInbound refreshes an inbound call's session as its refresher: an UPDATE when
// the caller allows one (no SDP), else a re-INVITE with the current answer unchanged.
// A refresh that fails ends the call.
func (t *Trunk) refreshInbound(c *inboundCall, terms sessionTerms) {
	method := sip.INVITE
	if namesTag(c.dialog.InviteRequest, "Allow", "", string(sip.UPDATE)) {
		method = sip.UPDATE
	}
	req := sip.NewRequest(method, c.dialog.InviteRequest.Contact().Address)
	mine := terms
	mine.refresher = refresherUAC // in this request Handset is the uac, and stays refresher
	req.AppendHeader(sip.NewHeader("Session-Expires", sessionExpiresValue(mine)))
	req.AppendHeader(sip.NewHeader("Supported", timerTag))
	if method == sip.INVITE {
		c.mu.Lock()
		body := c.answer
		c.mu.Unlock()
		req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
		req.SetBody(body)
	}
	c.leg.signals.signal(time.Now(), string(method), "out", "session refresh")
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	res, err := c.dialog.Do(ctx, req)
	if err == nil && method == sip.INVITE && res.IsSuccess() {
		ack := sip.NewRequest(sip.ACK, c.dialog.InviteRequest.Contact().Address)
		err = c.dialog.WriteRequest(ack)
	}
	if err == nil && !res.IsSuccess() {
		err = fmt.Errorf("%d %s", res.StatusCode, res.Reason)
	}
	select {
	case <-c.leg.ended:
		return // the call ended meanwhile: nothing to refresh
	default:
	}
	if err != nil {
		t.log.Warn("could not refresh the SIP session: hanging up", "call_id", c.leg.info.CarrierRef, "err", err)
		c.endSession("session refresh failed", errRefreshFailed)
		return
	}
	next, ok := answeredTerms(res, terms)
	if !ok {
		c.timer.disarm()
		return
	}
	c.timer.arm(next)
}

// endSession hangs up a call whose session timer ran out: the BYE, and why, in the
// journal.
func (c *inboundCall) endSession(reason string, cause error) {
	select {
	case <-c.leg.ended:
		return
	default:
	}
	c.leg.signals.signal(time.Now(), "BYE", "out", reason)
	ctx, cancel := context.WithTimeout(context.Background(), byeTimeout)
	defer cancel()
	if err := c.dialog.Bye(ctx); err != nil {
		c.leg.log.Warn("could not hang up the call (BYE)", "call_id", c.leg.info.CarrierRef, "err", err)
	}
	c.leg.end(cause)
}
