// Package jobs runs Handset's durable work: outbound calls (one number, a dialer list, a
// callback delivery), transfers of live calls to a human, and handoffs of a conversation to
// another channel. Each is a store job (pending -> running -> completed | failed) that a
// node's Runner claims with a lease, keeps alive with heartbeats, checkpoints where a
// repeat would be a side effect (a call placed twice), and finishes with a compare-and-set,
// so one job runs once however many nodes share the store.
package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Handler runs one job. Its result is saved as the job's JSON result. It must return when
// ctx ends (shutdown, or the lease was lost to another node).
type Handler func(ctx context.Context, l *Lease) (result any, err error)

// Kind is how one kind of job runs on this node.
type Kind struct {
	Run Handler
	// Limit is how many jobs of the kind may run at once on this node (default 4).
	Limit int
	// Throttle, when set, decides whether one more may start now.
	Throttle Throttle
}

// Throttle holds back claims of a kind: quiet hours, a rate limit.
type Throttle interface {
	// Ready reports whether a job may start at now.
	Ready(now time.Time) bool
	// Took records that one started at now.
	Took(now time.Time)
}

// Options configure a Runner.
type Options struct {
	Store store.Store
	// Owner names this node in leases and calls; unique per process.
	Owner string
	Kinds map[string]Kind
	// Lease is how long a claim lasts without a heartbeat (default 30s): a node that dies
	// holding a job gives it up this long after its last heartbeat.
	Lease time.Duration
	// Poll is how often the store is asked for due work (default 1s); Wake asks at once.
	Poll    time.Duration
	Clock   clock.Clock
	Logger  *slog.Logger
	Metrics *obs.Metrics // counts finished jobs; nil: none
}

// Runner claims and runs jobs until stopped. Create with NewRunner, then Run once.
type Runner struct {
	o    Options
	log  *slog.Logger
	wake chan struct{} // size 1: one pending wake-up is enough

	mu      sync.Mutex     // guards following
	running map[string]int // jobs in hand by kind
	held    map[int64]bool // jobs in hand by id
	wg      sync.WaitGroup
	cancel  context.CancelFunc // stops the handlers (after the drain)
}

// NewRunner checks o and returns a runner.
func NewRunner(o Options) (*Runner, error) {
	if o.Store == nil || o.Owner == "" || len(o.Kinds) == 0 {
		return nil, errors.New("jobs: a runner needs a store, an owner and at least one kind")
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for name, k := range o.Kinds {
		if k.Run == nil {
			return nil, fmt.Errorf("jobs: kind %q has no handler", name)
		}
		if k.Limit <= 0 {
			k.Limit = 4
			o.Kinds[name] = k
		}
	}
	return &Runner{o: o, log: o.Logger.With("node", o.Owner), wake: make(chan struct{}, 1), running: map[string]int{}, held: map[int64]bool{}}, nil
}

// Wake makes the runner look for work now (a job was just queued on this node).
func (r *Runner) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run claims and runs jobs until ctx ends, then waits up to drain for the jobs in hand
// to finish before cancelling them. A cancelled job is left to its lease: another node (or
// this one, restarted) resumes it from its checkpoint.
func (r *Runner) Run(ctx context.Context, drain time.Duration) {
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	defer cancel()
	timer := r.o.Clock.NewTimer(r.o.Poll)
	defer timer.Stop()
	for {
		r.claimAll(ctx, hctx)
		select {
		case <-ctx.Done():
			r.finish(drain)
			return
		case <-r.wake:
		case <-timer.C():
		}
		timer.Reset(r.o.Poll)
	}
}

// finish waits for running handlers up to drain, then cancels the rest and waits.
func (r *Runner) finish(drain time.Duration) {
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	t := r.o.Clock.NewTimer(drain)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C():
	}
	r.cancel()
	<-done
}

// claimAll claims jobs until none is due or every ready kind is at its limit.
func (r *Runner) claimAll(ctx, hctx context.Context) {
	for ctx.Err() == nil {
		now := r.o.Clock.Now()
		kinds := r.readyKinds(now)
		if len(kinds) == 0 {
			return
		}
		j, ok, err := r.o.Store.Claim(ctx, r.o.Owner, kinds, r.o.Lease, now)
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("jobs: claim failed", "err", err)
			}
			return
		}
		if !ok {
			return
		}
		r.start(hctx, j, now)
	}
}

// readyKinds are the kinds with a free slot whose throttle lets one start, sorted so the
// claim query is the same each time.
func (r *Runner) readyKinds(now time.Time) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var kinds []string
	for name, k := range r.o.Kinds {
		if r.running[name] < k.Limit && (k.Throttle == nil || k.Throttle.Ready(now)) {
			kinds = append(kinds, name)
		}
	}
	sort.Strings(kinds)
	return kinds
}

func (r *Runner) start(hctx context.Context, j store.Job, now time.Time) {
	r.mu.Lock()
	if r.held[j.ID] {
		// Our own lease ran out (heartbeats stalled) and the claim renewed it: the handler
		// already running it goes on, under the same owner.
		r.mu.Unlock()
		r.log.Warn("job reclaimed while still in hand; its handler goes on", "job", j.ID)
		return
	}
	r.held[j.ID] = true
	r.running[j.Kind]++
	r.mu.Unlock()
	k := r.o.Kinds[j.Kind]
	if k.Throttle != nil {
		k.Throttle.Took(now)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.runJob(hctx, k.Run, j)
		r.mu.Lock()
		r.running[j.Kind]--
		delete(r.held, j.ID)
		r.mu.Unlock()
		r.Wake() // a slot is free
	}()
}

