package cli

import (
	"context"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/fakeopenaispeech"
	"github.com/handset-voice/handset/internal/testpeer"
)

// TestSelfHostedSpeechServers: HANDSET_STT=openai and HANDSET_TTS=openai carry a whole phone
// call through a server speaking OpenAI's audio API (as faster-whisper and Kokoro servers
// do): each caller utterance is uploaded once, with the configured model, and the replies
// are spoken from the server's 24 kHz PCM.
func TestSelfHostedSpeechServers(t *testing.T) {
	testpeer.Slow(t, "a call in real time")
	srv, err := fakeopenaispeech.Start(fakeopenaispeech.Options{
		Key: "speech-key", Transcripts: []string{"what are your opening hours", "thank you"}, MsPerChar: 20,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	r := startServe(t, nil, "HANDSET_STT=openai", "HANDSET_TTS=openai", "HANDSET_OPENAI_URL="+srv.URL(),
		"OPENAI_API_KEY=speech-key", "HANDSET_OPENAI_STT_MODEL=Systran/faster-whisper-small",
		"HANDSET_OPENAI_TTS_MODEL=kokoro", "HANDSET_OPENAI_TTS_VOICE=af_bella")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	for turn, seed := range []int64{11, 12} {
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, seed)); err != nil {
			t.Fatal(err)
		}
		waitMark(ctx, t, c, markEnd(turn+1))
	}
	_ = c.Hangup()
	<-c.Done()

	reqs := r.agent.Requests()
	if len(reqs) != 2 || reqs[0].Messages[len(reqs[0].Messages)-1].Content != "what are your opening hours" {
		t.Fatalf("the agent got %d requests: %+v", len(reqs), reqs)
	}
	if n := len(srv.Uploads()); n != 2 {
		t.Errorf("uploads = %d, want one per utterance (2)", n)
	}
	for _, u := range srv.Uploads() {
		if u.Model != "Systran/faster-whisper-small" {
			t.Errorf("upload with model %q", u.Model)
		}
	}
	if n := len(srv.Speeches()); n < 3 { // the greeting and two replies
		t.Errorf("speech requests = %d, want at least 3", n)
	}
	for _, s := range srv.Speeches() {
		if s.Model != "kokoro" || s.Voice != "af_bella" {
			t.Errorf("speech with model %q voice %q", s.Model, s.Voice)
		}
	}
	if got := len(c.Snapshot().PlayedAudio()); got == 0 {
		t.Error("no audio was played")
	}
}
