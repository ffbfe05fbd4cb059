package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// The parts of the contract outbound calls, handoffs and deliveries rely on: calls filled
// in after they start, the first end winning, checkpoints, node-bound jobs, batches and
// cancelling what nobody claimed.

func testCallUpdate(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	c := sampleCall("c1", at(0))
	c.CarrierRef, c.Node, c.Journal, c.JobID = "", "placer", "", 42
	must(t, "StartCall", s.StartCall(ctx, c))
	must(t, "UpdateCall ref", s.UpdateCall(ctx, "c1", store.CallUpdate{CarrierRef: "CA1"}))
	must(t, "UpdateCall media", s.UpdateCall(ctx, "c1", store.CallUpdate{Node: "media-node", Journal: "/j/c1"}))
	got, err := s.Call(ctx, "c1")
	must(t, "Call", err)
	c.CarrierRef, c.Node, c.Journal = "CA1", "media-node", "/j/c1"
	if d := cmp.Diff(c, got, cmpOpts...); d != "" {
		t.Errorf("updated call (-want +got):\n%s", d)
	}
	wantErr(t, "UpdateCall unknown", s.UpdateCall(ctx, "nope", store.CallUpdate{Node: "x"}), store.ErrNotFound)
}

func testCallFirstEndWins(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	must(t, "StartCall", s.StartCall(ctx, sampleCall("c1", at(0))))
	must(t, "EndCall", s.EndCall(ctx, "c1", at(time.Minute), "caller_hangup"))
	must(t, "EndCall again", s.EndCall(ctx, "c1", at(2*time.Minute), "completed"))
	got, err := s.Call(ctx, "c1")
	must(t, "Call", err)
	if got.Outcome != "caller_hangup" || !got.EndedAt.Equal(at(time.Minute)) {
		t.Errorf("a second EndCall replaced the first: %q at %v", got.Outcome, got.EndedAt)
	}
}

func testTranscriptUnknownCall(t *testing.T, s store.Store) {
	err := s.AppendTranscript(ctxOf(t), []store.TranscriptLine{{CallID: "nope", Turn: 1, Role: voice.RoleUser, Text: "hi", At: at(0)}})
	wantErr(t, "AppendTranscript for an unknown call", err, store.ErrNotFound)
}

func testJobCheckpoint(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0), MaxAttempts: 3})
	got := mustClaim(t, s, "w1", time.Minute, at(0))
	if got.Checkpoint != nil {
		t.Errorf("a new job has checkpoint %q", got.Checkpoint)
	}
	must(t, "Checkpoint", s.Checkpoint(ctx, j.ID, "w1", []byte(`{"call":"c1"}`), at(time.Second)))
	must(t, "Checkpoint", s.Checkpoint(ctx, j.ID, "w1", []byte(`{"call":"c1","sid":"CA1"}`), at(2*time.Second)))
	after := getJob(t, s, j.ID)
	if string(after.Checkpoint) != `{"call":"c1","sid":"CA1"}` || after.Version <= got.Version {
		t.Errorf("after two checkpoints: %q version %d (claim had %d)", after.Checkpoint, after.Version, got.Version)
	}
	wantErr(t, "Checkpoint by another owner", s.Checkpoint(ctx, j.ID, "w2", []byte(`{}`), at(3*time.Second)), store.ErrLeaseLost)
	// w1 dies; w2 reclaims and sees where w1 got to
	re := mustClaim(t, s, "w2", time.Minute, at(2*time.Minute))
	if re.ID != j.ID || !bytes.Equal(re.Checkpoint, []byte(`{"call":"c1","sid":"CA1"}`)) {
		t.Errorf("reclaimed job %d has checkpoint %q, want w1's", re.ID, re.Checkpoint)
	}
	wantErr(t, "late Checkpoint by the dead owner", s.Checkpoint(ctx, j.ID, "w1", []byte(`{}`), at(3*time.Minute)), store.ErrLeaseLost)
	// a retry keeps the checkpoint too
	must(t, "Fail", s.Fail(ctx, j.ID, "w2", "busy", at(4*time.Minute), at(3*time.Minute)))
	if c := getJob(t, s, j.ID).Checkpoint; !bytes.Equal(c, []byte(`{"call":"c1","sid":"CA1"}`)) {
		t.Errorf("retried job lost its checkpoint: %q", c)
	}
	wantErr(t, "Checkpoint unknown", s.Checkpoint(ctx, 99999, "w1", nil, at(0)), store.ErrNotFound)
}

