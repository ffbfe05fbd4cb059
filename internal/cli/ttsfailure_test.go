package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
)

// The fake agent answers "I heard you say: <words>. What else can I do for you?", so a
// magic word in what the caller says lands in the first sentence of the reply, where the
// fake ElevenLabs acts on it.

const lastSentence = "What else can I do for you?"

// ttsTurn places a call, waits out the greeting and has the caller say one thing; the
// reply to it is turn 1.
func ttsTurn(t *testing.T, r *rig) (context.Context, func() []obs.Event) {
	t.Helper()
	ctx := context.Background()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 51)); err != nil {
		t.Fatal(err)
	}
	waitMarkFor(ctx, t, c, "t1-end", 30*time.Second)
	return ctx, func() []obs.Event {
		if err := c.SayAndWait(ctx, speech(1000*time.Millisecond, 52)); err != nil {
			t.Fatal(err)
		}
		waitMarkFor(ctx, t, c, "t2-end", 30*time.Second)
		_ = c.Hangup()
		<-c.Done()
		return r.journal()
	}
}

func ttsRequests(r *rig, text string) int {
	n := 0
	for _, q := range r.tts.Requests() {
		if q.Text == text {
			n++
		}
	}
	return n
}

// TestTTSSentenceFailingOnceIsRetried: ElevenLabs turns a sentence away once (429, which
// the provider itself does not retry); Handset asks again and the caller hears it.
func TestTTSSentenceFailingOnceIsRetried(t *testing.T) {
	testpeer.Slow(t, "a call in real time")
	r := startServe(t, []string{"hours TTSBUSYONCE", "thanks"})
	_, finish := ttsTurn(t, r)
	first := "I heard you say: hours TTSBUSYONCE."
	events := finish()
	if n := ttsRequests(r, first); n != 2 {
		t.Errorf("the sentence was requested %d times, want 2 (once more after the 429)", n)
	}
	errs := eventsOf(events, obs.TTSError)
	if len(errs) != 1 || errs[0].Kind != "quota" || errs[0].Name != "elevenlabs" {
		t.Errorf("tts.error events %+v, want one quota error from elevenlabs", errs)
	}
	if len(eventsOf(events, obs.TTSLost)) != 0 {
		t.Errorf("a sentence was lost:\n%s", dumpEvents(events))
	}
	second := r.agent.Requests()[1].Messages
	if !containsMessage(second, "assistant", first+" "+lastSentence) {
		t.Errorf("the agent's history lacks the whole reply: %+v", second)
	}
}

// TestTTSFallbackVoice: ElevenLabs fails a sentence every time; the fallback voice (an
// OpenAI-compatible speech server) speaks it, and the next one too while the first is held
// to be down.
func TestTTSFallbackVoice(t *testing.T) {
	testpeer.Slow(t, "a call in real time")
	srv := speechServer(t)
	r := startServe(t, []string{"hours TTSFAIL", "thanks"}, "HANDSET_TTS_FALLBACK=openai",
		"HANDSET_OPENAI_URL="+srv.URL(), "OPENAI_API_KEY=speech-key")
	_, finish := ttsTurn(t, r)
	first := "I heard you say: hours TTSFAIL."
	events := finish()
	spoken := map[string]bool{}
	for _, s := range srv.Speeches() {
		spoken[s.Input] = s.Status == 200
	}
	if !spoken[first] || !spoken[lastSentence] {
		t.Errorf("the fallback spoke %v, want the failed sentence and the one after it", spoken)
	}
	if ttsRequests(r, lastSentence) != 0 {
		t.Error("ElevenLabs was asked for the next sentence while it was held to be down")
	}
	if fb := eventsOf(events, obs.TTSFallback); len(fb) < 2 || fb[0].Name != "openai" || fb[0].Turn != 1 {
		t.Errorf("tts.fallback events %+v", fb)
	}
	second := r.agent.Requests()[1].Messages
	if !containsMessage(second, "assistant", first+" "+lastSentence) {
		t.Errorf("the agent's history lacks the reply the fallback spoke: %+v", second)
	}
}

