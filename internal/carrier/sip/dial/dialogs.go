package dial

import (
	"sync"

	"github.com/emiago/sipgo/sip"
)

// Dialogs are the outbound calls in progress, for the requests their callees send inside
// them. The trunk's server handlers for BYE, ACK, NOTIFY, INVITE, INFO and the rest call
// Handle first and handle the request themselves only when it returns false:
//
//	srv.OnBye(func(req *sip.Request, tx sip.ServerTransaction) {
//		if outbound.Handle(req, tx) {
//			return
//		}
//		// an inbound call's BYE
//	})
//
// A request outside any dialog (a new INVITE has no To tag) is never taken.
type Dialogs struct {
	mu    sync.Mutex
	calls map[string]*Dialog
}

// NewDialogs makes an empty set.
func NewDialogs() *Dialogs { return &Dialogs{calls: map[string]*Dialog{}} }

// Handle answers req when it belongs to one of the dialogs and reports whether it did.
func (ds *Dialogs) Handle(req *sip.Request, tx sip.ServerTransaction) bool {
	// The callee sends with its tag in From and Handset's in To: the dialog id as the
	// client side of the dialog computes it.
	id, err := sip.DialogIDFromRequestUAC(req)
	if err != nil {
		return false
	}
	ds.mu.Lock()
	d := ds.calls[id]
	ds.mu.Unlock()
	if d == nil {
		return false
	}
	d.handle(req, tx)
	return true
}

// Len is the number of dialogs in progress.
func (ds *Dialogs) Len() int {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return len(ds.calls)
}

func (ds *Dialogs) add(d *Dialog) {
	ds.mu.Lock()
	ds.calls[d.ID()] = d
	ds.mu.Unlock()
}

func (ds *Dialogs) remove(d *Dialog) {
	ds.mu.Lock()
	if ds.calls[d.ID()] == d {
		delete(ds.calls, d.ID())
	}
	ds.mu.Unlock()
}
