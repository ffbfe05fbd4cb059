package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/store"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func enqueueN(t testing.TB, s *Store, n int, kind string, runAt time.Time) map[int64]bool {
	t.Helper()
	ids := map[int64]bool{}
	for i := range n {
		j, err := s.Enqueue(context.Background(), store.NewJob{Kind: kind, Payload: fmt.Appendf(nil, `{"n":%d}`, i), RunAt: runAt})
		if err != nil {
			t.Fatal(err)
		}
		ids[j.ID] = true
	}
	return ids
}

// drain runs workers that claim and complete until nothing is due, and returns how many
// times each job was claimed and the total number of claims.
func drain(t testing.TB, stores []*Store, workersPerStore int, now time.Time) map[int64]int {
	t.Helper()
	var mu sync.Mutex
	claimed := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, len(stores)*workersPerStore)
	for si, s := range stores {
		for w := range workersPerStore {
			owner := fmt.Sprintf("node%d/worker%d", si, w)
			wg.Go(func() {
				ctx := context.Background()
				for {
					j, ok, err := s.Claim(ctx, owner, nil, time.Minute, now)
					if err != nil {
						errs <- err
						return
					}
					if !ok {
						return
					}
					mu.Lock()
					claimed[j.ID]++
					mu.Unlock()
					if j.LeaseOwner != owner || j.State != store.JobRunning || j.Attempts != 1 {
						errs <- fmt.Errorf("claimed %+v as %s", j, owner)
						return
					}
					if err := s.Complete(ctx, j.ID, owner, []byte(`"`+owner+`"`), now); err != nil {
						errs <- fmt.Errorf("complete %d as %s: %w", j.ID, owner, err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return claimed
}

func checkEachOnce(t *testing.T, s *Store, ids map[int64]bool, claimed map[int64]int) {
	t.Helper()
	for id := range ids {
		if claimed[id] != 1 {
			t.Errorf("job %d claimed %d times, want once", id, claimed[id])
		}
	}
	if len(claimed) != len(ids) {
		t.Errorf("claimed %d distinct jobs, want %d", len(claimed), len(ids))
	}
	done, err := s.Jobs(context.Background(), store.ListJobs{State: store.JobCompleted, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != len(ids) {
		t.Errorf("%d jobs completed, want %d", len(done), len(ids))
	}
	for _, j := range done {
		if j.Attempts != 1 || j.Version != 3 || string(j.Result) != `"`+j.LeaseOwner+`"` {
			t.Errorf("completed job %+v: want 1 attempt, version 3, its owner's result", j)
		}
	}
}

func TestClaimConcurrentSkipLocked(t *testing.T) {
	s, _ := openStore(t)
	ids := enqueueN(t, s, 200, "outbound_call", t0)
	start := time.Now()
	claimed := drain(t, []*Store{s}, 8, t0)
	elapsed := time.Since(start)
	checkEachOnce(t, s, ids, claimed)
	t.Logf("8 workers: 200 claim+complete in %v (%.0f jobs/s)", elapsed, 200/elapsed.Seconds())
}

// TestTwoNodes is two Handset nodes (separate pools) sharing one database.
func TestTwoNodes(t *testing.T) {
	a, dbURL := openStore(t)
	b, err := Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ids := enqueueN(t, a, 200, "outbound_call", t0)
	claimed := drain(t, []*Store{a, b}, 4, t0)
	checkEachOnce(t, a, ids, claimed)
	perNode := map[string]int{}
	jobs, _ := b.Jobs(context.Background(), store.ListJobs{Limit: 1000})
	for _, j := range jobs {
		perNode[j.LeaseOwner[:5]]++
	}
	t.Logf("jobs per node: %v", perNode)
}

func TestLeaseLostAfterReclaim(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	j, err := s.Enqueue(ctx, store.NewJob{Kind: "deliver", Payload: []byte(`{"to":"x"}`), RunAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if j.State != store.JobPending || j.MaxAttempts != 3 || j.Version != 1 || !j.RunAt.Equal(t0) {
		t.Fatalf("enqueued %+v", j)
	}

	a, ok, err := s.Claim(ctx, "node-a", nil, time.Minute, t0)
	if err != nil || !ok || a.ID != j.ID {
		t.Fatalf("claim a: %+v %v %v", a, ok, err)
	}
	if !a.LeaseUntil.Equal(t0.Add(time.Minute)) || a.Attempts != 1 {
		t.Fatalf("claim a: %+v", a)
	}
	// Not expired yet: nobody else gets it.
	if _, ok, _ := s.Claim(ctx, "node-b", nil, time.Minute, t0.Add(30*time.Second)); ok {
		t.Fatal("claimed a job whose lease runs")
	}
	// A heartbeat keeps it: still not reclaimable at t0+90s.
	if err := s.Heartbeat(ctx, j.ID, "node-a", time.Minute, t0.Add(45*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Claim(ctx, "node-b", nil, time.Minute, t0.Add(90*time.Second)); ok {
		t.Fatal("claimed a job whose lease was extended")
	}
	// Node a goes quiet; b reclaims after expiry.
	later := t0.Add(3 * time.Minute)
	b, ok, err := s.Claim(ctx, "node-b", nil, time.Minute, later)
	if err != nil || !ok || b.ID != j.ID || b.LeaseOwner != "node-b" || b.Attempts != 2 {
		t.Fatalf("reclaim: %+v %v %v", b, ok, err)
	}
	// a's late writes all lose.
	if err := s.Heartbeat(ctx, j.ID, "node-a", time.Minute, later); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("late heartbeat: %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx, j.ID, "node-a", []byte(`"a"`), later); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("late complete: %v, want ErrLeaseLost", err)
	}
	if err := s.Fail(ctx, j.ID, "node-a", "boom", later.Add(time.Minute), later); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("late fail: %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx, j.ID, "node-b", []byte(`"b"`), later.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	// Finished: a second Complete by the winner loses too, and a's still does.
	if err := s.Complete(ctx, j.ID, "node-b", []byte(`"again"`), later); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("second complete: %v, want ErrLeaseLost", err)
	}
	if err := s.Complete(ctx, j.ID, "node-a", []byte(`"a"`), later); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("late complete after finish: %v, want ErrLeaseLost", err)
	}
	got, err := s.Job(ctx, j.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.JobCompleted || string(got.Result) != `"b"` || got.LeaseOwner != "node-b" ||
		got.Attempts != 2 || got.Version != 5 || !got.UpdatedAt.Equal(later.Add(time.Second)) || string(got.Payload) != `{"to":"x"}` {
		t.Errorf("job after the race: %+v", got)
	}
	// Nothing left to claim.
	if _, ok, _ := s.Claim(ctx, "node-c", nil, time.Minute, later.Add(time.Hour)); ok {
		t.Error("claimed a completed job")
	}
	// Unknown ids.
	if err := s.Complete(ctx, 987654, "node-a", nil, later); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("complete unknown: %v, want ErrNotFound", err)
	}
	if _, err := s.Job(ctx, 987654); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("job unknown: %v, want ErrNotFound", err)
	}
}

// TestCASRace: the old owner's Complete and the new owner's Complete run at the same time,
// many times over; exactly the new owner's stands.
func TestCASRace(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	for i := range 20 {
		j, err := s.Enqueue(ctx, store.NewJob{Kind: "race", RunAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, err := s.Claim(ctx, "old", []string{"race"}, time.Second, t0); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if _, ok, err := s.Claim(ctx, "new", []string{"race"}, time.Minute, t0.Add(time.Minute)); !ok || err != nil {
			t.Fatal(ok, err)
		}
		var oldErr, newErr error
		var wg sync.WaitGroup
		wg.Go(func() { oldErr = s.Complete(ctx, j.ID, "old", []byte(`"old"`), t0.Add(time.Minute)) })
		wg.Go(func() { newErr = s.Complete(ctx, j.ID, "new", []byte(`"new"`), t0.Add(time.Minute)) })
		wg.Wait()
		if !errors.Is(oldErr, store.ErrLeaseLost) || newErr != nil {
			t.Fatalf("round %d: old %v, new %v", i, oldErr, newErr)
		}
		got, _ := s.Job(ctx, j.ID)
		if string(got.Result) != `"new"` {
			t.Fatalf("round %d: result %s", i, got.Result)
		}
	}
}

func TestFailRetry(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	j, _ := s.Enqueue(ctx, store.NewJob{Kind: "outbound_call", RunAt: t0, MaxAttempts: 2})

	c, ok, err := s.Claim(ctx, "w", nil, time.Minute, t0)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	retryAt := t0.Add(store.Backoff(c.Attempts))
	if err := s.Fail(ctx, j.ID, "w", "busy", retryAt, t0); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Job(ctx, j.ID)
	if got.State != store.JobPending || got.Error != "busy" || !got.RunAt.Equal(retryAt) || got.LeaseOwner != "" || !got.LeaseUntil.IsZero() {
		t.Fatalf("after a retryable failure: %+v", got)
	}
	if _, ok, _ := s.Claim(ctx, "w", nil, time.Minute, retryAt.Add(-time.Millisecond)); ok {
		t.Fatal("claimed before retryAt")
	}
	c, ok, err = s.Claim(ctx, "w", nil, time.Minute, retryAt)
	if !ok || err != nil || c.Attempts != 2 {
		t.Fatalf("second claim: %+v %v %v", c, ok, err)
	}
	// No attempts left: failed for good even with a retry time.
	if err := s.Fail(ctx, j.ID, "w", "busy again", retryAt.Add(time.Hour), retryAt); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Job(ctx, j.ID)
	if got.State != store.JobFailed || got.Error != "busy again" || got.Attempts != 2 {
		t.Fatalf("after the last failure: %+v", got)
	}
	if err := s.Fail(ctx, j.ID, "w", "x", time.Time{}, retryAt); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("fail a failed job: %v", err)
	}

	// A zero retryAt fails at once, attempts left or not.
	k, _ := s.Enqueue(ctx, store.NewJob{Kind: "outbound_call", RunAt: t0})
	if _, ok, _ := s.Claim(ctx, "w", nil, time.Minute, t0); !ok {
		t.Fatal("no claim")
	}
	if err := s.Fail(ctx, k.ID, "w", "bad number", time.Time{}, t0); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Job(ctx, k.ID); got.State != store.JobFailed || got.Attempts != 1 {
		t.Errorf("permanent failure: %+v", got)
	}
}

func TestEnqueueAndClaimFilters(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	j1, err := s.Enqueue(ctx, store.NewJob{Kind: "transfer", RunAt: t0, DedupeKey: "call-1/transfer"})
	if err != nil {
		t.Fatal(err)
	}
	if j1.DedupeKey != "call-1/transfer" {
		t.Errorf("dedupe key %q", j1.DedupeKey)
	}
	if _, err := s.Enqueue(ctx, store.NewJob{Kind: "transfer", RunAt: t0, DedupeKey: "call-1/transfer"}); !errors.Is(err, store.ErrDuplicate) {
		t.Errorf("second dedupe key: %v, want ErrDuplicate", err)
	}
	// Jobs without a key never collide.
	for range 3 {
		if _, err := s.Enqueue(ctx, store.NewJob{Kind: "deliver", RunAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	// Zero RunAt: due at once, whatever the claimer's clock says.
	now, err := s.Enqueue(ctx, store.NewJob{Kind: "handoff"})
	if err != nil {
		t.Fatal(err)
	}

	if _, ok, _ := s.Claim(ctx, "w", []string{"deliver"}, time.Minute, t0); ok {
		t.Error("claimed a deliver job before its time")
	}
	if _, ok, _ := s.Claim(ctx, "w", []string{"outbound_call"}, time.Minute, t0.Add(2*time.Hour)); ok {
		t.Error("claimed a kind nobody enqueued")
	}
	c, ok, err := s.Claim(ctx, "w", []string{"handoff"}, time.Minute, time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	if !ok || err != nil || c.ID != now.ID {
		t.Errorf("claim the zero-RunAt job: %+v %v %v", c, ok, err)
	}
	if err := s.Complete(ctx, c.ID, "w", nil, c.RunAt); err != nil {
		t.Fatal(err)
	}
	// Earliest RunAt first across kinds; then id order.
	c, ok, _ = s.Claim(ctx, "w", []string{"deliver", "transfer"}, time.Minute, t0.Add(2*time.Hour))
	if !ok || c.ID != j1.ID {
		t.Errorf("want the transfer (earliest RunAt) first, got %+v", c)
	}
	var deliver []int64
	for {
		c, ok, err := s.Claim(ctx, "w", nil, time.Minute, t0.Add(2*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		deliver = append(deliver, c.ID)
	}
	if len(deliver) != 3 || deliver[0] > deliver[1] || deliver[1] > deliver[2] {
		t.Errorf("deliver claims %v", deliver)
	}
	all, _ := s.Jobs(ctx, store.ListJobs{})
	if len(all) != 5 || all[0].ID != j1.ID {
		t.Errorf("Jobs: %d, first %d", len(all), all[0].ID)
	}
	if got, _ := s.Jobs(ctx, store.ListJobs{State: store.JobCompleted}); len(got) != 1 || got[0].ID != now.ID || got[0].Result != nil {
		t.Errorf("Jobs(completed) = %+v", got)
	}
	if got, _ := s.Jobs(ctx, store.ListJobs{Kind: "deliver", State: store.JobRunning, Limit: 2}); len(got) != 2 {
		t.Errorf("Jobs(deliver, running, 2) = %d", len(got))
	}
}

func BenchmarkClaimComplete8Workers(b *testing.B) {
	s, _ := openStore(b)
	ids := enqueueN(b, s, b.N, "bench", t0)
	b.ResetTimer()
	claimed := drain(b, []*Store{s}, 8, t0)
	b.StopTimer()
	if len(claimed) != len(ids) {
		b.Fatalf("claimed %d of %d", len(claimed), len(ids))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
