package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/store"
)

// ---- jobs ----

func enqueue(t *testing.T, s store.Store, j store.NewJob) store.Job {
	t.Helper()
	got, err := s.Enqueue(ctxOf(t), j)
	must(t, "Enqueue", err)
	return got
}

func getJob(t *testing.T, s store.Store, id int64) store.Job {
	t.Helper()
	j, err := s.Job(ctxOf(t), id)
	must(t, "Job", err)
	return j
}

func claim(t *testing.T, s store.Store, owner string, kinds []string, lease time.Duration, now time.Time) (store.Job, bool) {
	t.Helper()
	j, ok, err := s.Claim(ctxOf(t), owner, kinds, lease, now)
	must(t, "Claim", err)
	return j, ok
}

func mustClaim(t *testing.T, s store.Store, owner string, lease time.Duration, now time.Time) store.Job {
	t.Helper()
	j, ok := claim(t, s, owner, nil, lease, now)
	if !ok {
		t.Fatalf("Claim(%s, now %v): nothing due", owner, now)
	}
	return j
}

func noClaim(t *testing.T, s store.Store, owner string, kinds []string, now time.Time) {
	t.Helper()
	if j, ok := claim(t, s, owner, kinds, time.Minute, now); ok {
		t.Fatalf("Claim(%s, %v, now %v) = job %d (%s), want none due", owner, kinds, now, j.ID, j.State)
	}
}

func testJobEnqueueDefaults(t *testing.T, s store.Store) {
	j := enqueue(t, s, store.NewJob{Kind: "outbound_call", Payload: []byte(`{"to":"+15550001111"}`), RunAt: at(0)})
	if j.ID == 0 {
		t.Error("Enqueue returned id 0")
	}
	if j.Kind != "outbound_call" || !bytes.Equal(j.Payload, []byte(`{"to":"+15550001111"}`)) {
		t.Errorf("kind/payload = %q %s", j.Kind, j.Payload)
	}
	if j.State != store.JobPending || j.MaxAttempts != 3 || j.Attempts != 0 || j.Version <= 0 {
		t.Errorf("new job = state %q max %d attempts %d version %d, want pending, 3, 0, >0", j.State, j.MaxAttempts, j.Attempts, j.Version)
	}
	if !j.RunAt.Equal(at(0)) || j.LeaseOwner != "" || !j.LeaseUntil.IsZero() || len(j.Result) != 0 || j.Error != "" || j.DedupeKey != "" {
		t.Errorf("new job = %+v", j)
	}
	if j.CreatedAt.IsZero() || j.UpdatedAt.IsZero() {
		t.Errorf("new job without CreatedAt/UpdatedAt: %+v", j)
	}
	if d := cmp.Diff(j, getJob(t, s, j.ID), cmpOpts...); d != "" {
		t.Errorf("Job differs from what Enqueue returned (-enqueue +job):\n%s", d)
	}
}

func testJobEnqueueExplicit(t *testing.T, s store.Store) {
	j := enqueue(t, s, store.NewJob{Kind: "deliver", Payload: []byte(`{}`), RunAt: at(time.Hour), MaxAttempts: 7, DedupeKey: "d-1"})
	if j.MaxAttempts != 7 || j.DedupeKey != "d-1" || !j.RunAt.Equal(at(time.Hour)) {
		t.Errorf("job = %+v", j)
	}
	j2 := enqueue(t, s, store.NewJob{Kind: "deliver", RunAt: at(0)})
	if j2.ID == j.ID {
		t.Errorf("two jobs share id %d", j.ID)
	}
}

func testJobDedupe(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	first := enqueue(t, s, store.NewJob{Kind: "handoff", RunAt: at(0), DedupeKey: "call-c1-handoff"})
	_, err := s.Enqueue(ctx, store.NewJob{Kind: "handoff", RunAt: at(time.Minute), DedupeKey: "call-c1-handoff"})
	wantErr(t, "Enqueue(same dedupe key)", err, store.ErrDuplicate)
	// still a duplicate once the first one is done
	got := mustClaim(t, s, "w1", time.Minute, at(0))
	must(t, "Complete", s.Complete(ctx, got.ID, "w1", []byte(`{}`), at(time.Second)))
	_, err = s.Enqueue(ctx, store.NewJob{Kind: "handoff", RunAt: at(time.Minute), DedupeKey: "call-c1-handoff"})
	wantErr(t, "Enqueue(same dedupe key, first completed)", err, store.ErrDuplicate)
	// jobs without a key never collide
	enqueue(t, s, store.NewJob{Kind: "handoff", RunAt: at(0)})
	enqueue(t, s, store.NewJob{Kind: "handoff", RunAt: at(0)})
	jobs, err := s.Jobs(ctx, store.ListJobs{})
	must(t, "Jobs", err)
	if len(jobs) != 3 || jobs[0].ID != first.ID {
		t.Errorf("Jobs after dedupe = %d jobs", len(jobs))
	}
}

