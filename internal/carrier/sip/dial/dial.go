package dial

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// Options describe one outbound call.
type Options struct {
	// Dialogs keeps the call's dialog for the requests the callee sends inside it; required.
	Dialogs *Dialogs
	// Target is who is called, through the trunk: sip:+15551234567@trunk.example.com.
	// Its transport parameter picks the transport.
	Target sip.Uri
	// From is the caller id's user part (+15557654321); the From host is the Target's.
	From string
	// Contact is where the callee reaches Handset inside the dialog.
	Contact sip.ContactHeader
	// Offer is the SDP offer sent with the INVITE.
	Offer []byte
	// Username and Password answer the trunk's digest challenge (401 or 407).
	Username, Password string
	// RingTimeout bounds the wait for an answer, after which the call is cancelled and
	// fails with ErrNoAnswer; 60 s when zero.
	RingTimeout time.Duration
	// OnProvisional, when set, is called with each progress status (180, 183; not 100).
	OnProvisional func(status int)
	// OnRequest, when set, answers the in-dialog requests this package does not (INFO,
	// re-INVITE, UPDATE): it returns the status and body to reply with. When nil, a
	// re-INVITE is answered 200 with the last answer Handset gave (a session refresh),
	// OPTIONS 200, anything else 501.
	OnRequest func(req *sip.Request) (status int, body []byte)
}

// Why a call did not connect or a transfer failed; errors wrap one of them.
var (
	ErrBusy          = errors.New("busy")                              // 486, 600
	ErrNoAnswer      = errors.New("no answer")                         // 480, 408, or RingTimeout passed
	ErrInvalidNumber = errors.New("invalid number")                    // 404, 484, 604
	ErrRefused       = errors.New("refused")                           // 403, 603, and other 4xx
	ErrCredentials   = errors.New("the trunk refused the credentials") // 401/407 after the digest answer
	ErrUnreachable   = errors.New("the trunk could not be reached")    // no answer, transport error, 5xx
	ErrCancelled     = errors.New("cancelled before the answer")       // ctx ended while ringing: CANCEL sent, 487
	ErrEnded         = errors.New("the dialog has ended")
)

// CallError is a failed INVITE or REFER: the final status and the kind of failure.
type CallError struct {
	Status int    // the final SIP status; 0 when none came
	Phrase string // its reason phrase
	Kind   error  // one of the Err values
	Err    error  // the underlying cause when there was no status
}

func (e *CallError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%v: %v", e.Kind, e.Err)
	}
	return fmt.Sprintf("%v (%d %s)", e.Kind, e.Status, e.Phrase)
}

// Unwrap gives errors.Is both the kind and the cause.
func (e *CallError) Unwrap() []error { return []error{e.Kind, e.Err} }

// Invite calls o.Target through client and waits for the answer; it returns the
// established dialog (ACK sent) or a *CallError. Ending ctx before the answer sends CANCEL.
func Invite(ctx context.Context, client *sipgo.Client, o Options) (*Dialog, error) {
	panic("not yet")
}
