package cli

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/testpeer"
)

// startStoppable runs serve like startServe, and returns a stop that plays SIGTERM and
// waits for serve's exit code.
func startStoppable(t *testing.T, transcripts []string, extra ...string) (*rig, func() int) {
	t.Helper()
	r, env := withFakes(t, transcripts, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"serve"}, Env{
			Stdout: r.logs, Stderr: r.logs, Environ: env, WorkDir: t.TempDir(),
			Ready: func(addr string) { ready <- addr },
		})
	}()
	select {
	case r.addr = <-ready:
	case code := <-exited:
		cancel()
		t.Fatalf("serve exited with %d before listening:\n%s", code, r.logs)
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("serve did not start")
	}
	code, done := 0, false
	stop := func() int {
		if !done {
			cancel()
			code, done = <-exited, true
		}
		return code
	}
	t.Cleanup(func() { stop() })
	return r, stop
}

// TestDrainRefusesWebhooksAndSaysGoodbye: once serve is told to stop, /readyz and a new
// call's webhook answer 503 (the carrier then tries the number's fallback), and a call
// still going when HANDSET_DRAIN_TIMEOUT runs out has its reply cut and hears the goodbye,
// played to its end, before its stream closes.
func TestDrainRefusesWebhooksAndSaysGoodbye(t *testing.T) {
	forEachCarrier(t, testDrainRefusesWebhooksAndSaysGoodbye)
}

func testDrainRefusesWebhooksAndSaysGoodbye(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "waits out a drain timeout in real time")
	r, stop := startStoppableWith(t, kit, []string{"LONG SLOW tell me everything about the menu"}, "HANDSET_DRAIN_TIMEOUT=2s")
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})
	waitMark(ctx, t, c, "t0-end")
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 3)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t1-s1") // the long reply is on the wire

	stopped := make(chan int, 1)
	go func() { stopped <- stop() }()
	waitUntil(t, 10*time.Second, "/readyz to turn 503", func() bool {
		resp, err := http.Get(r.baseURL() + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	}, nil)
	// A new call is refused: the carrier's webhook gets 503 (the log says so) and no
	// stream opens.
	refusedCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if late, err := r.vendor.Call(refusedCtx, r.baseURL(), simkit.CallOptions{}); err == nil {
		_ = late.Hangup()
		t.Error("a call placed while draining was answered")
	}
	cancel()

	select {
	case <-c.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("the call did not end after the drain:\n%s", dumpCaller(c))
	}
	if code := <-stopped; code != 0 {
		t.Errorf("serve exited with %d:\n%s", code, r.logs)
	}

	snap := c.Snapshot()
	if snap.Count(phone.StopSent) != 0 {
		t.Errorf("the caller hung up: the call was to be ended by Handset:\n%s", dumpCaller(c))
	}
	if hasPlayedMark(snap, "t1-end") {
		t.Error("the long reply played to its end: the drain timeout did not cut it")
	}
	if !hasPlayedMark(snap, "t2-end") {
		t.Fatalf("the goodbye (turn 2) never played to its end before the stream closed:\n%s", dumpCaller(c))
	}
	closed := snap.Filter(phone.Closed)
	if len(closed) != 1 || closed[0].Bytes != 0 {
		t.Errorf("stream closed %+v: want it closed once, with no audio left unplayed", closed)
	}
	for _, m := range snap.Marks() {
		if m.Name == "t2-end" && m.EchoedAt > closed[0].At {
			t.Errorf("the goodbye's mark came back at %v, after the stream closed at %v", m.EchoedAt, closed[0].At)
		}
	}
	clears := snap.Filter(phone.Clear)
	if len(clears) == 0 {
		t.Fatal("the reply on the wire was not cleared for the goodbye")
	}
	// What played after the clear is the goodbye: as long as the fake voice makes it
	// (20 ms a character).
	var played int
	for _, e := range snap.Filter(phone.AudioPlayed) {
		if e.Start >= clears[len(clears)-1].At {
			played += e.Bytes
		}
	}
	want := len(config.DefaultDrainMessage) * 20 * 8 // ms × 8 bytes a millisecond at 8 kHz mu-law
	if played < want*9/10 {
		t.Errorf("%d bytes of the goodbye played, want about %d", played, want)
	}

	events := r.journal()
	bye := eventsOf(events, obs.CallGoodbye)
	if len(bye) != 1 || bye[0].Text != config.DefaultDrainMessage {
		t.Fatalf("journal goodbye %+v:\n%s", bye, dumpEvents(events))
	}
	var said, done bool
	for _, e := range events {
		said = said || e.Type == obs.TTSRequest && e.Turn == 2 && e.Text == config.DefaultDrainMessage
		done = done || e.Type == obs.PlayoutDone && e.Turn == 2
	}
	if end := events[len(events)-1]; !said || !done || end.Reason != "shutdown" {
		t.Errorf("goodbye spoken %v, played %v, end %+v:\n%s", said, done, end, dumpEvents(events))
	}
	// The journal replays to the same decisions, the goodbye's clear included.
	replayed, err := call.Replay(events)
	if err != nil {
		t.Fatal(err)
	}
	if recorded := call.Decisions(events); !cmp.Equal(recorded, replayed) {
		t.Errorf("replayed decisions differ (-recorded +replayed):\n%s", cmp.Diff(recorded, replayed))
	}
	if !strings.Contains(r.logs.String(), "refused while draining") {
		t.Error("the refused webhook was not logged")
	}
}