func testJobNotFound(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	_, err := s.Job(ctx, 424242)
	wantErr(t, "Job", err, store.ErrNotFound)
	// a transition on a job that does not exist is an error: not found, or not ours
	for name, err := range map[string]error{
		"Heartbeat": s.Heartbeat(ctx, 424242, "w1", time.Minute, at(0)),
		"Complete":  s.Complete(ctx, 424242, "w1", nil, at(0)),
		"Fail":      s.Fail(ctx, 424242, "w1", "boom", time.Time{}, at(0)),
	} {
		if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s(unknown job) = %v, want ErrNotFound or ErrLeaseLost", name, err)
		}
	}
}

func testJobClaimRunAt(t *testing.T, s store.Store) {
	j := enqueue(t, s, store.NewJob{Kind: "outbound_call", Payload: []byte(`{"n":1}`), RunAt: at(time.Minute)})
	noClaim(t, s, "w1", nil, at(0))
	noClaim(t, s, "w1", nil, at(time.Minute-time.Microsecond))
	got := mustClaim(t, s, "w1", 30*time.Second, at(time.Minute)) // RunAt has come
	if got.ID != j.ID || got.State != store.JobRunning || got.LeaseOwner != "w1" || got.Attempts != 1 {
		t.Errorf("claimed = %+v", got)
	}
	if !got.LeaseUntil.Equal(at(time.Minute + 30*time.Second)) {
		t.Errorf("LeaseUntil = %v, want now+lease %v", got.LeaseUntil, at(time.Minute+30*time.Second))
	}
	if got.Version <= j.Version {
		t.Errorf("Version %d not bumped past %d", got.Version, j.Version)
	}
	if !bytes.Equal(got.Payload, j.Payload) || got.Kind != j.Kind || got.MaxAttempts != 3 {
		t.Errorf("claimed job lost its fields: %+v", got)
	}
	if d := cmp.Diff(got, getJob(t, s, j.ID), cmpOpts...); d != "" {
		t.Errorf("Job differs from what Claim returned (-claim +job):\n%s", d)
	}
	noClaim(t, s, "w2", nil, at(time.Minute)) // nothing else is due
}

func testJobClaimZeroRunAt(t *testing.T, s store.Store) {
	j := enqueue(t, s, store.NewJob{Kind: "deliver"}) // no RunAt: due at once
	got, ok := claim(t, s, "w1", nil, time.Minute, time.Now().Add(time.Second))
	if !ok || got.ID != j.ID {
		t.Errorf("a job without RunAt was not due: ok %v, job %+v", ok, got)
	}
}

func testJobClaimOrder(t *testing.T, s store.Store) {
	late := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(2 * time.Minute)})
	early := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(time.Minute)})
	notYet := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(time.Hour)})
	now := at(10 * time.Minute)
	if got := mustClaim(t, s, "w1", 24*time.Hour, now); got.ID != early.ID {
		t.Errorf("first claim = job %d, want the earliest due %d", got.ID, early.ID)
	}
	if got := mustClaim(t, s, "w1", 24*time.Hour, now); got.ID != late.ID {
		t.Errorf("second claim = job %d, want %d", got.ID, late.ID)
	}
	noClaim(t, s, "w1", nil, now)
	if got := mustClaim(t, s, "w1", time.Minute, at(time.Hour)); got.ID != notYet.ID {
		t.Errorf("third claim = job %d, want %d", got.ID, notYet.ID)
	}
}

