package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
)

// The headline turn-taking behaviours, through `handset serve` and a simulated caller.

// TestBargeInDuringALongToolRun: the agent runtime works silently for a minute (HANG);
// the filler goes out, and the caller talking over it stops the run promptly.
func TestBargeInDuringALongToolRun(t *testing.T) {
	r := startServe(t, []string{"HANG check all my orders", "never mind"},
		"HANDSET_LONG_TURN_MESSAGE=One moment while I look that up.", "HANDSET_LONG_TURN_AFTER=1s",
		"HANDSET_AGENT_TIMEOUT=60s")
	ctx := context.Background()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 21)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t1-s1") // the filler played
	start := time.Now()
	if err := c.SayAndWait(ctx, speech(900*time.Millisecond, 22)); err != nil {
		t.Fatal(err)
	}
	abortCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := r.agent.AwaitAborted(abortCtx, 1); err != nil {
		t.Fatalf("the minute-long agent run was not aborted: %v", err)
	}
	t.Logf("agent run aborted %v after the caller started talking over the filler", time.Since(start).Round(time.Millisecond))
	waitMark(ctx, t, c, "t2-end")
	_ = c.Hangup()
	<-c.Done()
	events := r.journal()
	mustHave(t, events, obs.Filler, obs.BargeIn, obs.Clear)
	reqs := r.agent.Requests()
	if len(reqs) != 2 || !reqs[0].Aborted || reqs[1].Messages[len(reqs[1].Messages)-1].Content != "never mind" {
		t.Errorf("agent requests: %d, first aborted %v", len(reqs), len(reqs) > 0 && reqs[0].Aborted)
	}
}

// TestFillerOnlyForSlowTurns: a slow turn hears the filler exactly once, before the reply;
// a fast turn never does.
func TestFillerOnlyForSlowTurns(t *testing.T) {
	r := startServe(t, []string{"hello there", "SLOW tell me about your menu"},
		"HANDSET_LONG_TURN_MESSAGE=One moment please.", "HANDSET_LONG_TURN_AFTER=250ms")
	ctx := context.Background()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	for turn, seed := range []int64{31, 32} {
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, seed)); err != nil {
			t.Fatal(err)
		}
		waitMark(ctx, t, c, markEnd(turn+1))
	}
	_ = c.Hangup()
	<-c.Done()
	events := r.journal()
	var spoken []string
	for _, e := range eventsOf(events, obs.TTSRequest) {
		spoken = append(spoken, e.Text)
	}
	fillers := eventsOf(events, obs.Filler)
	if len(fillers) != 1 || fillers[0].Turn != 2 {
		t.Fatalf("filler events %+v, want exactly one, in turn 2; spoken: %q", fillers, spoken)
	}
	var turn2 []string
	for _, e := range eventsOf(events, obs.TTSRequest) {
		if e.Turn == 2 {
			turn2 = append(turn2, e.Text)
		}
	}
	if len(turn2) < 2 || turn2[0] != "One moment please." || strings.Contains(strings.Join(turn2[1:], "|"), "One moment") {
		t.Errorf("turn 2 spoke %q: want the filler first and once", turn2)
	}
}

func mustHave(t *testing.T, events []obs.Event, types ...string) {
	t.Helper()
	for _, typ := range types {
		if len(eventsOf(events, typ)) == 0 {
			t.Errorf("journal has no %s:\n%s", typ, dumpEvents(events))
		}
	}
}
