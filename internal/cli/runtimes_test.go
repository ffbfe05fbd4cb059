package cli

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/sim/fakewebhook"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/testpeer"
)

// TestWebhookRuntime: a plain webhook answers the turns; a failing one gets the spoken
// error message and the call goes on; two calls are told apart, the same caller is
// recognised, and no phone number is ever sent.
func TestWebhookRuntime(t *testing.T) {
	testpeer.Slow(t, "calls in real time")
	hook := fakewebhook.New(fakewebhook.Options{Mode: fakewebhook.ModeSSE})
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(func() { hook.Close(); hookSrv.Close() })
	r := startServe(t, []string{"hello webhook", "FAIL500 now", "still there", "second call"},
		"HANDSET_AGENT=webhook", "HANDSET_AGENT_URL="+hookSrv.URL+"/turn", "HANDSET_AGENT_KEY=")
	ctx := context.Background()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	for turn, seed := range []int64{61, 62, 63} {
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, seed)); err != nil {
			t.Fatal(err)
		}
		waitMark(ctx, t, c, markEnd(turn+1))
	}
	_ = c.Hangup()
	<-c.Done()
	second := r.dial(ctx, func(o *twiliocaller.Options) { o.From = twiliocaller.DefaultFrom })
	waitMark(ctx, t, second, "t0-end")
	if err := second.SayAndWait(ctx, speech(1200*time.Millisecond, 64)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, second, "t1-end")
	_ = second.Hangup()
	<-second.Done()

	reqs := hook.Requests()
	if len(reqs) != 4 {
		t.Fatalf("webhook got %d turns, want 4", len(reqs))
	}
	if reqs[0].CallID == reqs[3].CallID {
		t.Error("two calls share a call id")
	}
	if reqs[0].CallerHash == "" || reqs[0].CallerHash != reqs[3].CallerHash {
		t.Errorf("the same caller is not recognised across calls: %q vs %q", reqs[0].CallerHash, reqs[3].CallerHash)
	}
	for _, rq := range reqs {
		if strings.Contains(string(rq.Body), "5550100001") || strings.Contains(string(rq.Body), "5550100002") {
			t.Errorf("a phone number was sent to the runtime: %s", rq.Body)
		}
	}
	logs := r.logs.String()
	if strings.Contains(logs, "5550100001") {
		t.Error("a phone number reached the logs")
	}
	var spoken []string
	for _, e := range eventsOf(journalOf(t, r, reqs[0].CallID), obs.TTSRequest) {
		spoken = append(spoken, e.Text)
	}
	said := strings.Join(spoken, "|")
	if !strings.Contains(said, "Sorry, something went wrong.") || strings.Contains(said, "500") {
		t.Errorf("the webhook failure was not handled by the error message: %q", said)
	}
}

// callerTurns places a call from number, says each line (waiting for its reply) and hangs
// up; bargeAfter > 0 talks over reply bargeAfter once its first sentence has played.
func callerTurns(ctx context.Context, t *testing.T, r *rig, from string, turns int, bargeAfter int) {
	t.Helper()
	c := r.placeFrom(ctx, from)
	waitMark(ctx, t, c, "t0-end")
	for i := 1; i <= turns; i++ {
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, int64(70+i))); err != nil {
			t.Fatal(err)
		}
		if i == bargeAfter {
			waitMark(ctx, t, c, markSeg(i, 1))
			continue // the next line talks over this reply
		}
		waitMark(ctx, t, c, markEnd(i))
	}
	_ = c.Hangup()
	<-c.Done()
}

func markSeg(turn, seg int) string { return fmt.Sprintf("t%d-s%d", turn, seg) }

