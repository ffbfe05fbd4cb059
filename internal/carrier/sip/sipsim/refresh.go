package sipsim

import (
	"context"

	"github.com/emiago/sipgo/sip"
)

// Session timers (RFC 4028) from the trunk's side: it refreshes a session with UPDATE, and
// answers the refreshes Handset sends.

// Update sends an UPDATE in the call with extra headers (Session-Expires, …) and an SDP
// offer when offer is not nil, and returns Handset's final response.
func (call *Call) Update(ctx context.Context, headers map[string]string, offer []byte) (*sip.Response, error) {
	req := sip.NewRequest(sip.UPDATE, call.sess.InviteResponse.Contact().Address)
	for k, v := range headers {
		req.AppendHeader(sip.NewHeader(k, v))
	}
	if offer != nil {
		req.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
		req.SetBody(offer)
	}
	return call.sess.Do(ctx, req)
}

// AnswerHeader is the value of a header of Handset's 200 OK to the INVITE; "" when it
// has none.
func (call *Call) AnswerHeader(name string) string {
	if h := call.sess.InviteResponse.GetHeader(name); h != nil {
		return h.Value()
	}
	return ""
}

// Refreshed delivers the method of each session refresh Handset sends in the call (an
// UPDATE, or a re-INVITE with the SDP unchanged), once answered 200 OK.
func (call *Call) Refreshed() <-chan string { return call.refreshed }

// onUpdate answers Handset's UPDATE as a refresh: 200 OK that keeps its Session-Expires
// (Handset stays the refresher).
func (c *Caller) onUpdate(req *sip.Request, tx sip.ServerTransaction) {
	c.answerRefresh(req, tx, nil)
}

// answerRefresh answers a refresh of a call the caller holds with 200 OK (body, when
// not nil, is the SDP), echoing its Session-Expires; 481 for any other call.
func (c *Caller) answerRefresh(req *sip.Request, tx sip.ServerTransaction, body []byte) {
	call := c.call(req)
	if call == nil {
		_ = tx.Respond(sip.NewResponseFromRequest(req, sip.StatusCallTransactionDoesNotExists, "Call/Transaction Does Not Exist", nil))
		return
	}
	res := sip.NewResponseFromRequest(req, sip.StatusOK, "OK", body)
	if body != nil {
		res.AppendHeader(sip.NewHeader("Content-Type", "application/sdp"))
	}
	if h := req.GetHeader("Session-Expires"); h != nil {
		res.AppendHeader(sip.NewHeader("Session-Expires", h.Value()))
		res.AppendHeader(sip.NewHeader("Require", "timer"))
	}
	_ = tx.Respond(res)
	select {
	case call.refreshed <- string(req.Method):
	default:
	}
}
