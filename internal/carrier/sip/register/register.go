package register

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/clock"
)

// Options configure a Registration.
type Options struct {
	// Registrar is where REGISTER goes: sip:pbx.example.com:5060;transport=tcp. Its
	// transport parameter picks the transport (UDP when absent).
	Registrar sip.Uri
	// AOR is the address-of-record registered: sip:handset@pbx.example.com.
	AOR sip.Uri
	// Contact is where the registrar sends the AOR's calls: Handset's advertised address.
	Contact sip.ContactHeader
	// Username and Password answer the registrar's digest challenge; Username defaults to
	// the AOR's user.
	Username, Password string
	// Expires is the binding lifetime asked for; 300 s when zero.
	Expires time.Duration
	// RetryMin and RetryMax bound the delay between failed attempts, which doubles from
	// RetryMin up to RetryMax; 2 s and 5 min when zero.
	RetryMin, RetryMax time.Duration
	// Timeout bounds one REGISTER transaction (with its digest retry); 32 s when zero.
	Timeout time.Duration
	// OnChange, when set, is called with the new Status after every attempt, from the
	// Registration's goroutine; it must not block.
	OnChange func(Status)
	Logger   *slog.Logger
	Clock    clock.Clock // clock.Real{} when nil
}

// Status is where a Registration stands.
type Status struct {
	// Registered: the registrar holds a binding that has not lapsed.
	Registered bool
	// Registrar is the registrar's URI as configured; Remote the address that answered
	// last, empty before any answer.
	Registrar, Remote string
	// Granted is the binding lifetime the registrar granted last.
	Granted time.Duration
	// Next is when the next REGISTER is due: the refresh, or the retry after a failure.
	Next time.Time
	// Err is the last attempt's error, nil when it succeeded.
	Err error
	// Attempts counts REGISTER attempts (a digest retry is part of its attempt).
	Attempts int
}

// The kinds of failure; errors from a Registration wrap one of them.
var (
	// ErrCredentials: the registrar refused the username or password (403, or a challenge
	// repeated after the digest answer).
	ErrCredentials = errors.New("the registrar refused the credentials")
	// ErrUnreachable: no answer, a transport error, or the registrar said it cannot serve
	// (408, 5xx).
	ErrUnreachable = errors.New("the registrar could not be reached")
	// ErrRefused: any other final refusal (404 unknown user, 423 loop, …).
	ErrRefused = errors.New("the registrar refused the registration")
)

// Registration keeps one binding at a registrar.
type Registration struct {
	client *sipgo.Client
	opts   Options
}

// New prepares a registration sent through client (the trunk's, so REGISTER leaves from
// the listening socket); Run starts it.
func New(client *sipgo.Client, opts Options) *Registration {
	return &Registration{client: client, opts: opts}
}

// Run registers and keeps the binding refreshed until ctx ends, then removes it
// (Expires: 0). Failures are retried, never returned: Status and the log report them. It
// returns the error of the final un-REGISTER, if any.
func (r *Registration) Run(ctx context.Context) error { panic("not yet") }

// Status reports where the registration stands; safe to call from any goroutine.
func (r *Registration) Status() Status { panic("not yet") }