// TestOpenClawRuntime drives the gateway protocol through the fake gateway: turns are
// spoken sentence by sentence; a barge-in during a silent tool run sends chat.abort; the
// same caller keeps one session across calls, another caller gets their own; errors are
// spoken as the error message; no phone number reaches the gateway.
func TestOpenClawRuntime(t *testing.T) {
	testpeer.Slow(t, "calls in real time through the fake gateway, a minute-long tool run included")
	gw := fakeopenclaw.New(fakeopenclaw.Options{Token: "gw-token",
		Agents: []fakeopenclaw.Agent{{ID: "main"}, {ID: "support"}}, ToolCallFor: time.Minute})
	gwSrv := httptest.NewServer(gw)
	t.Cleanup(func() { gw.Close(); gwSrv.Close() })
	// The STT fake restarts its script on every call: each call says a prefix of it.
	r := startServe(t, []string{"hello there", "TOOLCALL check my orders", "FAIL500 oops", "again"},
		"HANDSET_AGENT=openclaw", "HANDSET_AGENT_URL="+gwSrv.URL, "HANDSET_AGENT_KEY=gw-token",
		"HANDSET_AGENT_MODEL=openclaw/support", "HANDSET_SESSION_KEY_FROM=caller_hash",
		"HANDSET_LONG_TURN_MESSAGE=One moment.", "HANDSET_LONG_TURN_AFTER=500ms")
	ctx := context.Background()
	callerTurns(ctx, t, r, "+15550100001", 4, 2) // hello; tool run interrupted by "FAIL500 oops"; again
	callerTurns(ctx, t, r, "+15550100001", 1, 0) // the same caller calls back
	callerTurns(ctx, t, r, "+15550109999", 1, 0) // another caller

	sends := gw.Sends()
	if len(sends) != 6 {
		t.Fatalf("gateway got %d turns, want 6: %+v", len(sends), sends)
	}
	if len(gw.Aborts()) != 1 {
		t.Errorf("chat.abort sent %d times, want once (the interrupted tool run)", len(gw.Aborts()))
	}
	same, other := sends[0].SessionKey, sends[5].SessionKey
	if sends[4].SessionKey != same || other == same || !strings.HasPrefix(same, "agent:support:handset:") {
		t.Errorf("session keys: first call %q, same caller later %q, other caller %q", same, sends[4].SessionKey, other)
	}
	for _, f := range gw.Frames() {
		if strings.Contains(f, "5550100001") || strings.Contains(f, "5550109999") {
			t.Fatalf("a phone number reached the gateway: %s", f)
		}
	}
	if strings.Contains(r.logs.String(), "5550100001") {
		t.Error("a phone number reached the logs")
	}
	if spoken := spokenTexts(t, r); !strings.Contains(spoken, "Sorry, something went wrong.") {
		t.Errorf("the gateway's error was not handled by the error message: %q", spoken)
	}
}

