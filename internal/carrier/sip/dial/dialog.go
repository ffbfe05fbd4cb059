package dial

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// Dialog is an answered outbound call.
type Dialog struct {
	s         *sipgo.DialogClientSession
	ds        *Dialogs
	offer     []byte
	answer    []byte
	onReq     func(*sip.Request) (int, []byte)
	onRefresh func(*sip.Request) (int, []sip.Header)

	done     chan struct{}
	ended    sync.Once
	byCallee atomic.Bool

	// referring serializes transfers; transfer is the one in progress, nil when none.
	referring sync.Mutex
	mu        sync.Mutex
	transfer  *transfer
}

func newDialog(s *sipgo.DialogClientSession, o Options) *Dialog {
	return &Dialog{
		s: s, ds: o.Dialogs, offer: o.Offer, answer: s.InviteResponse.Body(), onReq: o.OnRequest, onRefresh: o.OnRefresh,
		done: make(chan struct{}),
	}
}

// ID is the dialog's id (Call-ID and tags).
func (d *Dialog) ID() string { return d.s.ID }

// Answer is the SDP answer from the 200 OK.
func (d *Dialog) Answer() []byte { return d.answer }

// Answered is the 200 OK that answered the INVITE.
func (d *Dialog) Answered() *sip.Response { return d.s.InviteResponse }

// Refresh refreshes the session (RFC 4028) with an UPDATE, or with a re-INVITE that
// offers the first offer again (and is acknowledged), carrying headers; it returns the
// final answer, whatever its status.
func (d *Dialog) Refresh(ctx context.Context, method sip.RequestMethod, headers []sip.Header) (*sip.Response, error) {
	if d.over() {
		return nil, ErrEnded
	}
	target := d.s.InviteRequest.Recipient
	if c := d.s.InviteResponse.Contact(); c != nil {
		target = c.Address
	}
	req := sip.NewRequest(method, target)
	for _, h := range headers {
		req.AppendHeader(h)
	}
	if method == sip.INVITE {
		req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
		req.SetBody(d.offer)
	}
	res, err := d.s.Do(ctx, req)
	if err != nil {
		return nil, err
	}
	if method == sip.INVITE && res.IsSuccess() {
		if err := d.s.WriteRequest(sip.NewRequest(sip.ACK, target)); err != nil {
			return res, fmt.Errorf("acknowledging the refresh: %w", err)
		}
	}
	return res, nil
}

// Done is closed when the dialog ends: the callee's BYE, or Bye.
func (d *Dialog) Done() <-chan struct{} { return d.done }

// HungUpByCallee reports whether the dialog ended with the callee's BYE.
func (d *Dialog) HungUpByCallee() bool { return d.byCallee.Load() }

// end marks the dialog over, once, and forgets it.
func (d *Dialog) end(byCallee bool) {
	d.ended.Do(func() {
		d.byCallee.Store(byCallee)
		d.ds.remove(d)
		close(d.done)
	})
}

func (d *Dialog) over() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Bye hangs up: BYE, waiting for its answer until ctx ends. The dialog ends either way.
func (d *Dialog) Bye(ctx context.Context) error {
	if d.over() {
		return nil
	}
	defer d.end(false)
	err := d.s.Bye(ctx)
	var refused sipgo.ErrDialogResponse
	switch {
	case err == nil:
		return nil
	case errors.As(err, &refused):
		return statusError(refused.Res)
	default:
		return &CallError{Kind: ErrUnreachable, Err: fmt.Errorf("BYE: %w", err)}
	}
}

// handle answers a request the callee sent inside the dialog.
func (d *Dialog) handle(req *sip.Request, tx sip.ServerTransaction) {
	switch req.Method {
	case sip.BYE:
		_ = tx.Respond(sip.NewResponseFromRequest(req, 200, "OK", nil))
		d.end(true)
	case sip.ACK:
		// of a re-INVITE's 200: nothing to do
	case sip.NOTIFY:
		d.notified(req, tx)
	case sip.INVITE, sip.UPDATE:
		d.reinvite(req, tx)
	case sip.OPTIONS:
		if d.onReq == nil {
			_ = tx.Respond(sip.NewResponseFromRequest(req, 200, "OK", nil))
			return
		}
		d.custom(req, tx)
	default:
		if d.onReq == nil {
			_ = tx.Respond(sip.NewResponseFromRequest(req, 501, "Not Implemented", nil))
			return
		}
		d.custom(req, tx)
	}
}

// reinvite answers a re-INVITE or an UPDATE: OnRequest's answer, or 200 with the first
// offer again when it carries an offer (a session refresh keeps the session as it is).
// OnRefresh adds the session timer's terms to a 2xx, or refuses it.
func (d *Dialog) reinvite(req *sip.Request, tx sip.ServerTransaction) {
	status, body := 200, d.offer
	if req.Method == sip.UPDATE && len(req.Body()) == 0 {
		body = nil
	}
	if d.onReq != nil {
		status, body = d.onReq(req)
	}
	var extra []sip.Header
	if d.onRefresh != nil && status >= 200 && status < 300 {
		var refused int
		if refused, extra = d.onRefresh(req); refused != 0 {
			status, body = refused, nil
		}
	}
	res := sip.NewResponseFromRequest(req, status, reason(status), body)
	if status >= 200 && status < 300 {
		res.AppendHeader(d.s.UA.ContactHDR.Clone())
		if len(body) > 0 {
			res.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
		}
	}
	for _, h := range extra {
		res.AppendHeader(h)
	}
	_ = tx.Respond(res)
}

func (d *Dialog) custom(req *sip.Request, tx sip.ServerTransaction) {
	status, body := d.onReq(req)
	_ = tx.Respond(sip.NewResponseFromRequest(req, status, reason(status), body))
}

// reason is the phrase of a status Handset sends on OnRequest's behalf.
func reason(status int) string {
	switch status {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 422:
		return "Session Interval Too Small"
	case 488:
		return "Not Acceptable Here"
	case 491:
		return "Request Pending"
	case 501:
		return "Not Implemented"
	}
	switch {
	case status < 300:
		return "OK"
	case status < 500:
		return "Refused"
	}
	return "Server Error"
}
