package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakeopenaispeech"
	"github.com/handset-voice/handset/internal/testpeer"
)

// Speech providers fail mid-call: the caller must hear within seconds that something is
// wrong, never silence, and the agent must hear what the caller said once anything can.

const sttNotice = "Sorry, I'm having trouble hearing you. One moment."

// liveEvents reads the only call's journal as it is so far.
func (r *rig) liveEvents() []obs.Event {
	r.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*", "events.jsonl"))
	if len(paths) != 1 {
		return nil
	}
	events, err := obs.ReadFile(paths[0])
	if err != nil {
		r.t.Fatal(err)
	}
	return events
}

// onlyCallID is the only call's id, from its journal's folder.
func (r *rig) onlyCallID() string {
	r.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*", "events.jsonl"))
	if len(paths) != 1 {
		r.t.Fatalf("%d call journals", len(paths))
	}
	return callIDOf(paths[0])
}

// waitEvent waits until the call's journal has an event of typ that ok accepts (nil: any).
func (r *rig) waitEvent(typ string, ok func(obs.Event) bool, limit time.Duration) obs.Event {
	r.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		for _, e := range r.liveEvents() {
			if e.Type == typ && (ok == nil || ok(e)) {
				return e
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("no %s in the journal after %v:\n%s\nlog:\n%s", typ, limit, dumpEvents(r.liveEvents()), r.logs.String())
		}
		time.Sleep(20 * time.Millisecond) // the journal is a file the call appends to
	}
}

// storedCall reads a call's record through the API once it has an outcome and, when
// lines > 0, that many transcript lines.
func (r *rig) storedCall(token, id string, lines int) apiCall {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var c apiCall
		req, _ := http.NewRequest("GET", r.baseURL()+"/api/calls/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&c)
			resp.Body.Close()
		}
		if c.Outcome != "" && len(c.Transcript) >= lines {
			return c
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("call %s stored as %+v", id, c)
		}
		time.Sleep(20 * time.Millisecond) // the transcript is saved off the call's goroutine
	}
}

func countText(events []obs.Event, typ, text string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ && e.Text == text {
			n++
		}
	}
	return n
}

// TestSTTOutageWithoutFallback: Deepgram refuses every handshake. The call keeps trying;
// the caller who speaks unheard is told once; when Deepgram comes back it hears what they
// said, and the agent answers. When it goes down again for good, the call ends as
// stt_failed, not silence, and the store says so.
func TestSTTOutageWithoutFallback(t *testing.T) {
	testpeer.Slow(t, "waits out Deepgram's reconnect backoff in real time")
	const token = "outage-token-0123456789abcdef-0123456789"
	// Reopens come at 0, 0.25, 0.75, 1.75, 3.75, 7.75 s…: the one after Deepgram is back must
	// come before the outage's HANDSET_SILENCE_HANGUP runs out, however loaded the machine.
	r := startServe(t, []string{"what are your hours"}, "HANDSET_SILENCE_HANGUP=15s", "HANDSET_API_TOKEN="+token)
	r.stt.Refuse(http.StatusServiceUnavailable)
	ctx := context.Background()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	r.waitEvent(obs.STTLost, nil, 20*time.Second)
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 41)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t1-end") // the notice, in its own turn
	if n := countText(r.liveEvents(), obs.TTSRequest, sttNotice); n != 1 {
		t.Fatalf("notice requested %d times:\n%s", n, dumpEvents(r.liveEvents()))
	}

	r.stt.Refuse(0) // Deepgram is back: the next reopen hears the held words
	// The reopen may come 7.75 s after the last (the backoff), after the 8 s re-prompt has
	// asked "Are you still there?": the answer is the agent's turn, whichever turn it is.
	reqs := r.agent.Requests()
	for deadline := time.Now().Add(30 * time.Second); len(reqs) == 0 && time.Now().Before(deadline); reqs = r.agent.Requests() {
		time.Sleep(20 * time.Millisecond)
	}
	if len(reqs) != 1 || reqs[0].Messages[len(reqs[0].Messages)-1].Content != "what are your hours" {
		t.Fatalf("agent requests: %+v\n%s", reqs, dumpEvents(r.liveEvents()))
	}

	r.stt.Refuse(http.StatusServiceUnavailable) // down for good now
	r.stt.DropAll()
	select {
	case <-c.Done():
	case <-time.After(60 * time.Second):
		t.Fatalf("the call never ended:\n%s", dumpEvents(r.liveEvents()))
	}
	events := r.journal()
	if end := events[len(events)-1]; end.Reason != "stt_failed" {
		t.Errorf("call ended %q, want stt_failed", end.Reason)
	}
	if n := countText(events, obs.TTSRequest, sttNotice); n != 1 {
		t.Errorf("notice requested %d times, want once a call", n)
	}
	if len(eventsOf(events, obs.STTRecovered)) != 1 || len(eventsOf(events, obs.STTError)) < 4 {
		t.Errorf("want one recovery and the failures on the way:\n%s", dumpEvents(events))
	}
	if stored := r.storedCall(token, r.onlyCallID(), 0); stored.Outcome != "stt_failed" {
		t.Errorf("stored outcome %q, want stt_failed", stored.Outcome)
	}
}

