package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "handset.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// startRunner runs a runner until the test ends. The lease is the runner's default unless
// the test is about leases: a short one can run out under a loaded machine's heartbeats.
func startRunner(t *testing.T, o Options) *Runner {
	t.Helper()
	if o.Poll == 0 {
		o.Poll = 20 * time.Millisecond
	}
	r, err := NewRunner(o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx, 0); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

// waitJob waits until job id is completed or failed.
func waitJob(t *testing.T, st store.Store, id int64) store.Job {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j, err := st.Job(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State == store.JobCompleted || j.State == store.JobFailed {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d still %s (attempts %d, error %q)", id, j.State, j.Attempts, j.Error)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func enqueue(t *testing.T, st store.Store, kind, payload string) store.Job {
	t.Helper()
	j, err := st.Enqueue(context.Background(), store.NewJob{Kind: kind, Payload: []byte(payload)})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestRunnerRunsEveryJobOnceWithinItsLimit(t *testing.T) {
	st := openStore(t)
	var mu sync.Mutex
	ran := map[string]int{}
	var inFlight, peak atomic.Int32
	threeIn := make(chan struct{}) // closed once three jobs run at once
	var once sync.Once
	var ids []int64
	for _, w := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		ids = append(ids, enqueue(t, st, "echo", `{"Word":"`+w+`"}`).ID)
	}
	startRunner(t, Options{Store: st, Owner: "node-a", Kinds: map[string]Kind{
		"echo": {Limit: 3, Run: func(ctx context.Context, l *Lease) (any, error) {
			n := inFlight.Add(1)
			defer inFlight.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			if n == 3 {
				once.Do(func() { close(threeIn) })
			}
			// The first jobs wait for each other, so the limit is reached however slowly
			// the runner claims; a runner that ran fewer at once would leave them here.
			select {
			case <-threeIn:
			case <-time.After(10 * time.Second):
				return nil, Permanent(errors.New("three jobs never ran at once"))
			}
			var p struct{ Word string }
			if err := l.Payload(&p); err != nil {
				return nil, err
			}
			mu.Lock()
			ran[p.Word]++
			mu.Unlock()
			time.Sleep(50 * time.Millisecond) // a runner past its limit would claim more meanwhile
			return map[string]string{"said": p.Word}, nil
		}},
	}})
	for i, id := range ids {
		j := waitJob(t, st, id)
		want := `{"said":"` + string(rune('a'+i)) + `"}`
		if j.State != store.JobCompleted || string(j.Result) != want {
			t.Errorf("job %d: %s %s, want completed %s", id, j.State, j.Result, want)
		}
	}
	for w, n := range ran {
		if n != 1 {
			t.Errorf("%q ran %d times", w, n)
		}
	}
	if p := peak.Load(); p != 3 {
		t.Errorf("peak concurrency %d: want 3 (the limit) with 8 jobs waiting", p)
	}
}

func TestRunnerRetriesThenFailsForGood(t *testing.T) {
	st := openStore(t)
	var calls atomic.Int32
	startRunner(t, Options{Store: st, Owner: "node-a", Kinds: map[string]Kind{
		"flaky": {Run: func(ctx context.Context, l *Lease) (any, error) {
			calls.Add(1)
			return nil, RetryAfter(errors.New("busy"), 0) // retry delay comes from store.Backoff
		}},
		"bad": {Run: func(ctx context.Context, l *Lease) (any, error) {
			return nil, Permanent(errors.New("not a phone number"))
		}},
	}})
	bad := enqueue(t, st, "bad", `{}`)
	if j := waitJob(t, st, bad.ID); j.State != store.JobFailed || j.Attempts != 1 || j.Error != "not a phone number" {
		t.Errorf("permanent failure: %s after %d attempts, error %q", j.State, j.Attempts, j.Error)
	}
	before := time.Now()
	flaky := enqueue(t, st, "flaky", `{}`)
	var j store.Job
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if j, _ = st.Job(context.Background(), flaky.ID); j.Attempts == 1 && j.State != store.JobRunning {
			break
		}
	}
	// The failure came between before and now: the retry is 5 s after it.
	backoff := store.Backoff(1)
	if j.State != store.JobPending || j.Error != "busy" || j.RunAt.Before(before.Add(backoff-time.Millisecond)) ||
		j.RunAt.After(time.Now().Add(backoff)) {
		t.Errorf("after a transient failure: %s, error %q, next run %v from now; want pending %v after the failure",
			j.State, j.Error, time.Until(j.RunAt).Round(time.Second), backoff)
	}
}

func TestRunnerHonoursThrottle(t *testing.T) {
	st := openStore(t)
	gate := &switchThrottle{}
	var ran atomic.Int32
	r := startRunner(t, Options{Store: st, Owner: "node-a", Kinds: map[string]Kind{
		"call": {Throttle: gate, Run: func(ctx context.Context, l *Lease) (any, error) { ran.Add(1); return nil, nil }},
	}})
	j := enqueue(t, st, "call", `{}`)
	r.Wake()
	// Several polls, each asking the closed throttle, and then some.
	for deadline := time.Now().Add(10 * time.Second); gate.asked.Load() < 3; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the runner asked the throttle %d times in 10 s", gate.asked.Load())
		}
	}
	if got, _ := st.Job(context.Background(), j.ID); got.State != store.JobPending || ran.Load() != 0 {
		t.Fatalf("a closed throttle let job run: %s, ran %d", got.State, ran.Load())
	}
	gate.open.Store(true)
	if got := waitJob(t, st, j.ID); got.State != store.JobCompleted || gate.took.Load() != 1 {
		t.Errorf("after opening: %s, took %d", got.State, gate.took.Load())
	}
}

