package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
)

// TestWholeCall drives `handset serve` through each carrier's simulated caller: the
// greeting, two turns answered in order, a barge-in that stops a long reply with exactly
// one clear, and the journal of it all.
func TestWholeCall(t *testing.T) { forEachCarrier(t, testWholeCall) }

func testWholeCall(t *testing.T, kit simkit.Kit) {
	r := startServeWith(t, kit, []string{
		"what are your opening hours",
		"and on sundays",
		"LONG SLOW tell me everything about the menu",
		"stop please",
	})
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})

	waitMark(ctx, t, c, "t0-end")
	if segs := c.SpeechSegments(); len(segs) == 0 {
		t.Fatal("greeting not heard")
	}

	for turn, seed := range []int64{1, 2} {
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, seed)); err != nil {
			t.Fatal(err)
		}
		waitMark(ctx, t, c, markEnd(turn+1))
	}

	// A long reply; the caller talks over it once it is well under way.
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 3)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t3-s1")
	// Its sentences stream slowly (SLOW): the second may not be playing yet the moment the
	// first has ended, and a caller speaking into that gap takes a turn instead of cutting
	// the reply off. Talk once the reply is heard again (a busy machine widens the gap).
	played := len(c.Snapshot().PlayedAudio())
	again, cancel := context.WithTimeout(ctx, 20*time.Second)
	_ = c.WaitFor(again, func(s phone.Snapshot) bool { return len(s.PlayedAudio()) > played+800 || s.Ended })
	cancel()
	heardBefore := len(c.Snapshot().PlayedAudio())
	if err := c.SayAndWait(ctx, speech(1000*time.Millisecond, 4)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t4-end")
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}
	<-c.Done()

	snap := c.Snapshot()
	if n := snap.Clears(); n != 1 {
		t.Errorf("clears = %d, want exactly 1", n)
	}
	if errs := snap.ProtocolErrors(); len(errs) > 0 {
		t.Errorf("Handset sent messages %s would reject: %v", kit.Name(), errs)
	}
	clears := snap.Filter(phone.Clear)
	for _, m := range snap.Marks() {
		if len(clears) > 0 && strings.HasPrefix(m.Name, "t3-") && m.Echoed && !m.Cleared && m.EchoedAt > clears[0].At {
			t.Errorf("mark %s of the interrupted reply played after the barge-in", m.Name)
		}
	}
	if hasPlayedMark(snap, "t3-end") {
		t.Error("the interrupted reply played to its end")
	}
	if len(snap.PlayedAudio()) <= heardBefore {
		t.Error("nothing was heard after the barge-in: the new turn was not answered")
	}

	// The agent saw the turns in order, each with the history before it.
	reqs := r.agent.Requests()
	if len(reqs) != 4 {
		t.Fatalf("agent requests = %d, want 4", len(reqs))
	}
	wantUser := []string{"what are your opening hours", "and on sundays", "LONG SLOW tell me everything about the menu", "stop please"}
	for i, req := range reqs {
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "user" || last.Content != wantUser[i] {
			t.Errorf("request %d ends with %+v, want user %q", i+1, last, wantUser[i])
		}
		if req.Header.Get("Authorization") != "Bearer agent-key" || req.Model != "test-model" || !req.Stream {
			t.Errorf("request %d: auth %q model %q stream %v", i+1, req.Header.Get("Authorization"), req.Model, req.Stream)
		}
	}
	second := reqs[1].Messages
	if !containsMessage(second, "assistant", greeting) || !containsMessage(second, "user", wantUser[0]) {
		t.Errorf("second request lacks the greeting or the first turn: %+v", second)
	}
	fourth := reqs[3].Messages
	interrupted := fourth[len(fourth)-2]
	if interrupted.Role != "assistant" || !strings.HasSuffix(interrupted.Content, voice.InterruptedMarker) ||
		len(interrupted.Content) <= len(voice.InterruptedMarker) {
		t.Errorf("history before the barge-in turn should end with the heard prefix and the marker, got %+v", interrupted)
	}
	checkHeardPrefix(t, snap, "t3", r.agent.ReplyText(reqs[2].Messages), interrupted.Content)
	if !reqs[2].Aborted {
		t.Error("the interrupted agent stream was not aborted")
	}

	events := r.journal()
	checkJournal(t, events, kit.Name())

	// The journal reproduces the call's turn-taking decisions when replayed.
	replayed, err := call.Replay(events)
	if err != nil {
		t.Fatal(err)
	}
	recorded := call.Decisions(events)
	if len(recorded) < 6 {
		t.Fatalf("too few decisions recorded to compare: %v", recorded)
	}
	if diff := cmp.Diff(recorded, replayed); diff != "" {
		t.Errorf("replayed decisions differ from the recorded ones (-recorded +replayed):\n%s", diff)
	}
	// ...and the comparison can fail: a caller who said something else is another call.
	altered := append([]obs.Event(nil), events...)
	for i := range altered {
		if altered[i].Type == obs.STTFinal {
			altered[i].Text = "something else entirely"
			break
		}
	}
	if other, _ := call.Replay(altered); cmp.Equal(recorded, other) {
		t.Error("replay ignores the journal's transcripts")
	}
}

