package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

var live0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func liveCall(t *testing.T, st store.Store, id, node string, started time.Time) {
	t.Helper()
	err := st.StartCall(context.Background(), store.Call{ID: voice.CallID(id), Carrier: "twilio", Direction: voice.Inbound,
		Node: node, StartedAt: started, Journal: "/data/calls/" + id + "/events.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
}

func outcomeOf(t *testing.T, st store.Store, id string) string {
	t.Helper()
	c, err := st.Call(context.Background(), voice.CallID(id))
	if err != nil {
		t.Fatal(err)
	}
	return c.Outcome
}

// TestLivenessEndsTheCallsOfASilentNode: node a heartbeats while it runs; once it is
// killed its heartbeats stop, and node b, heartbeating and sweeping every third of
// LostAfter on its clock, ends a's running call as node_lost once a has been silent for
// LostAfter, not before.
func TestLivenessEndsTheCallsOfASilentNode(t *testing.T) {
	st := openStore(t)
	clk := clock.NewFake(live0)
	ctx := context.Background()
	a := &Liveness{Store: st, Node: "a", LostAfter: 30 * time.Second, Clock: clk}
	a.Start(ctx)
	liveCall(t, st, "c1", "a", live0)
	// a dies here: it never heartbeats again.
	b := &Liveness{Store: st, Node: "b", LostAfter: 30 * time.Second, Clock: clk}
	b.Start(ctx)
	if lost, _, err := b.Lost(ctx, "a"); err != nil || lost {
		t.Fatalf("a counted lost at once (%v)", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); b.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	step := func(d time.Duration) {
		t.Helper()
		// Run's timer is armed before the first wait and re-armed after each beat.
		deadline := time.Now().Add(30 * time.Second) // a safety net: the loop ends on the timer
		for clk.Pending() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the liveness loop never armed its timer")
			}
			time.Sleep(time.Millisecond)
		}
		clk.Advance(d)
	}
	for range 3 { // 30 s: a is silent for exactly LostAfter, not more
		step(10 * time.Second)
	}
	waitFor(t, "b's third heartbeat", func() bool {
		n, err := st.Node(ctx, "b")
		return err == nil && n.SeenAt.Equal(live0.Add(30*time.Second))
	})
	if o := outcomeOf(t, st, "c1"); o != "" {
		t.Fatalf("c1 ended %q before its node was silent for longer than LostAfter", o)
	}
	step(10 * time.Second)
	waitFor(t, "c1 ended", func() bool { return outcomeOf(t, st, "c1") != "" })
	if o := outcomeOf(t, st, "c1"); o != store.OutcomeNodeLost {
		t.Errorf("c1 ended %q, want %s", o, store.OutcomeNodeLost)
	}
	if lost, n, err := b.Lost(ctx, "a"); err != nil || !lost || !n.SeenAt.Equal(live0) {
		t.Errorf("Lost(a) = %v, last seen %v (%v); want lost, last seen at its start", lost, n.SeenAt, err)
	}
	if lost, _, _ := b.Lost(ctx, "never-heartbeated"); lost {
		t.Error("a node that never heartbeated is judged lost")
	}
}

// TestLivenessStartEndsWhatThePreviousProcessLeft: a node restarted under its own name
// ends, at start-up, the calls recorded under that name (its previous process died
// holding them), and nobody else's.
func TestLivenessStartEndsWhatThePreviousProcessLeft(t *testing.T) {
	st := openStore(t)
	clk := clock.NewFake(live0)
	ctx := context.Background()
	liveCall(t, st, "mine", "a", live0.Add(-time.Minute))
	liveCall(t, st, "theirs", "b", live0.Add(-time.Minute))
	if err := st.NodeHeartbeat(ctx, "b", live0); err != nil {
		t.Fatal(err)
	}
	(&Liveness{Store: st, Node: "a", Clock: clk}).Start(ctx)
	if o := outcomeOf(t, st, "mine"); o != store.OutcomeNodeLost {
		t.Errorf("the previous process's call ended %q, want %s", o, store.OutcomeNodeLost)
	}
	if o := outcomeOf(t, st, "theirs"); o != "" {
		t.Errorf("another node's live call was ended %q", o)
	}
	if n, err := st.Node(ctx, "a"); err != nil || !n.SeenAt.Equal(live0) {
		t.Errorf("start-up did not heartbeat: %+v, %v", n, err)
	}
}

// waitFor polls cond (it reads the store the liveness loop writes from its goroutine).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a safety net: the loop ends on cond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