func testJobClaimKinds(t *testing.T, s store.Store) {
	call := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0)})
	xfer := enqueue(t, s, store.NewJob{Kind: "transfer", RunAt: at(time.Second)})
	deliver := enqueue(t, s, store.NewJob{Kind: "deliver", RunAt: at(2 * time.Second)})
	now := at(time.Minute)
	noClaim(t, s, "w1", []string{"handoff"}, now)
	got, ok := claim(t, s, "w1", []string{"transfer"}, time.Minute, now)
	if !ok || got.ID != xfer.ID {
		t.Errorf("Claim(transfer) = %v %+v, want job %d", ok, got, xfer.ID)
	}
	got, ok = claim(t, s, "w1", []string{"deliver", "handoff"}, time.Minute, now)
	if !ok || got.ID != deliver.ID {
		t.Errorf("Claim(deliver, handoff) = %v %+v, want job %d", ok, got, deliver.ID)
	}
	noClaim(t, s, "w1", []string{"transfer", "deliver"}, now)
	got, ok = claim(t, s, "w1", nil, time.Minute, now) // all kinds
	if !ok || got.ID != call.ID {
		t.Errorf("Claim(all) = %v %+v, want job %d", ok, got, call.ID)
	}
	got, ok = claim(t, s, "w1", []string{}, time.Minute, now)
	if ok {
		t.Errorf("Claim(empty kinds) found job %d after all were claimed", got.ID)
	}
}

func testJobClaimLeased(t *testing.T, s store.Store) {
	enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	mustClaim(t, s, "w1", time.Minute, at(0))
	noClaim(t, s, "w2", nil, at(30*time.Second))
	noClaim(t, s, "w1", nil, at(59*time.Second))
}

func testJobHeartbeat(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	c := mustClaim(t, s, "w1", time.Minute, at(0))
	must(t, "Heartbeat", s.Heartbeat(ctx, j.ID, "w1", 2*time.Minute, at(50*time.Second)))
	hb := getJob(t, s, j.ID)
	if !hb.LeaseUntil.Equal(at(170*time.Second)) || hb.State != store.JobRunning || hb.LeaseOwner != "w1" || hb.Attempts != 1 {
		t.Errorf("after heartbeat = %+v, want lease until %v", hb, at(170*time.Second))
	}
	if hb.Version < c.Version {
		t.Errorf("Heartbeat moved Version back: %d after %d", hb.Version, c.Version)
	}
	// the old lease would have expired by now; the extended one has not
	noClaim(t, s, "w2", nil, at(90*time.Second))
	wantErr(t, "Heartbeat(wrong owner)", s.Heartbeat(ctx, j.ID, "w2", time.Minute, at(100*time.Second)), store.ErrLeaseLost)
	if got := getJob(t, s, j.ID); !got.LeaseUntil.Equal(at(170*time.Second)) || got.LeaseOwner != "w1" {
		t.Errorf("a wrong owner's heartbeat changed the lease: %+v", got)
	}
	must(t, "Complete", s.Complete(ctx, j.ID, "w1", nil, at(110*time.Second)))
	wantErr(t, "Heartbeat(completed)", s.Heartbeat(ctx, j.ID, "w1", time.Minute, at(120*time.Second)), store.ErrLeaseLost)
}

func testJobComplete(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	c := mustClaim(t, s, "w1", time.Minute, at(0))
	must(t, "Complete", s.Complete(ctx, j.ID, "w1", []byte(`{"ok":true}`), at(10*time.Second)))
	got := getJob(t, s, j.ID)
	if got.State != store.JobCompleted || !bytes.Equal(got.Result, []byte(`{"ok":true}`)) || got.Attempts != 1 || got.Error != "" {
		t.Errorf("completed job = %+v", got)
	}
	if got.Version <= c.Version {
		t.Errorf("Complete did not bump Version: %d after %d", got.Version, c.Version)
	}
	if !got.UpdatedAt.Equal(at(10 * time.Second)) {
		t.Errorf("UpdatedAt = %v, want the completion time %v", got.UpdatedAt, at(10*time.Second))
	}
	// finished: no second completion, no failure, never claimed again
	wantErr(t, "Complete again", s.Complete(ctx, j.ID, "w1", []byte(`{"ok":false}`), at(11*time.Second)), store.ErrLeaseLost)
	wantErr(t, "Fail after Complete", s.Fail(ctx, j.ID, "w1", "boom", at(time.Hour), at(11*time.Second)), store.ErrLeaseLost)
	noClaim(t, s, "w2", nil, at(24*time.Hour))
	if again := getJob(t, s, j.ID); again.State != store.JobCompleted || !bytes.Equal(again.Result, []byte(`{"ok":true}`)) || again.Version != got.Version {
		t.Errorf("a refused transition changed the job: %+v", again)
	}
}

