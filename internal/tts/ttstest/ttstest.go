// Package ttstest is the conformance suite every voice.Synthesizer passes: audio in the
// format asked for, lasting as long as the text takes to say, streaming as it is made,
// stopped by a cancel or a Close, failures classified the way the call engine reads them,
// blank and very long text, and no goroutine left behind. Each provider runs it from its
// own conformance_test.go with Run, pointing the synthesizer at its peer (a fake speaking
// the vendor's wire protocol, or the engine on this machine).
//
// The suite never sleeps: it reads audio as it comes, with generous bounds on every wait.
package ttstest

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/voice"
	"github.com/handset-voice/handset/internal/voice/voicetest"
)

// Peer is one synthesizer under test and the peer it talks to.
type Peer struct {
	Synthesizer voice.Synthesizer
	// Formats the synthesizer is asked for; the same text must last as long in each. The
	// other cases use the first.
	Formats []audio.Format
	// Streams: audio is handed over as it is made, so a long text's first audio comes
	// long before its last.
	Streams bool

	// The failures the peer can stage. Empty where it cannot, and the case is skipped.

	// WrongKey is a synthesizer of the same provider whose credentials the peer refuses.
	WrongKey func(t *testing.T) voice.Synthesizer
	// Unreachable is a synthesizer of the same provider pointed at root, an http:// root
	// where nothing listens.
	Unreachable func(t *testing.T, root string) voice.Synthesizer
	// ServerErrorText is text the peer answers with a server error (HTTP 5xx), every time.
	ServerErrorText string
	// StallText is text the peer never answers: the synthesizer's own deadline, which
	// the factory sets well under a few seconds, must end the wait.
	StallText string
	// CutText is text whose audio the peer breaks off partway, the connection dropped.
	CutText string
}

// Run runs the whole suite. newPeer must return a fresh synthesizer (and peer) for each
// call; Run calls it once per subtest. Subtests do not run in parallel.
func Run(t *testing.T, newPeer func(t *testing.T) Peer) {
	tests := []struct {
		name string
		fn   func(t *testing.T, p Peer)
	}{
		{"Format", testFormat},
		{"Streaming", testStreaming},
		{"Cancel", testCancel},
		{"CloseMidStream", testCloseMidStream},
		{"Errors/WrongKey", testWrongKey},
		{"Errors/Unreachable", testUnreachable},
		{"Errors/ServerError", testServerError},
		{"Errors/Timeout", testTimeout},
		{"Errors/Cut", testCut},
		{"BadInput/UnsupportedFormat", testUnsupportedFormat},
		{"BadInput/BlankText", testBlankText},
		{"BadInput/LongText", testLongText},
		{"NoGoroutineLeft", testNoGoroutineLeft},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPeer(t)
			if p.Synthesizer == nil || len(p.Formats) == 0 {
				t.Fatal("the factory gave no Synthesizer or Formats")
			}
			tc.fn(t, p)
		})
	}
}

// Bounds on waits. Reaching one means the code under test hung, not that it was slow.
const (
	patience = 30 * time.Second // a whole synthesis, or a failure surfacing
	prompt   = 5 * time.Second  // what must happen at once: a cancel or Close taking hold
)

// sentence is what most cases have spoken: one sentence a caller might hear.
const sentence = "Your table for two is booked for seven tonight."

// paragraph is many sentences: long enough that a synthesizer handing over audio as it
// makes it gives the first well before the last.
var paragraph = strings.Repeat("I have moved your appointment to Friday morning at ten, as you asked. ", 15)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	t.Cleanup(cancel)
	return ctx
}

// speak starts a synthesis that must start, closed when the test ends.
func speak(ctx context.Context, t *testing.T, s voice.Synthesizer, text string, f audio.Format) io.ReadCloser {
	t.Helper()
	rc, err := s.Synthesize(ctx, text, f)
	if err != nil {
		t.Fatalf("Synthesize(%.30q, %v): %v", text, f, err)
	}
	if rc == nil {
		t.Fatal("Synthesize returned neither a reader nor an error")
	}
	t.Cleanup(func() { _ = rc.Close() })
	return rc
}

// read is what a reader gave until it ended or stop said enough.
type read struct {
	audio []byte
	first time.Duration // from the start of reading to the first audio
	took  time.Duration // to the end
	err   error         // what ended it: nil for io.EOF
}

// readUntil reads rc until EOF, an error, or stop(audio so far); a reader that does none
// of these within bound fails t.
func readUntil(t *testing.T, rc io.ReadCloser, bound time.Duration, stop func(audio []byte) bool) read {
	t.Helper()
	var r read
	start := time.Now()
	voicetest.Bounded(t, bound, rc, "the audio neither ended nor failed", func() {
		buf := make([]byte, 4096)
		for {
			n, err := rc.Read(buf)
			if n > 0 && len(r.audio) == 0 {
				r.first = time.Since(start)
			}
			r.audio = append(r.audio, buf[:n]...)
			if err != nil || (stop != nil && stop(r.audio)) {
				if !errors.Is(err, io.EOF) {
					r.err = err
				}
				r.took = time.Since(start)
				return
			}
		}
	})
	return r
}

// loudest is the level of the loudest 20 ms frame of audio b in f, in dBFS.
func loudest(f audio.Format, b []byte) float64 {
	return audiotest.PeakFrameDBFS(audiotest.Decode(f, b), f.Rate)
}
