package sip

import (
	"slices"
	"strings"
	"sync"

	"github.com/emiago/sipgo/sip"
)

// What a call's dialog keeps of its INVITE.
//
// sipgo's server dialog keeps two things for the call's life: its own copy of the INVITE,
// every header and the SDP offer included, and the INVITE's server transaction, which
// keeps the INVITE as it was parsed and the 200 OK. A call lasts minutes; the
// transaction is over 64×T1 (32 s) after the 200 OK, and the dialog reads only a few
// headers of its copy. What follows lets the rest go.

// dialogHeaders are the INVITE headers a dialog reads once it is made: responses to the
// INVITE copy Via, From, To, Call-ID, CSeq and Record-Route; requests inside the dialog
// go to Contact by way of Record-Route; the session timer asks Allow whether the caller
// takes UPDATE (sessiontimer.go).
var dialogHeaders = []string{"Via", "From", "To", "Call-ID", "CSeq", "Contact", "Record-Route", "Allow"}

// keepDialogHeaders strips a dialog's copy of its INVITE to dialogHeaders. The SDP offer
// goes too: it is read once, from the INVITE as it came. Call it before the dialog is
// shared: sipgo reads the copy without a lock.
func keepDialogHeaders(invite *sip.Request) {
	invite.SetBody(nil)
	var drop []string
	for _, h := range invite.Headers() {
		if !slices.ContainsFunc(dialogHeaders, func(name string) bool { return strings.EqualFold(name, h.Name()) }) {
			drop = append(drop, h.Name())
		}
	}
	for _, name := range drop {
		invite.RemoveHeader(name) // one occurrence a call: a name repeated is in drop as often
	}
}

// releasingTx is the INVITE's server transaction as the call's dialog holds it: the
// transaction itself while it runs, and only how it ended once it is over, so that the
// INVITE it was made from and its last response can be collected.
type releasingTx struct {
	done <-chan struct{}

	mu  sync.Mutex
	tx  sip.ServerTransaction // nil once over
	err error                 // why it ended, once over
}

// releaseWhenOver wraps tx for a dialog. A transaction already over is kept as it is.
func releaseWhenOver(tx sip.ServerTransaction) *releasingTx {
	r := &releasingTx{done: tx.Done(), tx: tx}
	// The callback runs under the transaction's own lock: it must not call back into it,
	// and no method below holds r.mu while it calls the transaction.
	tx.OnTerminate(func(_ string, err error) {
		r.mu.Lock()
		r.tx, r.err = nil, err
		r.mu.Unlock()
	})
	return r
}

// running is the transaction while it runs, else nil and why it ended.
func (r *releasingTx) running() (sip.ServerTransaction, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tx, r.err
}

func (r *releasingTx) Terminate() {
	if tx, _ := r.running(); tx != nil {
		tx.Terminate()
	}
}

func (r *releasingTx) OnTerminate(f sip.FnTxTerminate) bool {
	if tx, _ := r.running(); tx != nil {
		return tx.OnTerminate(f)
	}
	return false
}

func (r *releasingTx) Done() <-chan struct{} { return r.done }

func (r *releasingTx) Err() error {
	tx, err := r.running()
	if tx != nil {
		return tx.Err()
	}
	return err
}

func (r *releasingTx) Respond(res *sip.Response) error {
	if tx, _ := r.running(); tx != nil {
		return tx.Respond(res)
	}
	return sip.ErrTransactionTerminated
}

// Acks is nil once the transaction is over: a receive from it waits forever, as a
// dialog's does alongside Done.
func (r *releasingTx) Acks() <-chan *sip.Request {
	if tx, _ := r.running(); tx != nil {
		return tx.Acks()
	}
	return nil
}

func (r *releasingTx) OnCancel(f sip.FnTxCancel) bool {
	if tx, _ := r.running(); tx != nil {
		return tx.OnCancel(f)
	}
	return false
}