func testJobWrongOwner(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	// pending: nobody owns it
	wantErr(t, "Complete(pending)", s.Complete(ctx, j.ID, "w1", nil, at(0)), store.ErrLeaseLost)
	wantErr(t, "Fail(pending)", s.Fail(ctx, j.ID, "w1", "boom", time.Time{}, at(0)), store.ErrLeaseLost)
	wantErr(t, "Heartbeat(pending)", s.Heartbeat(ctx, j.ID, "w1", time.Minute, at(0)), store.ErrLeaseLost)
	c := mustClaim(t, s, "w1", time.Minute, at(0))
	wantErr(t, "Complete(wrong owner)", s.Complete(ctx, j.ID, "w2", []byte(`{}`), at(time.Second)), store.ErrLeaseLost)
	wantErr(t, "Fail(wrong owner)", s.Fail(ctx, j.ID, "w2", "boom", time.Time{}, at(time.Second)), store.ErrLeaseLost)
	got := getJob(t, s, j.ID)
	if got.State != store.JobRunning || got.LeaseOwner != "w1" || got.Version != c.Version {
		t.Errorf("a wrong owner changed the job: %+v", got)
	}
	must(t, "Complete", s.Complete(ctx, j.ID, "w1", []byte(`{}`), at(2*time.Second)))
}

// testJobReclaim is the compare-and-set: w1's node stalls past its lease, w2 reclaims the
// job and finishes it, and w1 waking up can change nothing.
func testJobReclaim(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "outbound_call", Payload: []byte(`{"to":"+1"}`), RunAt: at(0)})
	first := mustClaim(t, s, "w1", 30*time.Second, at(0))
	noClaim(t, s, "w2", nil, at(29*time.Second))
	second := mustClaim(t, s, "w2", 30*time.Second, at(31*time.Second)) // w1's lease expired: reclaimed
	if second.ID != j.ID || second.LeaseOwner != "w2" || second.Attempts != 2 || second.State != store.JobRunning {
		t.Fatalf("reclaimed = %+v, want job %d owned by w2 on attempt 2", second, j.ID)
	}
	if !second.LeaseUntil.Equal(at(61*time.Second)) || second.Version <= first.Version {
		t.Errorf("reclaimed lease until %v version %d (first %d)", second.LeaseUntil, second.Version, first.Version)
	}
	// the stale owner can do nothing while w2 holds it …
	wantErr(t, "Heartbeat(stale owner)", s.Heartbeat(ctx, j.ID, "w1", time.Minute, at(32*time.Second)), store.ErrLeaseLost)
	wantErr(t, "Fail(stale owner)", s.Fail(ctx, j.ID, "w1", "timeout", at(time.Hour), at(32*time.Second)), store.ErrLeaseLost)
	wantErr(t, "Complete(stale owner)", s.Complete(ctx, j.ID, "w1", []byte(`"stale"`), at(33*time.Second)), store.ErrLeaseLost)
	if got := getJob(t, s, j.ID); got.LeaseOwner != "w2" || got.State != store.JobRunning || got.Version != second.Version {
		t.Errorf("the stale owner changed the job: %+v", got)
	}
	// … and after w2 finished: the winner's result stands
	must(t, "Complete(w2)", s.Complete(ctx, j.ID, "w2", []byte(`"winner"`), at(40*time.Second)))
	wantErr(t, "Complete(stale owner, after)", s.Complete(ctx, j.ID, "w1", []byte(`"stale"`), at(41*time.Second)), store.ErrLeaseLost)
	wantErr(t, "Fail(stale owner, after)", s.Fail(ctx, j.ID, "w1", "timeout", time.Time{}, at(41*time.Second)), store.ErrLeaseLost)
	got := getJob(t, s, j.ID)
	if got.State != store.JobCompleted || !bytes.Equal(got.Result, []byte(`"winner"`)) || got.Error != "" || got.Attempts != 2 {
		t.Errorf("after the race = %+v, want completed with w2's result", got)
	}
}

// testJobExpiredNotReclaimed: a lease that ran out is still its owner's until another
// owner reclaims the job (ErrLeaseLost: "expired and reclaimed, or finished").
func testJobExpiredNotReclaimed(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	mustClaim(t, s, "w1", 10*time.Second, at(0))
	must(t, "Complete(late)", s.Complete(ctx, j.ID, "w1", []byte(`1`), at(time.Minute)))
	if got := getJob(t, s, j.ID); got.State != store.JobCompleted {
		t.Errorf("late completion = %+v", got)
	}
}

