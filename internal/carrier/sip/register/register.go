package register

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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
	// Registration's goroutine, once the next attempt is scheduled; it must not block.
	OnChange func(Status)
	Logger   *slog.Logger
	Clock    clock.Clock // clock.Real{} when nil
}

// Defaults and bounds.
const (
	defaultExpires  = 300 * time.Second
	defaultRetryMin = 2 * time.Second
	defaultRetryMax = 5 * time.Minute
	defaultTimeout  = 32 * time.Second
	// maxExpires bounds what Handset asks for, even when a registrar's 423 demands more: a
	// binding that outlives a day hides a Handset that went away.
	maxExpires = 24 * time.Hour
	// minRefresh keeps a registrar that grants a second or two from making Handset
	// register in a tight loop.
	minRefresh = 5 * time.Second
	// refreshShare is the part of the granted expiry after which the binding is refreshed:
	// early enough for a retransmitted REGISTER and a digest round trip to finish in time.
	refreshShare = 85
)

func (o Options) withDefaults() Options {
	if o.Expires <= 0 {
		o.Expires = defaultExpires
	}
	o.Expires = min(o.Expires, maxExpires)
	if o.RetryMin <= 0 {
		o.RetryMin = defaultRetryMin
	}
	if o.RetryMax <= 0 {
		o.RetryMax = defaultRetryMax
	}
	o.RetryMax = max(o.RetryMax, o.RetryMin)
	if o.Timeout <= 0 {
		o.Timeout = defaultTimeout
	}
	if o.Username == "" {
		o.Username = o.AOR.User
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return o
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
	log    *slog.Logger
	clk    clock.Clock

	// The dialog-like identity every REGISTER of this binding shares: registrars match
	// refreshes by Call-ID and expect CSeq to grow.
	callID  sip.CallIDHeader
	fromTag string
	cseq    uint32
	// expires is what is asked for: Options.Expires, or more after a 423.
	expires time.Duration

	mu     sync.Mutex
	status Status
	until  time.Time // when the binding lapses; zero when there is none
}

// New prepares a registration sent through client (the trunk's, so REGISTER leaves from
// the listening socket); Run starts it.
func New(client *sipgo.Client, opts Options) *Registration {
	opts = opts.withDefaults()
	return &Registration{
		client:  client,
		opts:    opts,
		log:     opts.Logger.With("registrar", opts.Registrar.String(), "aor", opts.AOR.String()),
		clk:     opts.Clock,
		callID:  sip.CallIDHeader(sip.GenerateTagN(24) + "@handset"),
		fromTag: sip.GenerateTagN(16),
		expires: opts.Expires,
		status:  Status{Registrar: opts.Registrar.String()},
	}
}

// Run registers and keeps the binding refreshed until ctx ends, then removes it
// (Expires: 0). Failures are retried, never returned: Status and the log report them; a
// registrar's Retry-After (503) is honoured up to RetryMax. It returns the error of the
// final un-REGISTER, if any. Run once per Registration.
func (r *Registration) Run(ctx context.Context) error {
	backoff := r.opts.RetryMin
	for {
		res, granted, err := r.attempt(ctx, r.expires)
		if ctx.Err() != nil {
			return r.unregister(ctx)
		}
		var delay time.Duration
		if err == nil {
			delay = max(granted*refreshShare/100, minRefresh)
			backoff = r.opts.RetryMin
		} else {
			delay = max(backoff, retryAfter(res, r.opts.RetryMax))
			if errors.Is(err, ErrCredentials) {
				// A wrong password does not fix itself: ask again rarely.
				delay = r.opts.RetryMax
			}
			backoff = min(backoff*2, r.opts.RetryMax)
		}
		// The timer is set before the status is told: whoever learns of it (a test with a
		// fake clock) may move time on at once.
		timer := r.clk.NewTimer(delay)
		r.record(res, granted, err, delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return r.unregister(ctx)
		case <-timer.C():
		}
	}
}

// record notes an attempt's outcome in the status, logs changes and tells OnChange.
func (r *Registration) record(res *sip.Response, granted time.Duration, err error, delay time.Duration) {
	now := r.clk.Now()
	r.mu.Lock()
	wasRegistered := r.registeredLocked(now)
	lastErr := r.status.Err
	r.status.Attempts++
	r.status.Err = err
	r.status.Next = now.Add(delay)
	if res != nil {
		r.status.Remote = res.Source()
	}
	if err == nil {
		r.status.Granted = granted
		r.until = now.Add(granted)
	}
	st := r.statusLocked(now)
	r.mu.Unlock()

	switch {
	case err == nil && !wasRegistered:
		r.log.Info("registered", "granted", granted, "refresh_in", delay)
	case err != nil && (lastErr == nil || lastErr.Error() != err.Error()):
		// Once per kind of failure, not once per retry.
		r.log.Warn("registration failed", "err", err, "retry_in", delay, "still_registered", st.Registered)
	}
	if r.opts.OnChange != nil {
		r.opts.OnChange(st)
	}
}

// Status reports where the registration stands; safe to call from any goroutine.
func (r *Registration) Status() Status {
	now := r.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statusLocked(now)
}

func (r *Registration) statusLocked(now time.Time) Status {
	st := r.status
	st.Registered = r.registeredLocked(now)
	return st
}

func (r *Registration) registeredLocked(now time.Time) bool {
	return !r.until.IsZero() && now.Before(r.until)
}

// unregister removes the binding when one may still be held, with its own deadline since
// ctx has ended.
func (r *Registration) unregister(ctx context.Context) error {
	r.mu.Lock()
	held := !r.until.IsZero()
	r.mu.Unlock()
	if !held {
		return nil
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Timeout)
	defer cancel()
	res, _, err := r.attempt(uctx, 0)
	r.mu.Lock()
	r.until = time.Time{}
	r.status.Next = time.Time{}
	r.status.Err = err
	r.status.Granted = 0
	if res != nil {
		r.status.Remote = res.Source()
	}
	r.mu.Unlock()
	if err != nil {
		r.log.Warn("could not remove the registration", "err", err)
		return fmt.Errorf("un-register: %w", err)
	}
	r.log.Info("registration removed")
	return nil
}