// TestSTTPrimaryDownFallbackSlowToOpen: the primary (an OpenAI-compatible transcription
// server that now refuses the key) is down for the whole call, and the fallback (Deepgram)
// does not answer its handshake at first. The caller who spoke unheard is told once; when
// the fallback opens it is given their held words, hears the turn, and the agent answers.
func TestSTTPrimaryDownFallbackSlowToOpen(t *testing.T) {
	testpeer.Slow(t, "waits for a slow fallback in real time")
	srv := speechServer(t)
	r := startServe(t, []string{"what are your hours", "thank you"}, "HANDSET_STT=openai", "HANDSET_STT_FALLBACK=deepgram",
		"HANDSET_OPENAI_URL="+srv.URL(), "OPENAI_API_KEY=revoked-key")
	r.stt.Stall(true)
	ctx := context.Background()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 46)); err != nil {
		t.Fatal(err)
	}
	waitMarkFor(ctx, t, c, "t1-end", 20*time.Second) // the notice
	if n := countText(r.liveEvents(), obs.TTSRequest, sttNotice); n != 1 {
		t.Fatalf("notice requested %d times:\n%s", n, dumpEvents(r.liveEvents()))
	}
	r.stt.Stall(false) // Deepgram answers the handshake it was holding
	waitMarkFor(ctx, t, c, "t2-end", 20*time.Second)
	if err := c.SayAndWait(ctx, speech(1000*time.Millisecond, 47)); err != nil {
		t.Fatal(err)
	}
	waitMarkFor(ctx, t, c, "t3-end", 20*time.Second)
	_ = c.Hangup()
	<-c.Done()
	events := r.journal()
	reqs := r.agent.Requests()
	if len(reqs) != 2 || reqs[0].Messages[len(reqs[0].Messages)-1].Content != "what are your hours" ||
		reqs[1].Messages[len(reqs[1].Messages)-1].Content != "thank you" {
		t.Fatalf("agent requests: %+v\n%s", reqs, dumpEvents(events))
	}
	if n := countText(events, obs.TTSRequest, sttNotice); n != 1 {
		t.Errorf("notice requested %d times, want once", n)
	}
	var refused bool
	for _, e := range eventsOf(events, obs.STTError) {
		refused = refused || e.Name == "openai" && e.Kind == "auth"
	}
	if !refused || len(eventsOf(events, obs.STTLost)) != 1 {
		t.Errorf("want the primary's refusal and one outage:\n%s", dumpEvents(events))
	}
	heldFor := false
	for _, e := range eventsOf(events, obs.STTRecovered) {
		heldFor = heldFor || e.Name == "deepgram" && e.AudioMS >= 1200
	}
	if !heldFor {
		t.Errorf("stt.recovered %+v: want Deepgram given the held utterance", eventsOf(events, obs.STTRecovered))
	}
}

