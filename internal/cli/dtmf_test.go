package cli

import (
	"context"
	"testing"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/simkit"
)

// TestDTMFReachesTheAgent: a key the caller presses mid-call, on any carrier, is in the
// journal and is the agent's next turn.
func TestDTMFReachesTheAgent(t *testing.T) { forEachCarrier(t, testDTMFReachesTheAgent) }

func testDTMFReachesTheAgent(t *testing.T, kit simkit.Kit) {
	r := startServeWith(t, kit, nil)
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})
	waitMark(ctx, t, c, "t0-end")
	if err := c.DTMF("5"); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, markEnd(1))
	_ = c.Hangup()
	<-c.Done()

	events := r.journal()
	if keys := eventsOf(events, obs.DTMF); len(keys) != 1 || keys[0].Digit != "5" {
		t.Fatalf("journal's key presses %+v, want one 5:\n%s", keys, dumpEvents(events))
	}
	reqs := r.agent.Requests()
	if len(reqs) != 1 {
		t.Fatalf("agent requests = %d, want 1", len(reqs))
	}
	if last := reqs[0].Messages[len(reqs[0].Messages)-1]; last.Role != "user" || last.Content != "[DTMF 5]" {
		t.Fatalf("the agent's turn ends with %+v, want the key press", last)
	}
}
