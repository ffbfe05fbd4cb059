//go:build embedded

package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/audio/resample"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// A real SIP phone (baresip) that offers only G.722 calls Handset, which allows G722: the
// call runs wideband both ways through baresip's own G.722 codec (an implementation
// independent of Handset's). The question baresip plays at 16 kHz reaches the agent, and
// baresip records the greeting and the answer at G.722's 16 kHz, where PocketSphinx hears
// them.
func TestBaresipCallsHandsetInG722(t *testing.T) {
	testpeer.Slow(t, "a real-time G.722 call between baresip and handset serve")
	const question = "what time do you open tomorrow"
	r, trunk := startServeSIP(t, nil, "HANDSET_SIP_CODECS=G722,PCMU,PCMA", "HANDSET_STT=sphinx", "HANDSET_TTS=flite",
		"HANDSET_SPHINX_DECODERS=1", "HANDSET_VAD=webrtc", "HANDSET_ENGINES_DIR="+repoEngines(t),
		"HANDSET_FIRST_MESSAGE=Hello, how can I help you today?")
	source := filepath.Join(t.TempDir(), "question16k.wav")
	speech := fliteSpeech(t, "rms", question, 16000)
	lead, after := make([]int16, 3*16000), make([]int16, 15*16000)
	writeWideWAV(t, source, append(append(lead, speech...), after...))
	b, err := sippeer.StartBaresip(t, sippeer.BaresipOptions{Source: source, User: "wideband", Codecs: []string{"G722"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := b.Dial("sip:handset@" + trunk.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitEstablished(ctx); err != nil {
		t.Fatalf("%v\nbaresip:\n%s\nhandset:\n%s", err, b.Log(), r.logs.String())
	}
	r.waitEvent(obs.PlayoutDone, func(e obs.Event) bool { return e.Turn == 1 }, 60*time.Second)
	time.Sleep(300 * time.Millisecond) // the last packets of the answer reach baresip
	if err := b.Hangup(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitClosed(ctx); err != nil {
		t.Fatal(err)
	}

	reqs := r.agent.Requests()
	if len(reqs) == 0 {
		t.Fatalf("the agent got nothing:\n%s", dumpEvents(r.journal()))
	}
	heardQ := reqs[0].Messages[len(reqs[0].Messages)-1].Content
	t.Logf("baresip said %q in G.722, the agent got %q", question, heardQ)
	if n := keywordsIn(heardQ, "time", "open", "tomorrow"); n < 2 {
		t.Errorf("the agent got %q: %d of the question's keywords", heardQ, n)
	}

	rec, err := b.Recording()
	if err != nil {
		t.Fatal(err)
	}
	wide, rate := readPCM16WAV(t, rec)
	if rate != 16000 {
		t.Fatalf("baresip recorded at %d Hz, want G.722's 16000: the call did not run in G.722", rate)
	}
	if lvl := echo.LevelDB(wide[:min(len(wide), 8000)]); lvl < -40 {
		t.Errorf("the recording's first half second is at %.1f dBFS: the greeting's start was not heard", lvl)
	}
	down, err := resample.New(16000, 8000)
	if err != nil {
		t.Fatal(err)
	}
	pcm := down.Process(nil, wide)
	greeting := recognise(t, pcm[:min(len(pcm), 3*8000)])
	t.Logf("PocketSphinx hears the recording's first three seconds as %q", greeting)
	if !strings.HasPrefix(greeting, "hello") {
		t.Errorf("the greeting's first word was not heard: %q", greeting)
	}
	answer := r.agent.ReplyText(reqs[0].Messages)
	heardA := recognise(t, pcm)
	t.Logf("Handset answered %q; PocketSphinx hears in baresip's G.722 recording %q", answer, heardA)
	if n := keywordsIn(heardA, longWords(strings.Fields(strings.ToLower(answer)))...); n < 2 {
		t.Errorf("the answer %q is not heard in the recording (%q)", answer, heardA)
	}
	if os.Getenv("HANDSET_TEST_VERBOSE") != "" {
		t.Log(dumpEvents(r.journal()))
	}
}

// writeWideWAV writes 16 kHz 16-bit mono PCM as a WAV file.
func writeWideWAV(t *testing.T, path string, pcm []int16) {
	t.Helper()
	b := make([]byte, 2*len(pcm))
	for i, v := range pcm {
		b[2*i], b[2*i+1] = byte(v), byte(v>>8)
	}
	var buf bytes.Buffer
	if err := wav.Write(&buf, audio.Format{Encoding: audio.PCM16, Rate: 16000}, b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(fmt.Errorf("writing %s: %w", path, err))
	}
}
