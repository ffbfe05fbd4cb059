package register

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"
	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/carrier/sip/dial/uatest"
	"github.com/handset-voice/handset/internal/clock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(uatest.IgnoreSipgoLeak))
}

// running is a Registration running on its own goroutine against a registrar, with its
// statuses as they change.
type running struct {
	reg     *Registration
	clk     *clock.Fake
	changes chan Status
	cancel  context.CancelFunc
	done    chan error
	once    sync.Once
	err     error
}

var t0 = time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)

func startRegistration(t *testing.T, r *fakeRegistrar, password string, tweak func(*Options)) *running {
	t.Helper()
	handset := uatest.New(t, nil)
	run := &running{clk: clock.NewFake(t0), changes: make(chan Status, 64), done: make(chan error, 1)}
	opts := Options{
		Registrar: sip.Uri{Scheme: "sip", Host: "127.0.0.1", Port: r.Addr.Port},
		AOR:       sip.Uri{Scheme: "sip", User: "handset", Host: fakeRealm},
		Contact:   sip.ContactHeader{Address: handset.URI("handset")},
		Password:  password,
		Clock:     run.clk,
		OnChange:  func(s Status) { run.changes <- s },
	}
	if tweak != nil {
		tweak(&opts)
	}
	run.reg = New(handset.Client, opts)
	ctx, cancel := context.WithCancel(context.Background())
	run.cancel = cancel
	go func() { run.done <- run.reg.Run(ctx) }()
	t.Cleanup(func() { run.stop(t) })
	return run
}

// status is the Status after the next attempt.
func (run *running) status(t *testing.T) Status {
	t.Helper()
	select {
	case s := <-run.changes:
		return s
	case <-time.After(waitBound):
		t.Fatal("no attempt to register")
		return Status{}
	}
}

// stop ends Run and returns what it returned; later calls return the same.
func (run *running) stop(t *testing.T) error {
	t.Helper()
	run.cancel()
	run.once.Do(func() {
		select {
		case run.err = <-run.done:
		case <-time.After(2 * waitBound):
			t.Fatal("Run did not return after its context ended")
		}
	})
	return run.err
}

// The registrar challenges and grants less than asked: Handset answers the challenge,
// takes the shorter expiry, refreshes at 85% of it within the same Call-ID with a growing
// CSeq, and removes the binding when stopped.
func TestRegistersRefreshesAndUnregisters(t *testing.T) {
	r := newFakeRegistrar(t, "handset", "s3cret")
	r.set(func(r *fakeRegistrar) { r.grant = 60 })
	run := startRegistration(t, r, "s3cret", nil)

	challenged, answered := r.next(t), r.next(t)
	if challenged.status != 401 || !answered.authorized || answered.status != 200 {
		t.Fatalf("first REGISTER answered %d, then authorized=%v answered %d; want 401, then authorized 200",
			challenged.status, answered.authorized, answered.status)
	}
	if challenged.expires != 300 || answered.callID != challenged.callID || answered.cseq != challenged.cseq+1 {
		t.Errorf("REGISTERs %+v then %+v: want Expires 300, one Call-ID, CSeq+1", challenged, answered)
	}
	s := run.status(t)
	if !s.Registered || s.Err != nil || s.Granted != 60*time.Second || !s.Next.Equal(t0.Add(51*time.Second)) {
		t.Fatalf("status %+v: want registered for 60 s, refreshing at +51 s", s)
	}
	if s.Remote != r.Addr.String() {
		t.Errorf("status names the registrar %q, want %q", s.Remote, r.Addr.String())
	}

	run.clk.Advance(50 * time.Second)
	select {
	case got := <-r.got:
		t.Fatalf("REGISTER %+v before the refresh was due", got)
	default:
	}
	run.clk.Advance(time.Second)
	refresh := r.next(t)
	if refresh.callID != challenged.callID || refresh.cseq <= answered.cseq {
		t.Errorf("refresh %+v: want the Call-ID %q and a CSeq above %d", refresh, challenged.callID, answered.cseq)
	}
	if r.next(t).status != 200 {
		t.Error("the refresh was not accepted")
	}
	if s := run.status(t); !s.Registered || s.Attempts != 2 || !s.Next.Equal(t0.Add(102*time.Second)) {
		t.Errorf("after the refresh: %+v, want registered, 2 attempts, next at +102 s", s)
	}

	if err := run.stop(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if challenged := r.next(t); challenged.expires != 0 || challenged.status != 401 {
		t.Errorf("REGISTER %+v: want Expires: 0, challenged", challenged)
	}
	last := r.next(t)
	if last.expires != 0 || last.status != 200 || !last.authorized || last.callID != challenged.callID {
		t.Errorf("last REGISTER %+v: want an authorized Expires: 0 in the same Call-ID, accepted", last)
	}
	if s := run.reg.Status(); s.Registered {
		t.Errorf("status after stopping: %+v, want not registered", s)
	}
}

// 423 Interval Too Brief: Handset asks again with the registrar's Min-Expires and keeps
// asking for it.
func TestIntervalTooBriefTakesMinExpires(t *testing.T) {
	r := newFakeRegistrar(t, "handset", "s3cret")
	r.set(func(r *fakeRegistrar) { r.minExpires = 900 })
	run := startRegistration(t, r, "s3cret", func(o *Options) { o.Expires = 120 * time.Second })
	s := run.status(t)
	if !s.Registered || s.Granted != 900*time.Second {
		t.Fatalf("status %+v: want registered for 900 s", s)
	}
	var statuses, asked []int
	for range 4 {
		g := r.next(t)
		statuses, asked = append(statuses, g.status), append(asked, g.expires)
	}
	if !slices.Equal(statuses, []int{401, 423, 401, 200}) || !slices.Equal(asked, []int{120, 120, 900, 900}) {
		t.Errorf("answers %v to expiries %v: want 401, 423 to 120 s, then 401, 200 to 900 s", statuses, asked)
	}
	run.clk.Advance(765 * time.Second)
	if g := r.next(t); g.expires != 900 {
		t.Errorf("the refresh asked for %d s, want the registrar's minimum 900", g.expires)
	}
}

// A wrong password is ErrCredentials, whether the registrar says 403 or challenges again,
// and it is retried only after RetryMax; nothing is left to un-register.
func TestWrongPasswordIsCredentials(t *testing.T) {
	for _, rechallenge := range []bool{false, true} {
		r := newFakeRegistrar(t, "handset", "s3cret")
		r.set(func(r *fakeRegistrar) { r.rechallenge = rechallenge })
		run := startRegistration(t, r, "guess", func(o *Options) { o.RetryMax = time.Hour })
		s := run.status(t)
		if s.Registered || !errors.Is(s.Err, ErrCredentials) || !s.Next.Equal(t0.Add(time.Hour)) {
			t.Errorf("rechallenge=%v: status %+v, want ErrCredentials and a retry in an hour", rechallenge, s)
		}
		if err := run.stop(t); err != nil {
			t.Errorf("Run: %v", err)
		}
		first, answer := r.next(t), r.next(t)
		if first.status != 401 || answer.authorized || len(r.got) != 0 {
			t.Errorf("rechallenge=%v: the registrar got %+v, %+v and %d more; want the first and its answer only",
				rechallenge, first, answer, len(r.got))
		}
	}
}

// 503 with Retry-After: unreachable, and the next attempt waits as long as asked, up to
// RetryMax.
func TestUnavailableWithRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		retryAfter string
		wait       time.Duration
	}{{"30", 30 * time.Second}, {"45;duration=600 (maintenance)", 45 * time.Second}, {"86400", 2 * time.Minute}, {"soon", 2 * time.Second}} {
		r := newFakeRegistrar(t, "handset", "s3cret")
		r.set(func(r *fakeRegistrar) { r.unavailable = tc.retryAfter })
		run := startRegistration(t, r, "s3cret", func(o *Options) { o.RetryMax = 2 * time.Minute })
		s := run.status(t)
		if !errors.Is(s.Err, ErrUnreachable) || !s.Next.Equal(t0.Add(tc.wait)) {
			t.Errorf("Retry-After %q: %+v, want ErrUnreachable and a retry in %v", tc.retryAfter, s, tc.wait)
		}
		_ = run.stop(t)
	}
}

