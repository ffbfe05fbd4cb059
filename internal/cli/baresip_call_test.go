//go:build embedded

package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/sippeer"
)

// What the baresip tests share: a phone that asks a question from a file, and the checks
// that the call worked both ways (the agent got the question; baresip heard the greeting
// from its first word, and the answer).

// baresipQuestion is what the baresip phone asks.
const baresipQuestion = "what time do you open tomorrow"

// writeBaresipQuestion writes the file baresip plays, at rate: three seconds of line first
// (the greeting plays), the question, and time for the answer (baresip hangs up when its
// file ends).
func writeBaresipQuestion(t *testing.T, dir string, rate int) string {
	t.Helper()
	source := filepath.Join(dir, "question.wav")
	speech := fliteSpeech(t, "rms", baresipQuestion, rate)
	lead, after := make([]int16, 3*rate), make([]int16, 15*rate)
	if err := writePCM16WAVAt(source, rate, append(append(lead, speech...), after...)); err != nil {
		t.Fatal(err)
	}
	return source
}

// finishBaresipCall waits for the agent's answer to have played, hangs baresip up, and
// checks the call: the agent got the question, and baresip's recording (at rate) starts
// with the greeting's first word and holds the answer. how names the call in the logs.
func finishBaresipCall(t *testing.T, ctx context.Context, r *rig, b *sippeer.Baresip, rate int, how string) {
	t.Helper()
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
	t.Logf("baresip said %q %s, the agent got %q", baresipQuestion, how, heardQ)
	if n := keywordsIn(heardQ, "time", "open", "tomorrow"); n < 2 {
		t.Errorf("the agent got %q: %d of the question's keywords", heardQ, n)
	}

	path, err := b.Recording()
	if err != nil {
		t.Fatal(err)
	}
	rec, got := readPCM16WAV(t, path)
	if got != rate {
		t.Fatalf("baresip recorded at %d Hz, want %d: the call did not run in the codec it should", got, rate)
	}
	// The greeting starts at once: the first half second of the recording holds speech.
	if lvl := echo.LevelDB(rec[:min(len(rec), rate/2)]); lvl < -40 {
		t.Errorf("the recording's first half second is at %.1f dBFS: the greeting's start was not heard", lvl)
	}
	// PocketSphinx's model is 16 kHz: a wideband recording is heard whole.
	pcm := rec
	greeting := recognise(t, pcm[:min(len(pcm), 3*rate)], rate)
	t.Logf("PocketSphinx hears the recording's first three seconds as %q", greeting)
	if !strings.HasPrefix(greeting, "hello") {
		t.Errorf("the greeting's first word was not heard: %q (its first syllable clipped?)", greeting)
	}
	answer := r.agent.ReplyText(reqs[0].Messages)
	heardA := recognise(t, pcm, rate)
	t.Logf("Handset answered %q; PocketSphinx hears in baresip's recording %q", answer, heardA)
	words := strings.Fields(strings.ToLower(strings.Trim(answer, ".!?")))
	if n := keywordsIn(heardA, longWords(words)...); n < 2 {
		t.Errorf("the answer %q is not heard in the recording (%q)", answer, heardA)
	}
}
