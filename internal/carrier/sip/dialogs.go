package sip

import (
	"net/netip"
	"sync"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/carrier/sip/media"
	"github.com/handset-voice/handset/internal/carrier/sip/sdp"
)

// inboundCall is one call a trunk answered: its dialog, its media and the leg the call
// engine drives.
type inboundCall struct {
	dialog *sipgo.DialogServerSession
	media  *media.Session
	leg    *Leg

	// mu guards the negotiation, which a re-INVITE changes.
	mu     sync.Mutex
	local  sdp.Local // Handset's side, Version bumped on every change
	agreed sdp.Media // what the last answer settled
	answer []byte    // the last answer, repeated for a session refresh
	// referring is the transfer in progress, nil when none.
	referring *referring
	// timer is the session timer (sessiontimer.go), armed when the dialog has one.
	timer *sessionTimer
	// authPeer is the address of a caller admitted by digest (inboundauth.go), the only
	// source outside the allow-list its requests may come from; invalid otherwise.
	authPeer netip.Addr
}

// dialogs are the trunk's calls by dialog id, for the requests that arrive inside one
// (ACK, BYE, re-INVITE, INFO).
type dialogs struct {
	mu    sync.Mutex
	calls map[string]*inboundCall
}

func newDialogs() *dialogs { return &dialogs{calls: map[string]*inboundCall{}} }

func (d *dialogs) add(c *inboundCall) {
	d.mu.Lock()
	d.calls[c.dialog.ID] = c
	d.mu.Unlock()
}

func (d *dialogs) remove(c *inboundCall) {
	d.mu.Lock()
	if d.calls[c.dialog.ID] == c {
		delete(d.calls, c.dialog.ID)
	}
	d.mu.Unlock()
}

// match is the call an in-dialog request belongs to; nil when none.
func (d *dialogs) match(req *sip.Request) *inboundCall {
	id, err := sip.DialogIDFromRequestUAS(req)
	if err != nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[id]
}

// count is the number of calls in progress.
func (d *dialogs) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.calls)
}

// byCallID is the call whose INVITE had SIP Call-ID id; nil when none.
func (d *dialogs) byCallID(id string) *inboundCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.calls {
		if h := c.dialog.InviteRequest.CallID(); h != nil && h.Value() == id {
			return c
		}
	}
	return nil
}