// TestHermesRuntime drives Hermes' runs API through the fake Hermes server: turns spoken
// sentence by sentence; a barge-in during a silent tool run stops the run on Hermes' side;
// warning-text and 500 failures are spoken as the error message and the call goes on;
// each call has its own session id, the same caller the same session key, and no number
// is ever sent.
func TestHermesRuntime(t *testing.T) {
	testpeer.Slow(t, "calls in real time, keepalives and a tool run included")
	h := fakehermes.New(fakehermes.Options{Key: "hermes-key-0123456789", Keepalive: 200 * time.Millisecond, ToolDuration: time.Minute})
	hSrv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); hSrv.Close() })
	r := startServe(t, []string{"hello hermes", "TOOLCALL check my orders", "WARNING please", "FAIL500 oops", "still there"},
		"HANDSET_AGENT=hermes", "HANDSET_AGENT_URL="+hSrv.URL+"/v1", "HANDSET_AGENT_KEY=hermes-key-0123456789",
		"HANDSET_SESSION_KEY_FROM=caller_hash",
		"HANDSET_LONG_TURN_MESSAGE=One moment please.", "HANDSET_LONG_TURN_AFTER=500ms")
	ctx := context.Background()
	callerTurns(ctx, t, r, "+15550100001", 5, 2) // the tool run is interrupted by "WARNING please"
	callerTurns(ctx, t, r, "+15550100001", 1, 0) // the same caller calls back
	callerTurns(ctx, t, r, "+15550109999", 1, 0) // another caller

	var starts []fakehermes.Request
	for _, rq := range h.Requests() {
		if rq.Method == "POST" && strings.HasSuffix(rq.Path, "/runs") {
			starts = append(starts, rq)
		}
		if strings.Contains(rq.Body, "5550100001") || strings.Contains(rq.Body, "5550109999") ||
			strings.Contains(fmt.Sprint(rq.Header), "555010") {
			t.Fatalf("a phone number reached Hermes: %+v", rq)
		}
	}
	if len(starts) != 7 {
		t.Fatalf("runs started %d, want 7", len(starts))
	}
	if !h.Stopped(starts[1].RunID) || h.Stopped(starts[0].RunID) || h.Stopped(starts[4].RunID) {
		t.Errorf("stopped on Hermes: tool run %v (want true), normal runs %v %v (want false)",
			h.Stopped(starts[1].RunID), h.Stopped(starts[0].RunID), h.Stopped(starts[4].RunID))
	}
	first, sameCaller, other := starts[0], starts[5], starts[6]
	if first.SessionID == sameCaller.SessionID || first.SessionKey != sameCaller.SessionKey || first.SessionKey == other.SessionKey || first.SessionKey == "" {
		t.Errorf("sessions: ids %q %q, keys %q %q %q", first.SessionID, sameCaller.SessionID, first.SessionKey, sameCaller.SessionKey, other.SessionKey)
	}
	if starts[1].SessionID != first.SessionID {
		t.Error("one call's turns must share its session id")
	}
	if strings.Contains(r.logs.String(), "5550100001") || strings.Contains(r.logs.String(), "5550109999") {
		t.Error("a phone number reached the logs")
	}
	spoken := spokenTexts(t, r)
	if n := strings.Count(spoken, "Sorry, something went wrong."); n != 2 {
		t.Errorf("error message spoken %d times, want 2 (warning text, 500): %q", n, spoken)
	}
	if strings.Contains(spoken, fakehermes.WarningText) || strings.Contains(spoken, "⚠") {
		t.Errorf("Hermes' warning text was spoken: %q", spoken)
	}
}

// spokenTexts joins every sentence sent to TTS in every call so far.
func spokenTexts(t *testing.T, r *rig) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*", "events.jsonl"))
	var out []string
	for _, p := range paths {
		for _, e := range eventsOf(r.journalAt(p), obs.TTSRequest) {
			out = append(out, e.Text)
		}
	}
	return strings.Join(out, "|")
}

// TestWebhookBargeInAbortsTheRequest: talking over the filler of a webhook that never
// answers aborts its HTTP request, and the next turn is answered.
func TestWebhookBargeInAbortsTheRequest(t *testing.T) {
	hook := fakewebhook.New(fakewebhook.Options{Mode: fakewebhook.ModePlain})
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(func() { hook.Close(); hookSrv.Close() })
	r := startServe(t, []string{"HANG think hard", "never mind"},
		"HANDSET_AGENT=webhook", "HANDSET_AGENT_URL="+hookSrv.URL, "HANDSET_AGENT_KEY=",
		"HANDSET_LONG_TURN_MESSAGE=One moment please.", "HANDSET_LONG_TURN_AFTER=500ms")
	ctx := context.Background()
	callerTurns(ctx, t, r, "+15550100001", 2, 1)
	abortCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := hook.AwaitAborted(abortCtx, 1); err != nil {
		t.Errorf("the webhook request was not aborted by the barge-in: %v", err)
	}
	if n := len(hook.Requests()); n != 2 {
		t.Errorf("webhook requests %d, want 2", n)
	}
}