func markEnd(turn int) string { return "t" + string(rune('0'+turn)) + "-end" }

func containsMessage(msgs []fakeopenaiMessage, role, content string) bool {
	for _, m := range msgs {
		if m.Role == role && m.Content == content {
			return true
		}
	}
	return false
}

// checkJournal asserts every milestone of the whole call through the carrier named
// carrier, in order and with sensible latencies.
func checkJournal(t *testing.T, events []obs.Event, carrier string) {
	t.Helper()
	if events[0].Type != obs.CallStart || events[0].Carrier != carrier || events[0].CallerHash == "" || events[0].Agent != "openai" {
		t.Errorf("first event %+v, want call.start with carrier, caller hash, agent", events[0])
	}
	if strings.Contains(dumpEvents(events), "5550100001") {
		t.Error("the caller's number reached the journal")
	}
	end := events[len(events)-1]
	if end.Type != obs.CallEnd || end.Reason != "caller_hangup" {
		t.Errorf("last event %+v, want call.end caller_hangup", end)
	}
	for _, typ := range []string{obs.MediaFirstIn, obs.VADSpeechStart, obs.VADSpeechEnd, obs.STTFinal, obs.TurnCommit,
		obs.AgentRequest, obs.AgentFirstToken, obs.AgentDone, obs.TTSRequest, obs.TTSFirstByte, obs.PlayoutFirstAudio,
		obs.PlayoutMark, obs.BargeIn, obs.Clear, obs.TurnInterrupted} {
		if len(eventsOf(events, typ)) == 0 {
			t.Errorf("journal has no %s", typ)
		}
	}
	if n := len(eventsOf(events, obs.Clear)); n != 1 {
		t.Errorf("journal has %d clear events, want 1", n)
	}
	var prev time.Time
	for _, e := range events {
		if e.TS.Before(prev) {
			t.Errorf("journal goes back in time at %s", e.Type)
		}
		prev = e.TS
	}
	turns := obs.Turns(events)
	if len(turns) != 4 {
		t.Fatalf("journal turns = %d, want 4:\n%s", len(turns), dumpEvents(events))
	}
	for _, tr := range turns {
		if tr.ResponseMS < 0 || tr.ResponseMS > 5000 || tr.AgentTTFTMS < 0 || tr.TTSTTFBMS < 0 || tr.OverheadMS < 0 || tr.OverheadMS > tr.ResponseMS {
			t.Errorf("turn %d latencies out of range: %+v", tr.Turn, tr)
		}
		t.Logf("turn %d: endpoint %.1f ms, agent ttft %.1f ms, tts ttfb %.1f ms, response %.1f ms, overhead %.1f ms",
			tr.Turn, tr.EndpointMS, tr.AgentTTFTMS, tr.TTSTTFBMS, tr.ResponseMS, tr.OverheadMS)
	}
	// Turn 3's agent streams slowly: its first sentence must reach the caller while the
	// agent is still writing (it never finishes: the barge-in aborts it).
	var firstAudio3, done3 bool
	for _, e := range events {
		if e.Turn == 3 && e.Type == obs.PlayoutFirstAudio {
			firstAudio3 = true
		}
		if e.Turn == 3 && e.Type == obs.AgentDone {
			done3 = true
		}
	}
	if !firstAudio3 || done3 {
		t.Errorf("turn 3: first audio %v, agent done %v: want audio out before the agent finished", firstAudio3, done3)
	}
	if !turns[2].Interrupted || turns[0].Interrupted || turns[3].Interrupted {
		t.Errorf("only turn 3 was interrupted: %+v", turns)
	}
}

// TestRefusesForgedRequests: every forgery the carrier's kit knows (webhooks with a
// missing, forged or wrong-key signature or a tampered body; streams with a missing,
// forged, another call's or a used token, or a bad upgrade signature) is refused as the
// kit says, and a real call going on meanwhile is not disturbed.
func TestRefusesForgedRequests(t *testing.T) { forEachCarrier(t, testRefusesForgedRequests) }

func testRefusesForgedRequests(t *testing.T, kit simkit.Kit) {
	r := startServeWith(t, kit, nil)
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})
	forgeries := r.vendor.Forgeries(r.baseURL())
	if len(forgeries) < 8 {
		t.Fatalf("the %s kit knows %d forgeries, want the webhook and stream ones", kit.Name(), len(forgeries))
	}
	for _, f := range forgeries {
		t.Run(f.Name, func(t *testing.T) {
			got, err := f.Send(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !f.Want.Matches(got) {
				t.Fatalf("got %+v, want %+v", got, f.Want)
			}
		})
	}
	// The real call was not disturbed by any of that: it still gets its greeting.
	waitMark(ctx, t, c, "t0-end")
	_ = c.Hangup()
	<-c.Done()
}