// testJobReclaimCapped: a job whose node dies on every attempt is failed when its last
// lease expires, not reclaimed a MaxAttempts+1st time.
func testJobReclaimCapped(t *testing.T, s store.Store) {
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0), MaxAttempts: 2})
	mustClaim(t, s, "dead-1", time.Second, at(0))
	mustClaim(t, s, "dead-2", time.Second, at(2*time.Second)) // reclaimed: attempt 2
	noClaim(t, s, "w3", nil, at(4*time.Second))
	got := getJob(t, s, j.ID)
	if got.State != store.JobFailed || got.Attempts != 2 || !strings.Contains(got.Error, "lease expired") || !strings.Contains(got.Error, "dead-2") {
		t.Errorf("after the last lease expired = %+v, want failed after 2 attempts naming dead-2", got)
	}
}

func testJobFailRetry(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0)})
	c := mustClaim(t, s, "w1", time.Minute, at(0))
	retryAt := at(10*time.Second + store.Backoff(1))
	must(t, "Fail", s.Fail(ctx, j.ID, "w1", "busy", retryAt, at(10*time.Second)))
	got := getJob(t, s, j.ID)
	if got.State != store.JobPending || got.Error != "busy" || got.Attempts != 1 || !got.RunAt.Equal(retryAt) {
		t.Errorf("after a retryable failure = %+v, want pending until %v with error busy", got, retryAt)
	}
	if got.Version <= c.Version {
		t.Errorf("Fail did not bump Version")
	}
	wantErr(t, "Complete(after Fail)", s.Complete(ctx, j.ID, "w1", nil, at(11*time.Second)), store.ErrLeaseLost)
	noClaim(t, s, "w1", nil, retryAt.Add(-time.Microsecond))
	again := mustClaim(t, s, "w2", time.Minute, retryAt)
	if again.ID != j.ID || again.Attempts != 2 || again.LeaseOwner != "w2" {
		t.Errorf("retry claim = %+v", again)
	}
	must(t, "Complete", s.Complete(ctx, j.ID, "w2", []byte(`{"sid":"CA1"}`), retryAt.Add(time.Second)))
	if got := getJob(t, s, j.ID); got.State != store.JobCompleted || !bytes.Equal(got.Result, []byte(`{"sid":"CA1"}`)) {
		t.Errorf("completed after retry = %+v", got)
	}
}

func testJobFailFinal(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	mustClaim(t, s, "w1", time.Minute, at(0))
	must(t, "Fail", s.Fail(ctx, j.ID, "w1", "invalid number", time.Time{}, at(time.Second))) // no retry
	got := getJob(t, s, j.ID)
	if got.State != store.JobFailed || got.Error != "invalid number" || got.Attempts != 1 {
		t.Errorf("after a final failure = %+v", got)
	}
	noClaim(t, s, "w1", nil, at(24*time.Hour))
	wantErr(t, "Fail again", s.Fail(ctx, j.ID, "w1", "again", time.Time{}, at(2*time.Second)), store.ErrLeaseLost)
	wantErr(t, "Complete(failed)", s.Complete(ctx, j.ID, "w1", nil, at(2*time.Second)), store.ErrLeaseLost)
	if again := getJob(t, s, j.ID); again.State != store.JobFailed || again.Error != "invalid number" {
		t.Errorf("a refused transition changed the failed job: %+v", again)
	}
}

func testJobFailAttemptsUsedUp(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0), MaxAttempts: 2})
	mustClaim(t, s, "w1", time.Minute, at(0))
	must(t, "Fail 1", s.Fail(ctx, j.ID, "w1", "e1", at(time.Minute), at(time.Second)))
	if got := getJob(t, s, j.ID); got.State != store.JobPending {
		t.Fatalf("after attempt 1 of 2 = %+v, want pending", got)
	}
	c := mustClaim(t, s, "w1", time.Minute, at(time.Minute))
	if c.Attempts != 2 {
		t.Errorf("attempts = %d, want 2", c.Attempts)
	}
	must(t, "Fail 2", s.Fail(ctx, j.ID, "w1", "e2", at(time.Hour), at(61*time.Second))) // retryAt, but no attempts left
	got := getJob(t, s, j.ID)
	if got.State != store.JobFailed || got.Error != "e2" || got.Attempts != 2 {
		t.Errorf("after the last attempt = %+v, want failed with e2", got)
	}
	noClaim(t, s, "w1", nil, at(2*time.Hour))
}