// TestSTTFallbackWhilePrimaryHangs: Deepgram's handshakes hang for the whole call. A second
// into the call the fallback (an OpenAI-compatible transcription server) is opened beside
// it and hears every turn; nothing went unheard, so the caller is told nothing.
func TestSTTFallbackWhilePrimaryHangs(t *testing.T) {
	testpeer.Slow(t, "a call in real time beside a hanging STT")
	srv := speechServer(t, "what are your hours", "thank you")
	r := startServe(t, nil, "HANDSET_STT_FALLBACK=openai", "HANDSET_OPENAI_URL="+srv.URL(), "OPENAI_API_KEY=speech-key")
	r.stt.Stall(true)
	ctx := context.Background()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	r.waitEvent(obs.STTRecovered, func(e obs.Event) bool { return e.Name == "openai" }, 20*time.Second)
	for turn, seed := range []int64{42, 43} {
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, seed)); err != nil {
			t.Fatal(err)
		}
		waitMark(ctx, t, c, markEnd(turn+1))
	}
	_ = c.Hangup()
	<-c.Done()
	events := r.journal()
	reqs := r.agent.Requests()
	if len(reqs) != 2 || reqs[1].Messages[len(reqs[1].Messages)-1].Content != "thank you" {
		t.Fatalf("agent requests: %+v", reqs)
	}
	if countText(events, obs.TTSRequest, sttNotice) != 0 {
		t.Error("the caller was told of trouble they never met")
	}
	if r.stt.Totals().Stalled == 0 || r.stt.Connections() != 0 {
		t.Errorf("deepgram totals %+v: want handshakes held and none through", r.stt.Totals())
	}
}

// TestSTTFallbackHearsTheUtteranceCutOff: Deepgram dies while the caller is speaking and
// refuses to come back. The fallback is given what the caller said since the last
// transcript, so their whole utterance reaches the agent.
func TestSTTFallbackHearsTheUtteranceCutOff(t *testing.T) {
	testpeer.Slow(t, "a call in real time")
	srv := speechServer(t, "and on sundays")
	r := startServe(t, []string{"what are your hours"}, "HANDSET_STT_FALLBACK=openai", "HANDSET_OPENAI_URL="+srv.URL(), "OPENAI_API_KEY=speech-key")
	ctx := context.Background()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 44)); err != nil {
		t.Fatal(err)
	}
	waitMark(ctx, t, c, "t1-end")

	// 300 ms into the next utterance the socket dies, and Deepgram turns the reopens away.
	sent := r.stt.Stats()[0].AudioBytes
	r.stt.Refuse(http.StatusServiceUnavailable)
	r.stt.DropOnceAfter(sent + 8000*300/1000)
	if err := c.SayAndWait(ctx, speech(1500*time.Millisecond, 45)); err != nil {
		t.Fatal(err)
	}
	waitMarkFor(ctx, t, c, "t2-end", 30*time.Second)
	_ = c.Hangup()
	<-c.Done()
	events := r.journal()
	reqs := r.agent.Requests()
	if len(reqs) != 2 || reqs[1].Messages[len(reqs[1].Messages)-1].Content != "and on sundays" {
		t.Fatalf("agent requests: %+v\n%s", reqs, dumpEvents(events))
	}
	ups := srv.Uploads()
	if len(ups) != 1 || ups[0].Duration < 1500*time.Millisecond {
		t.Errorf("fallback uploads %+v: want one holding the whole 1.5 s utterance", ups)
	}
	if !r.stt.Stats()[0].Dropped {
		t.Error("the drop never happened")
	}
	if countText(events, obs.TTSRequest, sttNotice) != 0 || len(eventsOf(events, obs.STTLost)) != 0 {
		t.Errorf("a seamless switch was announced:\n%s", dumpEvents(events))
	}
}

// speechServer is an OpenAI-compatible speech server answering transcripts in order.
func speechServer(t *testing.T, transcripts ...string) *fakeopenaispeech.Server {
	t.Helper()
	srv, err := fakeopenaispeech.Start(fakeopenaispeech.Options{Key: "speech-key", Transcripts: transcripts, MsPerChar: 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}
