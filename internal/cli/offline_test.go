//go:build embedded

package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/resample"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/testpeer"
)

// fliteSpeech is text spoken by the flite program's voice, at rate Hz.
func fliteSpeech(t *testing.T, voice, text string, rate int) []int16 {
	t.Helper()
	bin := testpeer.Program(t, "flite", testpeer.Flite)
	path := filepath.Join(t.TempDir(), "speech.wav")
	if out, err := exec.Command(bin, "-voice", voice, "-t", text, "-o", path).CombinedOutput(); err != nil {
		t.Fatalf("flite: %v %s", err, out)
	}
	f, data, err := wav.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pcm := make([]int16, len(data)/2)
	for i := range pcm {
		pcm[i] = int16(uint16(data[2*i]) | uint16(data[2*i+1])<<8)
	}
	r, err := resample.New(f.Rate, rate)
	if err != nil {
		t.Fatal(err)
	}
	return r.Process(nil, pcm)
}

// keywordsIn counts the words of want found in got.
func keywordsIn(got string, want ...string) (n int) {
	words := strings.Fields(strings.ToLower(got))
	for _, w := range want {
		for _, g := range words {
			if strings.Trim(g, ".,!?") == w {
				n++
				break
			}
		}
	}
	return n
}

// TestOfflinePhoneCall: a phone call (8 kHz mu-law, Twilio's wire) with no cloud at all:
// the caller's flite voice is recognised by PocketSphinx, the words reach the agent, and
// the reply is spoken by flite.
func TestOfflinePhoneCall(t *testing.T) {
	r := startServe(t, nil, "HANDSET_STT=sphinx", "HANDSET_TTS=flite", "HANDSET_SPHINX_DECODERS=1",
		"HANDSET_VAD=webrtc", "HANDSET_ENGINES_DIR="+repoEngines(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	said := []string{"please book a table for two at seven", "what is the weather like in boston tomorrow"}
	for i, text := range said {
		pcm := fliteSpeech(t, "rms", text, 8000)
		if err := c.SayAndWait(ctx, audiotest.Mulaw(pcm)); err != nil {
			t.Fatal(err)
		}
		waitMarkFor(ctx, t, c, markEnd(i+1), 30*time.Second)
	}
	_ = c.Hangup()
	<-c.Done()

	reqs := r.agent.Requests()
	if len(reqs) != len(said) {
		t.Fatalf("agent requests = %d, want %d:\n%s", len(reqs), len(said), dumpEvents(r.journal()))
	}
	wants := [][]string{{"book", "table", "two", "seven"}, {"weather", "boston", "tomorrow"}}
	for i, req := range reqs {
		heard := req.Messages[len(req.Messages)-1].Content
		t.Logf("said %q, the agent got %q", said[i], heard)
		if n := keywordsIn(heard, wants[i]...); n < 2 {
			t.Errorf("turn %d: the agent got %q: %d of the keywords %v", i+1, heard, n, wants[i])
		}
	}
	events := r.journal()
	if start := events[0]; start.STT != "sphinx" || start.TTS != "flite" {
		t.Errorf("call.start names stt %q tts %q", start.STT, start.TTS)
	}
	for _, turn := range obs.Turns(events) {
		t.Logf("turn %d: endpoint %.0f ms, response %.0f ms (speech end to first audio %.0f ms)",
			turn.Turn, turn.EndpointMS, turn.ResponseMS, turn.EndpointMS+turn.ResponseMS)
	}
	if os.Getenv("HANDSET_TEST_VERBOSE") != "" {
		t.Log(dumpEvents(events))
	}
}