// TestTTSStallFallsBackInTime: ElevenLabs never sends a byte; the sentence goes to the
// fallback HANDSET_TTS_TIMEOUT after it was asked for, not after a fixed 15 s.
func TestTTSStallFallsBackInTime(t *testing.T) {
	testpeer.Slow(t, "waits out a TTS timeout in real time")
	srv := speechServer(t)
	r := startServe(t, []string{"hours TTSSTALL", "thanks"}, "HANDSET_TTS_FALLBACK=openai", "HANDSET_TTS_TIMEOUT=1s",
		"HANDSET_OPENAI_URL="+srv.URL(), "OPENAI_API_KEY=speech-key")
	_, finish := ttsTurn(t, r)
	first := "I heard you say: hours TTSSTALL."
	events := finish()
	var asked, failed *obs.Event
	for i, e := range events {
		switch {
		case e.Type == obs.TTSRequest && e.Text == first:
			asked = &events[i]
		case e.Type == obs.TTSError && e.Turn == 1 && failed == nil:
			failed = &events[i]
		}
	}
	if asked == nil || failed == nil || failed.Kind != "timeout" {
		t.Fatalf("want the request and a timeout:\n%s", dumpEvents(events))
	}
	// At the timeout, not before; and well short of the old fixed 15 s.
	wait := failed.TS.Sub(asked.TS)
	if wait < time.Second || wait > 4*time.Second {
		t.Errorf("gave up on the stalled voice after %v, want 1 s", wait)
	}
	t.Logf("the stalled voice was given up %v after the request", wait.Round(time.Millisecond))
	if ttsRequests(r, first) != 1 {
		t.Errorf("the stalled voice was asked %d times, want once", ttsRequests(r, first))
	}
	if len(eventsOf(events, obs.TTSFallback)) == 0 || len(eventsOf(events, obs.TTSLost)) != 0 {
		t.Errorf("want the sentence spoken by the fallback:\n%s", dumpEvents(events))
	}
}

// TestTTSLostSentenceIsNotHistory: a sentence no voice could speak never reached the
// caller, so neither the agent's history nor the stored transcript holds it; the caller
// hears the error message after what could be spoken.
func TestTTSLostSentenceIsNotHistory(t *testing.T) {
	testpeer.Slow(t, "a call in real time")
	const token = "tts-token-0123456789abcdef-0123456789abcdef"
	r := startServe(t, []string{"hours TTSFAIL", "thanks"}, "HANDSET_API_TOKEN="+token)
	_, finish := ttsTurn(t, r)
	lost := "I heard you say: hours TTSFAIL."
	events := finish()
	if n := countText(events, obs.TTSLost, lost); n != 1 {
		t.Errorf("tts.lost for the sentence: %d\n%s", n, dumpEvents(events))
	}
	if countText(events, obs.TTSRequest, "Sorry, something went wrong.") != 1 {
		t.Errorf("the caller was not told:\n%s", dumpEvents(events))
	}
	second := r.agent.Requests()[1].Messages
	for _, m := range second {
		if strings.Contains(m.Content, "TTSFAIL") && m.Role == "assistant" {
			t.Errorf("the agent's history holds the sentence never spoken: %+v", m)
		}
	}
	if !containsMessage(second, "assistant", lastSentence) {
		t.Errorf("the agent's history lacks what was spoken: %+v", second)
	}
	stored := r.storedCall(token, r.onlyCallID(), 5)
	found := false
	for _, l := range stored.Transcript {
		if l.Role == voice.RoleAssistant && l.Turn == 1 {
			found = true
			if l.Text != lastSentence {
				t.Errorf("stored transcript line %q, want only %q", l.Text, lastSentence)
			}
		}
	}
	if !found {
		t.Errorf("no stored line for the reply: %+v", stored.Transcript)
	}
}

// TestNoVoiceEndsTheCallAsTTSFailed: neither the greeting nor the error message can be
// spoken; the call ends at once, named for the cause, instead of leaving the caller in
// silence.
func TestNoVoiceEndsTheCallAsTTSFailed(t *testing.T) {
	const token = "tts-token-0123456789abcdef-0123456789abcdef"
	r := startServe(t, nil, "HANDSET_FIRST_MESSAGE=Hello "+fakeelevenlabs.FailText,
		"HANDSET_ERROR_MESSAGE=Sorry "+fakeelevenlabs.FailText, "HANDSET_API_TOKEN="+token)
	c := r.dial(context.Background())
	select {
	case <-c.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end")
	}
	events := r.journal()
	if end := events[len(events)-1]; end.Reason != "tts_failed" {
		t.Errorf("call ended %q, want tts_failed:\n%s", end.Reason, dumpEvents(events))
	}
	if stored := r.storedCall(token, r.onlyCallID(), 0); stored.Outcome != "tts_failed" {
		t.Errorf("stored outcome %q", stored.Outcome)
	}
}