// TestMalformedFramesAreDroppedAndTheCallGoesOn: frames the carrier's stream should never
// carry (not JSON, media that is not base64, an unknown event) are journalled, counted and
// dropped, and the next turn is answered. Where the carrier may also send frames of other
// sizes than 20 ms and events before the stream's start, a second call has both.
func TestMalformedFramesAreDroppedAndTheCallGoesOn(t *testing.T) {
	forEachCarrier(t, testMalformedFramesAreDroppedAndTheCallGoesOn)
}

func testMalformedFramesAreDroppedAndTheCallGoesOn(t *testing.T, kit simkit.Kit) {
	t.Run("usual frames", func(t *testing.T) { malformedFramesCall(t, kit, simkit.VendorOptions{}) })
	t.Run("60ms frames and events before start", func(t *testing.T) {
		malformedFramesCall(t, kit, simkit.VendorOptions{Frame: 60 * time.Millisecond, EarlyFrames: 3})
	})
}

// malformedFramesCall places one call through a vendor shaped by opts, sends the kit's
// malformed frames after the greeting, then a turn.
func malformedFramesCall(t *testing.T, kit simkit.Kit, opts simkit.VendorOptions) {
	probe, err := kit.Start(context.Background(), opts)
	if errors.Is(err, simkit.ErrUnsupported) {
		t.Skipf("%s: %v", kit.Name(), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}
	r := startServeVendor(t, kit, opts, []string{"hello there"})
	malformer, ok := r.vendor.(simkit.MalformedFramer)
	if !ok {
		t.Fatalf("the %s kit names no malformed frames (simkit.MalformedFramer)", kit.Name())
	}
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})
	turns := 1
	if opts.EarlyFrames > 0 {
		// The key press sent before start is a turn of its own once the call is admitted.
		waitMark(ctx, t, c, markEnd(1))
		turns++
	} else {
		waitMark(ctx, t, c, "t0-end")
	}
	frames := malformer.MalformedFrames(c)
	if len(frames) < 3 {
		t.Fatalf("the %s kit names %d malformed frames, want at least 3", kit.Name(), len(frames))
	}
	for _, raw := range frames {
		if err := c.SendRaw(raw); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 7)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, markEnd(turns))
	_ = c.Hangup()
	<-c.Done()
	events := r.journal()
	bad := eventsOf(events, obs.MediaMalformed)
	if n := len(frames); len(bad) != n || bad[n-1].Count != n {
		t.Errorf("malformed frames journaled: %+v, want %d counted:\n%s", bad, n, dumpEvents(events))
	}
	if len(eventsOf(events, obs.AgentDone)) != turns {
		t.Errorf("the turn after the malformed frames was not answered:\n%s", dumpEvents(events))
	}
	if opts.EarlyFrames > 0 {
		if keys := eventsOf(events, obs.DTMF); len(keys) != 1 || keys[0].Digit != "1" {
			t.Errorf("the key press sent before start: journal has %+v:\n%s", keys, dumpEvents(events))
		}
	}
}

// TestAgentFailureSpeaksTheErrorMessage: a 500 from the runtime and a runtime that hangs
// both get the configured message spoken, never the runtime's text, and the call goes on.
func TestAgentFailureSpeaksTheErrorMessage(t *testing.T) {
	forEachCarrier(t, testAgentFailureSpeaksTheErrorMessage)
}

func testAgentFailureSpeaksTheErrorMessage(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "waits out an agent timeout in real time")
	r := startServeWith(t, kit, []string{"FAIL500 please", "HANG on", "are you still there"}, "HANDSET_AGENT_TIMEOUT=1s")
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})
	waitMark(ctx, t, c, "t0-end")
	for turn, seed := range []int64{11, 12, 13} {
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, seed)); err != nil {
			t.Fatal(err)
		}
		waitMark(ctx, t, c, markEnd(turn+1))
	}
	_ = c.Hangup()
	<-c.Done()
	events := r.journal()
	errs := eventsOf(events, obs.AgentError)
	if len(errs) != 2 || errs[0].Kind != "transient" || errs[1].Kind != "timeout" {
		t.Fatalf("agent errors %+v, want transient then timeout", errs)
	}
	var spoken []string
	for _, e := range eventsOf(events, obs.TTSRequest) {
		spoken = append(spoken, e.Text)
	}
	said := strings.Join(spoken, "|")
	if strings.Count(said, "Sorry, something went wrong.") != 2 {
		t.Errorf("error message not spoken once per failure: %q", said)
	}
	if strings.Contains(strings.ToLower(said), "server_error") || strings.Contains(said, "500") {
		t.Errorf("the runtime's error text was spoken: %q", said)
	}
	if len(eventsOf(events, obs.AgentDone)) != 1 {
		t.Errorf("the turn after the failures was not answered:\n%s", dumpEvents(events))
	}
}
