package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// The parts of the contract that end the calls of a node that died: heartbeats, the
// sweep of lost nodes' calls, and a restarted node's own.

func testNodeHeartbeat(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	_, err := s.Node(ctx, "node-1")
	wantErr(t, "Node before any heartbeat", err, store.ErrNotFound)
	must(t, "NodeHeartbeat", s.NodeHeartbeat(ctx, "node-1", at(0)))
	must(t, "NodeHeartbeat", s.NodeHeartbeat(ctx, "node-1", at(10*time.Second)))
	must(t, "NodeHeartbeat late", s.NodeHeartbeat(ctx, "node-1", at(5*time.Second)))
	n, err := s.Node(ctx, "node-1")
	must(t, "Node", err)
	if n.ID != "node-1" || !n.StartedAt.Equal(at(0)) || !n.SeenAt.Equal(at(10*time.Second)) {
		t.Errorf("node %+v, want started at 0s and seen at 10s (a late heartbeat never moves it back)", n)
	}
	if s.NodeHeartbeat(ctx, "", at(0)) == nil {
		t.Error("a heartbeat for an empty node name was accepted")
	}
}

// nodeCall starts a call with its media on node; ringing leaves the journal empty, as an
// outbound call's record is before its media arrives.
func nodeCall(t *testing.T, s store.Store, id, node string, started time.Time, ringing bool) {
	t.Helper()
	c := sampleCall(id, started)
	c.Node = node
	if ringing {
		c.Journal = ""
	}
	must(t, "StartCall "+id, s.StartCall(ctxOf(t), c))
}

func callState(t *testing.T, s store.Store, id string) store.Call {
	t.Helper()
	c, err := s.Call(ctxOf(t), voice.CallID(id))
	must(t, "Call "+id, err)
	return c
}

func sortedIDs(ids []voice.CallID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	slices.Sort(out)
	return out
}

func testEndLostCalls(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	must(t, "heartbeat dead", s.NodeHeartbeat(ctx, "dead", at(0)))
	must(t, "heartbeat alive", s.NodeHeartbeat(ctx, "alive", at(50*time.Second)))
	nodeCall(t, s, "lost1", "dead", at(-time.Minute), false)
	nodeCall(t, s, "lost2", "dead", at(-time.Second), false)
	nodeCall(t, s, "ringing", "dead", at(-time.Second), true) // the job that placed it decides
	nodeCall(t, s, "ended", "dead", at(-time.Minute), false)
	must(t, "EndCall", s.EndCall(ctx, "ended", at(-30*time.Second), "caller_hangup"))
	nodeCall(t, s, "live", "alive", at(0), false)
	nodeCall(t, s, "old", "never-heartbeated", at(0), false) // an older node: never judged

	ids, err := s.EndLostCalls(ctx, at(30*time.Second), at(60*time.Second), "node_lost")
	must(t, "EndLostCalls", err)
	if got := sortedIDs(ids); !slices.Equal(got, []string{"lost1", "lost2"}) {
		t.Errorf("EndLostCalls ended %v, want [lost1 lost2]", got)
	}
	for _, id := range []string{"lost1", "lost2"} {
		if c := callState(t, s, id); c.Outcome != "node_lost" || !c.EndedAt.Equal(at(60*time.Second)) {
			t.Errorf("%s: outcome %q ended %v, want node_lost at 60s", id, c.Outcome, c.EndedAt)
		}
	}
	for _, id := range []string{"ringing", "live", "old"} {
		if c := callState(t, s, id); !c.EndedAt.IsZero() {
			t.Errorf("%s was ended (%s) though its node is not lost or it has no media", id, c.Outcome)
		}
	}
	if c := callState(t, s, "ended"); c.Outcome != "caller_hangup" {
		t.Errorf("an ended call's outcome became %q", c.Outcome)
	}
	again, err := s.EndLostCalls(ctx, at(30*time.Second), at(70*time.Second), "node_lost")
	must(t, "EndLostCalls again", err)
	if len(again) != 0 {
		t.Errorf("a second sweep ended %v again", again)
	}
	// A node heard from again is no longer lost; one silent since is.
	must(t, "heartbeat alive", s.NodeHeartbeat(ctx, "alive", at(100*time.Second)))
	nodeCall(t, s, "later", "dead", at(90*time.Second), false)
	ids, err = s.EndLostCalls(ctx, at(80*time.Second), at(110*time.Second), "node_lost")
	must(t, "EndLostCalls later", err)
	if got := sortedIDs(ids); !slices.Equal(got, []string{"later"}) {
		t.Errorf("the later sweep ended %v, want [later]", got)
	}
}

// testEndLostCallsOnce: several nodes sweeping at once end each call exactly once between
// them.
func testEndLostCallsOnce(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	must(t, "heartbeat", s.NodeHeartbeat(ctx, "dead", at(0)))
	const calls = 40
	for i := range calls {
		nodeCall(t, s, fmt.Sprintf("c%02d", i), "dead", at(-time.Minute), false)
	}
	var mu sync.Mutex
	ended := map[voice.CallID][]string{} // call -> the outcomes of the sweepers that reported it
	var wg sync.WaitGroup
	for i := range 6 {
		outcome := fmt.Sprintf("node_lost_%d", i)
		wg.Go(func() {
			ids, err := s.EndLostCalls(ctx, at(time.Minute), at(time.Minute+time.Duration(i)*time.Second), outcome)
			if err != nil {
				t.Errorf("EndLostCalls: %v", err)
			}
			mu.Lock()
			for _, id := range ids {
				ended[id] = append(ended[id], outcome)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(ended) != calls {
		t.Errorf("the sweepers reported %d of the %d calls", len(ended), calls)
	}
	for id, outcomes := range ended {
		if len(outcomes) != 1 {
			t.Errorf("%s was reported by %d sweepers: %v", id, len(outcomes), outcomes)
			continue
		}
		// The sweeper that reported a call is the one whose end it kept.
		if c := callState(t, s, string(id)); c.Outcome != outcomes[0] {
			t.Errorf("%s reported by the sweeper of %q but ended %q", id, outcomes[0], c.Outcome)
		}
	}
}

func testEndNodeCalls(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	nodeCall(t, s, "before", "node-a", at(0), false)          // the dead process's call
	nodeCall(t, s, "ringing", "node-a", at(0), true)          // not this node's media yet
	nodeCall(t, s, "after", "node-a", at(time.Minute), false) // the new process's own
	nodeCall(t, s, "other", "node-b", at(0), false)
	nodeCall(t, s, "done", "node-a", at(0), false)
	must(t, "EndCall", s.EndCall(ctx, "done", at(time.Second), "caller_hangup"))
	ids, err := s.EndNodeCalls(ctx, "node-a", at(30*time.Second), at(40*time.Second), "node_lost")
	must(t, "EndNodeCalls", err)
	if got := sortedIDs(ids); !slices.Equal(got, []string{"before"}) {
		t.Errorf("EndNodeCalls ended %v, want [before]", got)
	}
	if c := callState(t, s, "before"); c.Outcome != "node_lost" || !c.EndedAt.Equal(at(40*time.Second)) {
		t.Errorf("before: outcome %q ended %v, want node_lost at 40s", c.Outcome, c.EndedAt)
	}
	for _, id := range []string{"ringing", "after", "other"} {
		if c := callState(t, s, id); !c.EndedAt.IsZero() {
			t.Errorf("%s was ended (%s)", id, c.Outcome)
		}
	}
	if c := callState(t, s, "done"); c.Outcome != "caller_hangup" {
		t.Errorf("an ended call's outcome became %q", c.Outcome)
	}
}