func jobIDs(js []store.Job) []int64 {
	ids := make([]int64, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	return ids
}

func testJobList(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	a := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(3 * time.Minute)})
	b := enqueue(t, s, store.NewJob{Kind: "deliver", RunAt: at(0)})
	c := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(time.Minute)})
	d := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(2 * time.Minute)})
	// b completed, c running, a and d pending
	mustClaim(t, s, "w1", time.Hour, at(0))
	must(t, "Complete", s.Complete(ctx, b.ID, "w1", nil, at(time.Second)))
	if got := mustClaim(t, s, "w1", time.Hour, at(time.Minute)); got.ID != c.ID {
		t.Fatalf("claimed %d, want %d", got.ID, c.ID)
	}
	cases := []struct {
		f    store.ListJobs
		want []int64
	}{
		{store.ListJobs{}, []int64{a.ID, b.ID, c.ID, d.ID}}, // oldest first
		{store.ListJobs{Limit: 2}, []int64{a.ID, b.ID}},
		{store.ListJobs{State: store.JobPending}, []int64{a.ID, d.ID}},
		{store.ListJobs{State: store.JobRunning}, []int64{c.ID}},
		{store.ListJobs{State: store.JobCompleted}, []int64{b.ID}},
		{store.ListJobs{State: store.JobFailed}, nil},
		{store.ListJobs{Kind: "outbound_call"}, []int64{a.ID, c.ID, d.ID}},
		{store.ListJobs{Kind: "outbound_call", State: store.JobPending, Limit: 1}, []int64{a.ID}},
		{store.ListJobs{Kind: "handoff"}, nil},
	}
	for _, tc := range cases {
		got, err := s.Jobs(ctx, tc.f)
		must(t, "Jobs", err)
		if d := cmp.Diff(tc.want, jobIDs(got), cmpOpts...); d != "" {
			t.Errorf("Jobs(%+v) (-want +got):\n%s", tc.f, d)
		}
	}
	// listed jobs are whole
	got, err := s.Jobs(ctx, store.ListJobs{State: store.JobRunning})
	must(t, "Jobs", err)
	if d := cmp.Diff(getJob(t, s, c.ID), got[0], cmpOpts...); d != "" {
		t.Errorf("listed job differs from Job (-job +listed):\n%s", d)
	}
}

func testJobListDefaultLimit(t *testing.T, s store.Store) {
	for range 110 {
		enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	}
	got, err := s.Jobs(ctxOf(t), store.ListJobs{})
	must(t, "Jobs", err)
	if len(got) != 100 {
		t.Errorf("Jobs() returned %d jobs, want the default limit of 100", len(got))
	}
}

// testJobConcurrentClaim: 8 workers claim and complete 200 jobs at the same instant with
// a long lease: every job is claimed once and completed once.
func testJobConcurrentClaim(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	const jobs, workers = 200, 8
	want := map[int64]bool{}
	for i := range jobs {
		j := enqueue(t, s, store.NewJob{Kind: "k", Payload: fmt.Appendf(nil, `{"i":%d}`, i), RunAt: at(time.Duration(i) * time.Microsecond)})
		want[j.ID] = true
	}
	now := at(time.Second)
	var (
		mu      sync.Mutex
		claimed = map[int64]string{}
		errs    []error
		wg      sync.WaitGroup
	)
	for w := range workers {
		owner := fmt.Sprintf("worker-%d", w)
		wg.Go(func() {
			for {
				j, ok, err := s.Claim(ctx, owner, nil, time.Hour, now)
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: Claim: %w", owner, err))
					mu.Unlock()
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				if prev, dup := claimed[j.ID]; dup {
					errs = append(errs, fmt.Errorf("job %d claimed by %s while leased to %s", j.ID, owner, prev))
				}
				claimed[j.ID] = owner
				mu.Unlock()
				if err := s.Complete(ctx, j.ID, owner, j.Payload, now); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: Complete(%d): %w", owner, j.ID, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(claimed) != jobs {
		t.Errorf("%d jobs claimed, want %d", len(claimed), jobs)
	}
	all, err := s.Jobs(ctx, store.ListJobs{State: store.JobCompleted, Limit: 1000})
	must(t, "Jobs", err)
	if len(all) != jobs {
		t.Errorf("%d jobs completed, want %d", len(all), jobs)
	}
	for _, j := range all {
		if !want[j.ID] || j.Attempts != 1 || j.LeaseOwner != "" && j.LeaseOwner != claimed[j.ID] || !bytes.Equal(j.Result, j.Payload) {
			t.Errorf("job %d: attempts %d owner %q (claimed by %q) result %s payload %s", j.ID, j.Attempts, j.LeaseOwner, claimed[j.ID], j.Result, j.Payload)
		}
	}
	noClaim(t, s, "late", nil, at(24*time.Hour))
}