type switchThrottle struct {
	open  atomic.Bool
	took  atomic.Int32
	asked atomic.Int32
}

func (s *switchThrottle) Ready(time.Time) bool { s.asked.Add(1); return s.open.Load() }
func (s *switchThrottle) Took(time.Time)       { s.took.Add(1) }

// hung holds every Heartbeat, and every Claim once hang is set, until released: a node
// whose database connection hangs, so its lease runs out under it.
type hung struct {
	store.Store
	hang    atomic.Bool
	release chan struct{}
}

func (s *hung) wait(ctx context.Context) error {
	select {
	case <-s.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *hung) Heartbeat(ctx context.Context, id int64, owner string, lease time.Duration, now time.Time) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Store.Heartbeat(ctx, id, owner, lease, time.Now())
}

func (s *hung) Claim(ctx context.Context, owner string, kinds []string, lease time.Duration, now time.Time) (store.Job, bool, error) {
	if s.hang.Load() {
		if err := s.wait(ctx); err != nil {
			return store.Job{}, false, err
		}
	}
	return s.Store.Claim(ctx, owner, kinds, lease, time.Now())
}

// A node that loses its lease must stop and must not overwrite the result of the node
// that took the job over.
func TestRunnerThatLostItsLeaseWritesNothing(t *testing.T) {
	st := openStore(t)
	stuck := &hung{Store: st, release: make(chan struct{})}
	started := make(chan struct{})
	stopped := make(chan error, 1)
	startRunner(t, Options{Store: stuck, Owner: "node-a", Lease: 300 * time.Millisecond, Kinds: map[string]Kind{
		"call": {Run: func(ctx context.Context, l *Lease) (any, error) {
			stuck.hang.Store(true)
			close(started)
			<-ctx.Done()
			stopped <- ctx.Err()
			return "node-a's result", errors.New("node-a failed it")
		}},
	}})
	j := enqueue(t, st, "call", `{}`)
	<-started
	var taken store.Job
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var ok bool
		var err error
		if taken, ok, err = st.Claim(context.Background(), "node-b", nil, time.Minute, time.Now()); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node-a's lease never expired")
		}
	}
	if taken.ID != j.ID {
		t.Fatalf("node-b took job %d, want %d", taken.ID, j.ID)
	}
	close(stuck.release) // node-a's heartbeat now answers: the lease is gone
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("node-a's handler was not stopped after losing the lease")
	}
	if err := st.Complete(context.Background(), j.ID, "node-b", []byte(`"node-b's result"`), time.Now()); err != nil {
		t.Fatalf("node-b could not complete: %v", err)
	}
	time.Sleep(50 * time.Millisecond) // node-a would write now if it were going to
	if got, _ := st.Job(context.Background(), j.ID); got.State != store.JobCompleted || string(got.Result) != `"node-b's result"` {
		t.Errorf("job = %s %s %q, want node-b's completion", got.State, got.Result, got.Error)
	}
}

