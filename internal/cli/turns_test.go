package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/testpeer"
)

// The headline turn-taking behaviours, through `handset serve` and a simulated caller.

// TestBargeInDuringALongToolRun: the agent runtime works silently for a minute (HANG);
// the filler goes out, and the caller talking over it stops the run promptly.
func TestBargeInDuringALongToolRun(t *testing.T) { forEachCarrier(t, testBargeInDuringALongToolRun) }

func testBargeInDuringALongToolRun(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "a call in real time, filler included")
	r := startServeWith(t, kit, []string{"HANG check all my orders", "never mind"},
		"HANDSET_LONG_TURN_MESSAGE=One moment while I look that up.", "HANDSET_LONG_TURN_AFTER=1s",
		"HANDSET_AGENT_TIMEOUT=60s")
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})
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
func TestFillerOnlyForSlowTurns(t *testing.T) { forEachCarrier(t, testFillerOnlyForSlowTurns) }

func testFillerOnlyForSlowTurns(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "a slow turn in real time")
	r := startServeWith(t, kit, []string{"hello there", "SLOW tell me about your menu"},
		"HANDSET_LONG_TURN_MESSAGE=One moment please.", "HANDSET_LONG_TURN_AFTER=250ms")
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})
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
	// trace tells the filler's start from the reply's: the caller's wait ran on past the filler.
	tr := traceJSON(t, r.dataDir)
	if len(tr.Turns) != 2 {
		t.Fatalf("trace turns %+v", tr.Turns)
	}
	if one := tr.Turns[0]; one.FillerMS != -1 || one.ResponseMS < 0 {
		t.Errorf("turn 1 (fast): filler_ms %v, response_ms %v; want -1 and a measured response", one.FillerMS, one.ResponseMS)
	}
	if two := tr.Turns[1]; two.FillerMS < 0 || two.ResponseMS <= two.FillerMS {
		t.Errorf("turn 2 (slow): filler_ms %v, response_ms %v; want the reply's first audio after the filler's", two.FillerMS, two.ResponseMS)
	}
	out, err := runJournalCommand(t, runTrace, r.dataDir)
	if err != nil || !strings.Contains(out, "filler") || !strings.Contains(out, "response: when the reply itself did") {
		t.Errorf("trace (err %v) does not show the filler column and its legend:\n%s", err, out)
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

// TestOwnEchoDoesNotInterrupt: the line returns the agent's voice 12 dB down after 120 ms.
// A long reply plays to its end through its own echo; the caller talking over the next one
// still interrupts it, exactly once.
func TestOwnEchoDoesNotInterrupt(t *testing.T) { forEachCarrier(t, testOwnEchoDoesNotInterrupt) }

func testOwnEchoDoesNotInterrupt(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "two long replies played in real time")
	r := startServeWith(t, kit, []string{"LONG tell me about the menu", "LONG and the wine list", "stop there"})
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{Echo: &phone.EchoOptions{Delay: 120 * time.Millisecond, GainDB: -12}})
	waitMark(ctx, t, c, "t0-end")
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 41)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t1-end") // the whole long reply played over its own echo
	if n := c.Clears(); n != 0 {
		t.Fatalf("the agent's echo interrupted it: %d clears", n)
	}
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 42)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t2-s2")
	if err := c.SayAndWait(ctx, speech(900*time.Millisecond, 43)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t3-end")
	_ = c.Hangup()
	<-c.Done()
	if n := c.Clears(); n != 1 {
		t.Errorf("clears = %d, want exactly 1 (the caller's real interruption)", n)
	}
	events := r.journal()
	for _, e := range eventsOf(events, obs.BargeIn) {
		if e.Turn != 2 {
			t.Errorf("barge-in on turn %d: only turn 2 was interrupted", e.Turn)
		}
	}
}

// TestSpeechRightAfterTheReplyIsANewTurn: the caller starts 300 ms after the agent's audio
// finished playing. That is the next turn (no clear, no interruption), and STT hears it
// from its first syllable: the rescue ring replays what came before the VAD fired.
func TestSpeechRightAfterTheReplyIsANewTurn(t *testing.T) {
	forEachCarrier(t, testSpeechRightAfterTheReplyIsANewTurn)
}

func testSpeechRightAfterTheReplyIsANewTurn(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "a call in real time")
	r := startServeWith(t, kit, []string{"what are your opening hours", "and on sundays"})
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})
	waitMark(ctx, t, c, "t0-end")
	// It starts at full level, so losing its first 100 ms would show.
	utterance := audiotest.Mulaw(audiotest.Concat(
		audiotest.Tone(8000, 220, 250*time.Millisecond, 0.3),
		audiotest.SpeechLike(8000, time.Second, 51)))
	// The reference: said well after the greeting's tail grace, when nothing holds the floor.
	if err := c.SayAndWait(ctx, append(phone.Silence(2*time.Second), utterance...)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t1-end")
	if err := c.SayAndWait(ctx, append(phone.Silence(300*time.Millisecond), utterance...)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t2-end")
	_ = c.Hangup()
	<-c.Done()
	events := r.journal()
	if rescues := eventsOf(events, "turn.rescue"); len(rescues) != 1 {
		t.Errorf("rescues %d, want 1 (only the second utterance starts inside a tail grace)", len(rescues))
	}
	if n := len(eventsOf(events, obs.Clear)) + len(eventsOf(events, obs.BargeIn)); n != 0 {
		t.Errorf("speech after the reply was treated as an interruption:\n%s", dumpEvents(events))
	}
	commits := eventsOf(events, obs.TurnCommit)
	if len(commits) != 2 || commits[1].Text != "and on sundays" {
		t.Fatalf("commits %+v", commits)
	}
	// The same audio said while idle is the reference for "all of it reached STT".
	stats := r.stt.Stats()
	utts := stats[0].Utterances
	if len(stats) != 1 || len(utts) != 2 {
		t.Fatalf("STT saw %d connections, utterances %+v", len(stats), utts)
	}
	if lost := utts[0].Speech - utts[1].Speech; lost > 40*time.Millisecond {
		t.Errorf("STT heard %v of speech after the reply, %v when idle: the first %v were lost",
			utts[1].Speech, utts[0].Speech, lost)
	}
	t.Logf("speech heard by STT: idle %v, right after the reply %v", utts[0].Speech, utts[1].Speech)
}