// A stale nonce is not a wrong password: the answer is computed again for the new nonce.
func TestStaleNonceIsAnsweredAgain(t *testing.T) {
	r := newFakeRegistrar(t, "handset", "s3cret")
	r.set(func(r *fakeRegistrar) { r.staleOnce = true })
	run := startRegistration(t, r, "s3cret", nil)
	if s := run.status(t); !s.Registered || s.Err != nil {
		t.Errorf("status %+v, want registered", s)
	}
	var statuses []int
	for range 3 {
		statuses = append(statuses, r.next(t).status)
	}
	if !slices.Equal(statuses, []int{401, 401, 200}) {
		t.Errorf("answers %v, want 401, 401 stale, 200", statuses)
	}
}

// A registrar challenging a Handset that has no password is ErrCredentials too.
func TestChallengeWithoutPassword(t *testing.T) {
	r := newFakeRegistrar(t, "handset", "s3cret")
	run := startRegistration(t, r, "", nil)
	if s := run.status(t); !errors.Is(s.Err, ErrCredentials) {
		t.Errorf("status %+v, want ErrCredentials", s)
	}
}

// A registrar that goes silent is ErrUnreachable; Handset keeps the binding it still has,
// retries with a doubling delay (never in a loop), and registers again when it is back.
func TestRegistrarAwayAndBack(t *testing.T) {
	r := newFakeRegistrar(t, "handset", "s3cret")
	r.set(func(r *fakeRegistrar) { r.grant = 60 })
	run := startRegistration(t, r, "s3cret", func(o *Options) {
		o.Timeout = 300 * time.Millisecond
		o.RetryMin, o.RetryMax = 2*time.Second, 4*time.Second
	})
	if s := run.status(t); !s.Registered {
		t.Fatalf("status %+v, want registered", s)
	}
	r.set(func(r *fakeRegistrar) { r.away = true })

	now := t0
	for i, want := range []time.Duration{2 * time.Second, 4 * time.Second, 4 * time.Second} {
		if i == 0 {
			now = now.Add(51 * time.Second)
			run.clk.Set(now)
		}
		s := run.status(t)
		if !errors.Is(s.Err, ErrUnreachable) || !s.Next.Equal(now.Add(want)) {
			t.Fatalf("failure %d: %+v, want ErrUnreachable and a retry in %v", i+1, s, want)
		}
		if lapsed := !now.Before(t0.Add(60 * time.Second)); s.Registered == lapsed {
			t.Errorf("failure %d at +%v: registered=%v, want %v until the granted 60 s lapse", i+1, now.Sub(t0), s.Registered, !lapsed)
		}
		if i < 2 {
			now = now.Add(want)
			run.clk.Set(now)
		}
	}
	r.set(func(r *fakeRegistrar) { r.away = false })
	now = now.Add(4 * time.Second)
	run.clk.Set(now)
	if s := run.status(t); !s.Registered || s.Err != nil || s.Attempts != 5 {
		t.Errorf("after the registrar came back: %+v, want registered after 5 attempts", s)
	}
}