func testJobNode(t *testing.T, s store.Store) {
	bound := enqueue(t, s, store.NewJob{Kind: "transfer", RunAt: at(0), Node: "node-b"})
	if bound.Node != "node-b" {
		t.Errorf("Node = %q", bound.Node)
	}
	noClaim(t, s, "node-a", nil, at(time.Second))
	noClaim(t, s, "node-a", []string{"transfer"}, at(time.Second))
	free := enqueue(t, s, store.NewJob{Kind: "transfer", RunAt: at(time.Second)})
	if got := mustClaim(t, s, "node-a", time.Minute, at(2*time.Second)); got.ID != free.ID {
		t.Errorf("node-a claimed %d, want the unbound job %d", got.ID, free.ID)
	}
	must(t, "Complete", s.Complete(ctxOf(t), free.ID, "node-a", nil, at(3*time.Second)))
	got, ok := claim(t, s, "node-b", []string{"transfer"}, time.Minute, at(2*time.Second))
	if !ok || got.ID != bound.ID {
		t.Fatalf("node-b claimed %d %v, want its job %d", got.ID, ok, bound.ID)
	}
	// its lease expires: only node-b may take it back
	noClaim(t, s, "node-a", nil, at(time.Hour))
	if again, ok := claim(t, s, "node-b", nil, time.Minute, at(time.Hour)); !ok || again.ID != bound.ID {
		t.Errorf("node-b could not reclaim its own job: %d %v", again.ID, ok)
	}
}

func testJobBatch(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	a := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0), Batch: "spring"})
	enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0)})
	c := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0), Batch: "spring"})
	got, err := s.Jobs(ctx, store.ListJobs{Batch: "spring"})
	must(t, "Jobs", err)
	if d := cmp.Diff([]int64{a.ID, c.ID}, jobIDs(got)); d != "" || got[0].Batch != "spring" {
		t.Errorf("batch listing (-want +got):\n%s", d)
	}
	page, err := s.Jobs(ctx, store.ListJobs{After: a.ID, Limit: 1})
	must(t, "Jobs", err)
	if len(page) != 1 || page[0].ID <= a.ID {
		t.Errorf("Jobs(After %d, Limit 1) = %v", a.ID, jobIDs(page))
	}
}

func testJobCancel(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "transfer", RunAt: at(0)})
	must(t, "Cancel", s.Cancel(ctx, j.ID, "no node holds the call", at(time.Second)))
	got := getJob(t, s, j.ID)
	if got.State != store.JobFailed || got.Error != "no node holds the call" {
		t.Errorf("cancelled job = %s %q", got.State, got.Error)
	}
	noClaim(t, s, "w1", nil, at(time.Minute))
	wantErr(t, "Cancel again", s.Cancel(ctx, j.ID, "again", at(time.Minute)), store.ErrNotPending)

	// a claimer that got there first wins: Cancel must not clobber its run
	k := enqueue(t, s, store.NewJob{Kind: "transfer", RunAt: at(0)})
	mustClaim(t, s, "w1", time.Minute, at(time.Minute))
	wantErr(t, "Cancel a running job", s.Cancel(ctx, k.ID, "too late", at(time.Minute)), store.ErrNotPending)
	must(t, "Complete", s.Complete(ctx, k.ID, "w1", []byte(`{"ok":true}`), at(time.Minute)))
	if got := getJob(t, s, k.ID); got.State != store.JobCompleted {
		t.Errorf("job after a lost cancel = %s", got.State)
	}
	wantErr(t, "Cancel unknown", s.Cancel(ctx, 99999, "x", at(0)), store.ErrNotFound)
}

func testSharedSecret(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	first, err := s.SharedSecret(ctx, "api_token", "from-node-a")
	must(t, "SharedSecret", err)
	second, err := s.SharedSecret(ctx, "api_token", "from-node-b")
	must(t, "SharedSecret", err)
	if first != "from-node-a" || second != "from-node-a" {
		t.Errorf("SharedSecret gave %q then %q: the first candidate must win for every node", first, second)
	}
	other, err := s.SharedSecret(ctx, "caller_hash_secret", "x")
	must(t, "SharedSecret", err)
	if other != "x" {
		t.Errorf("another name: %q", other)
	}
	if _, err := s.SharedSecret(ctx, "api_token", ""); err == nil {
		t.Error("an empty candidate was accepted")
	}
}