// aheadClock is the real clock with its time moved on by d (its timers are real ones).
type aheadClock struct {
	clock.Real
	d time.Duration
}

func (c aheadClock) Now() time.Time { return time.Now().Add(c.d) }

// A job cut off by its node stopping resumes on another node from its checkpoint.
func TestCheckpointCarriesToTheNextNode(t *testing.T) {
	st := openStore(t)
	type progress struct{ Step int }
	stepped := make(chan struct{})
	a, err := NewRunner(Options{Store: st, Owner: "node-a", Poll: 20 * time.Millisecond,
		Kinds: map[string]Kind{"call": {Run: func(ctx context.Context, l *Lease) (any, error) {
			if err := l.Checkpoint(ctx, progress{Step: 1}); err != nil {
				return nil, err
			}
			close(stepped)
			<-ctx.Done()
			return nil, ctx.Err()
		}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stopA := context.WithCancel(context.Background())
	doneA := make(chan struct{})
	go func() { a.Run(ctx, 0); close(doneA) }()
	j := enqueue(t, st, "call", `{}`)
	<-stepped
	stopA() // node-a stops mid-job without finishing it
	<-doneA
	if got, _ := st.Job(context.Background(), j.ID); got.State != store.JobRunning {
		t.Fatalf("a job cut off by shutdown is %s, want left running for its lease to expire", got.State)
	}
	// node-b looks an hour later, long after node-a's lease ran out, so node-a keeps its
	// lease for as long as a loaded machine takes to reach the checkpoint.
	resumed := make(chan progress, 1)
	startRunner(t, Options{Store: st, Owner: "node-b", Clock: aheadClock{d: time.Hour}, Kinds: map[string]Kind{"call": {Run: func(ctx context.Context, l *Lease) (any, error) {
		var p progress
		ok, err := l.Resume(&p)
		if err != nil || !ok {
			return nil, Permanent(errors.New("no checkpoint to resume from"))
		}
		resumed <- p
		return p, nil
	}}}})
	got := waitJob(t, st, j.ID)
	var p progress
	_ = json.Unmarshal(got.Result, &p)
	if got.State != store.JobCompleted || p.Step != 1 || got.LeaseOwner != "node-b" {
		t.Errorf("resumed job = %s %s by %s", got.State, got.Result, got.LeaseOwner)
	}
}

func TestRunnerDrainsBeforeStopping(t *testing.T) {
	st := openStore(t)
	release := make(chan struct{})
	started := make(chan struct{})
	r, err := NewRunner(Options{Store: st, Owner: "node-a", Poll: 20 * time.Millisecond, Kinds: map[string]Kind{
		"call": {Run: func(ctx context.Context, l *Lease) (any, error) {
			close(started)
			select {
			case <-release:
				return "finished in the drain", nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx, 10*time.Second); close(done) }()
	j := enqueue(t, st, "call", `{}`)
	r.Wake()
	<-started
	cancel()
	later := enqueue(t, st, "call", `{}`) // queued during the drain: not claimed
	close(release)
	<-done
	if got, _ := st.Job(context.Background(), j.ID); got.State != store.JobCompleted {
		t.Errorf("the job in hand at shutdown is %s, want completed within the drain", got.State)
	}
	if got, _ := st.Job(context.Background(), later.ID); got.State != store.JobPending {
		t.Errorf("a job queued during the drain is %s, want pending", got.State)
	}
}

// A job's stored error is what the API shows: however long the handler's error (it may
// quote an answer from outside), the store keeps a bounded message.
func TestRunnerStoresABoundedError(t *testing.T) {
	st := openStore(t)
	huge := strings.Repeat("x", 100_000)
	startRunner(t, Options{Store: st, Owner: "n1", Kinds: map[string]Kind{"echo": {Run: func(context.Context, *Lease) (any, error) {
		return nil, Permanent(errors.New("refused: " + huge))
	}}}})
	j := waitJob(t, st, enqueue(t, st, "echo", `{}`).ID)
	if len(j.Error) > 1024 || !strings.HasPrefix(j.Error, "refused: xxx") || !strings.HasSuffix(j.Error, "…") || !Refused(j.Error) {
		t.Errorf("stored error: %d bytes, %.60q…", len(j.Error), j.Error)
	}
}