// runJob runs one claimed job under heartbeats and records how it ended.
func (r *Runner) runJob(hctx context.Context, run Handler, j store.Job) {
	log := r.log.With("job", j.ID, "kind", j.Kind, "attempt", j.Attempts)
	log.Info("job started")
	ctx, cancel := context.WithCancel(hctx)
	defer cancel()
	lost := make(chan struct{})
	beat := make(chan struct{})
	go func() {
		defer close(beat)
		if r.heartbeat(ctx, j.ID, log) {
			close(lost)
			cancel()
		}
	}()
	l := &Lease{Job: j, r: r}
	result, err := safeRun(ctx, run, l)
	cancel()
	<-beat
	select {
	case <-lost:
		log.Warn("job abandoned: its lease went to another node", "err", err)
		return
	default:
	}
	if hctx.Err() != nil {
		log.Info("job left to its lease: the node is stopping")
		return
	}
	r.record(j, result, err, log)
}

// safeRun runs the handler; a panic fails the job instead of the node.
func safeRun(ctx context.Context, run Handler, l *Lease) (result any, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = Permanent(fmt.Errorf("handler panicked: %v\n%s", v, debug.Stack()))
		}
	}()
	return run(ctx, l)
}

// heartbeat extends the lease every third of it until ctx ends; it reports true when the
// lease was lost (another node has the job now).
func (r *Runner) heartbeat(ctx context.Context, id int64, log *slog.Logger) (lost bool) {
	t := r.o.Clock.NewTimer(r.o.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
		}
		err := r.o.Store.Heartbeat(ctx, id, r.o.Owner, r.o.Lease, r.o.Clock.Now())
		switch {
		case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrNotFound):
			return true
		case err != nil && ctx.Err() == nil:
			log.Warn("job heartbeat failed; retrying", "err", err) // the lease may still hold
		}
		t.Reset(r.o.Lease / 3)
	}
}

// record completes or fails the job with the handler's outcome.
func (r *Runner) record(j store.Job, result any, err error, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	now := r.o.Clock.Now()
	if err == nil {
		data, merr := json.Marshal(result)
		if merr != nil {
			err = Permanent(fmt.Errorf("result is not JSON: %w", merr))
		} else {
			if cerr := r.o.Store.Complete(ctx, j.ID, r.o.Owner, data, now); cerr != nil {
				log.Warn("job done but its result was not saved", "err", cerr)
				return
			}
			log.Info("job completed")
			r.o.Metrics.JobFinished(j.Kind, string(store.JobCompleted))
			return
		}
	}
	retryAt := time.Time{}
	if !IsPermanent(err) && j.Attempts < j.MaxAttempts {
		retryAt = now.Add(retryDelay(err, j.Attempts))
	}
	// The stored error is shown by the API; it may quote an answer from outside.
	if ferr := r.o.Store.Fail(ctx, j.ID, r.o.Owner, voice.Clip(err.Error(), voice.MessageLimit), retryAt, now); ferr != nil {
		log.Warn("job failed and the failure was not saved", "err", err, "save_err", ferr)
		return
	}
	if retryAt.IsZero() {
		log.Warn("job failed", "err", err)
		r.o.Metrics.JobFinished(j.Kind, string(store.JobFailed))
	} else {
		log.Info("job failed; will retry", "err", err, "at", retryAt)
	}
}

// Lease is a claimed job as its handler sees it.
type Lease struct {
	Job store.Job
	r   *Runner
}

// Payload decodes the job's payload into v.
func (l *Lease) Payload(v any) error {
	if err := json.Unmarshal(l.Job.Payload, v); err != nil {
		return Permanent(fmt.Errorf("job %d: payload is not a %s: %w", l.Job.ID, l.Job.Kind, err))
	}
	return nil
}

// Resume decodes the last checkpoint into v; ok is false when there is none.
func (l *Lease) Resume(v any) (ok bool, err error) {
	if len(l.Job.Checkpoint) == 0 || string(l.Job.Checkpoint) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(l.Job.Checkpoint, v); err != nil {
		return false, Permanent(fmt.Errorf("job %d: unreadable checkpoint: %w", l.Job.ID, err))
	}
	return true, nil
}

// Checkpoint saves v as the job's progress; a node that reclaims the job resumes from it.
// An error means the lease is gone or the store is down: stop before the next side effect.
func (l *Lease) Checkpoint(ctx context.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return Permanent(err)
	}
	if err := l.r.o.Store.Checkpoint(ctx, l.Job.ID, l.r.o.Owner, data, l.r.o.Clock.Now()); err != nil {
		return fmt.Errorf("job %d: checkpoint: %w", l.Job.ID, err)
	}
	l.Job.Checkpoint = data
	return nil
}

// Owner is the node running the job.
func (l *Lease) Owner() string { return l.r.o.Owner }

// Now is the runner's clock.
func (l *Lease) Now() time.Time { return l.r.o.Clock.Now() }

// Sleep waits d on the runner's clock, or until ctx ends.
func (l *Lease) Sleep(ctx context.Context, d time.Duration) error {
	t := l.r.o.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Wait polls job id until it is completed or failed, or ctx ends (then it returns the
// job as last seen, with ctx's error).
func Wait(ctx context.Context, st store.Store, id int64) (store.Job, error) {
	const every = 100 * time.Millisecond
	for {
		j, err := st.Job(ctx, id)
		if err != nil {
			return j, err
		}
		if j.State == store.JobCompleted || j.State == store.JobFailed {
			return j, nil
		}
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-time.After(every):
		}
	}
}
