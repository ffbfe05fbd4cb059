package dial

import (
	"context"

	"github.com/emiago/sipgo/sip"
)

// Dialog is an answered outbound call.
type Dialog struct{}

// ID is the dialog's id (Call-ID and tags).
func (d *Dialog) ID() string { panic("not yet") }

// Answer is the SDP answer from the 200 OK.
func (d *Dialog) Answer() []byte { panic("not yet") }

// Done is closed when the dialog ends: the callee's BYE, or Bye.
func (d *Dialog) Done() <-chan struct{} { panic("not yet") }

// HungUpByCallee reports whether the dialog ended with the callee's BYE.
func (d *Dialog) HungUpByCallee() bool { panic("not yet") }

// Bye hangs up: BYE, waiting for its answer until ctx ends. The dialog ends either way.
func (d *Dialog) Bye(ctx context.Context) error { panic("not yet") }

// Refer asks the callee to call target instead (a blind transfer) and waits until the
// callee's NOTIFY reports that the new call was answered. It returns a *CallError wrapping
// ErrRefused when the callee refuses REFER (405, 501, 603…) or the new call fails (its
// status from the NOTIFY). After success the callee usually hangs up; Bye if it does not.
func (d *Dialog) Refer(ctx context.Context, target sip.Uri) error { panic("not yet") }
