// Package stttest is the conformance suite every voice.Recognizer passes: transcripts that
// stream while the caller speaks, cancellation, failures classified the way the call
// engine reads them (an error from Stream, or a stream that ends and whose Close says
// why), audio split at awkward places, and no goroutine left behind. Each provider runs it
// from its own conformance_test.go with Run, pointing the recognizer at its peer (a fake
// speaking the vendor's wire protocol, or the engine on this machine).
//
// The suite never sleeps to let something happen: it waits for transcripts and for
// Results to close, with generous bounds. The one clock it keeps is the caller's: the
// streaming case writes audio at the pace a caller speaks, so "while the caller is still
// talking" means something.
package stttest

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/transcode"
	"github.com/handset-voice/handset/internal/voice"
	"github.com/handset-voice/handset/internal/voice/voicetest"
)

// Peer is one recognizer under test and the peer it talks to.
type Peer struct {
	Recognizer voice.Recognizer
	// Format is what the suite streams; Utterance is one utterance of speech in it, at a
	// caller's level, without silence around it.
	Format    audio.Format
	Utterance []byte
	// Words is what the recognizer must make of Utterance (compared without case or
	// punctuation); empty when it cannot be known exactly, and any words will do.
	Words string
	// Partials: the recognizer sends partial transcripts while the caller speaks. A
	// recognizer that uploads whole utterances answers only after Finalize.
	Partials bool

	// The failures the peer can stage. Nil where it cannot, and the case is skipped.

	// WrongKey is a recognizer of the same provider whose credentials the peer refuses.
	WrongKey func(t *testing.T) voice.Recognizer
	// Unreachable is a recognizer of the same provider pointed at root, an http:// root
	// where nothing listens.
	Unreachable func(t *testing.T, root string) voice.Recognizer
	// Drop ends the peer's connections abruptly, as a dying network path does: the ones
	// open now, or for a peer reached by one request per utterance, the next request.
	Drop func()
}

// Run runs the whole suite. newPeer must return a fresh recognizer (and peer) for each
// call; Run calls it once per subtest. Subtests do not run in parallel.
func Run(t *testing.T, newPeer func(t *testing.T) Peer) {
	tests := []struct {
		name string
		fn   func(t *testing.T, p Peer)
	}{
		{"Streaming", testStreaming},
		{"NextUtterance", testNextUtterance},
		{"Cancel", testCancel},
		{"CloseIdempotent", testCloseIdempotent},
		{"CloseUnread", testCloseUnread},
		{"Errors/WrongKey", testWrongKey},
		{"Errors/Unreachable", testUnreachable},
		{"Errors/Dropped", testDropped},
		{"BadInput/UnsupportedFormat", testUnsupportedFormat},
		{"BadInput/EmptyWrites", testEmptyWrites},
		{"BadInput/SplitSamples", testSplitSamples},
		{"NoGoroutineLeft", testNoGoroutineLeft},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPeer(t)
			if p.Recognizer == nil || len(p.Utterance) == 0 || p.Format.Rate == 0 {
				t.Fatal("the factory gave no Recognizer, Format or Utterance")
			}
			tc.fn(t, p)
		})
	}
}

// Bounds on waits. Reaching one means the code under test hung, not that it was slow.
const (
	// patience bounds waiting for a transcript, or for a failure to surface.
	patience = 30 * time.Second
	// prompt bounds what must happen at once: a cancelled stream ending, Close returning.
	prompt = 5 * time.Second
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*patience)
	t.Cleanup(cancel)
	return ctx
}

// open opens a stream on r in p's format, closed when the test ends.
func open(ctx context.Context, t *testing.T, r voice.Recognizer, p Peer) voice.RecognizerStream {
	t.Helper()
	st, err := r.Stream(ctx, p.Format, voice.StreamOptions{CallID: "conformance-call"})
	if err != nil {
		t.Fatalf("Stream(%v): %v", p.Format, err)
	}
	if st == nil {
		t.Fatal("Stream returned neither a stream nor an error")
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// silence is d of silence in f.
func silence(t *testing.T, f audio.Format, d time.Duration) []byte {
	t.Helper()
	enc, err := transcode.New(f.Rate, f)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(nil), enc.Encode(audiotest.Silence(f.Rate, d))...)
}

// spoken is p's utterance with the quiet a caller leaves around it.
func spoken(t *testing.T, p Peer) []byte {
	t.Helper()
	var b []byte
	b = append(b, silence(t, p.Format, 300*time.Millisecond)...)
	b = append(b, p.Utterance...)
	return append(b, silence(t, p.Format, 800*time.Millisecond)...)
}

// write writes a in pieces of n bytes.
func write(t *testing.T, st voice.RecognizerStream, a []byte, n int) {
	t.Helper()
	for len(a) > 0 {
		k := min(n, len(a))
		if err := st.Write(a[:k]); err != nil {
			t.Fatalf("Write: %v", err)
		}
		a = a[k:]
	}
}

// say writes p's utterance in 20 ms frames, as fast as the stream takes it, then Finalize.
func say(t *testing.T, st voice.RecognizerStream, p Peer) {
	t.Helper()
	write(t, st, spoken(t, p), p.Format.FrameBytes())
	if err := st.Finalize(); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
}

// heard is what a stream made of an utterance: the first final with words, and the
// partials before it; ended when Results closed first.
type heard struct {
	final    string
	partials []string
	ended    bool
}

// listen reads Results until a final with words arrives or Results is closed. Finals
// without words (nothing heard) are passed over.
func listen(t *testing.T, st voice.RecognizerStream) heard {
	t.Helper()
	var h heard
	bound := time.NewTimer(patience)
	defer bound.Stop()
	for {
		select {
		case tr, ok := <-st.Results():
			switch {
			case !ok:
				h.ended = true
				return h
			case !tr.Final:
				h.partials = append(h.partials, tr.Text)
			case strings.TrimSpace(tr.Text) != "":
				h.final = tr.Text
				return h
			}
		case <-bound.C:
			t.Fatalf("no final transcript with words in %v (partials so far: %q)", patience, h.partials)
		}
	}
}

// hears says p's utterance on st and checks that it is heard.
func hears(t *testing.T, st voice.RecognizerStream, p Peer) heard {
	t.Helper()
	say(t, st, p)
	h := listen(t, st)
	if h.ended {
		t.Fatalf("Results closed before a final transcript (Close: %v)", st.Close())
	}
	checkWords(t, p, h.final)
	return h
}

var punctuation = regexp.MustCompile(`[^\p{L}\p{N}' ]+`)

// normal is text without case, punctuation or extra spaces.
func normal(s string) string {
	return strings.Join(strings.Fields(punctuation.ReplaceAllString(strings.ToLower(s), " ")), " ")
}

func checkWords(t *testing.T, p Peer, final string) {
	t.Helper()
	if p.Words != "" && normal(final) != normal(p.Words) {
		t.Errorf("final transcript %q, want %q", final, p.Words)
	}
}

// ended waits for Results to close, passing over what is still in it, and returns Close's
// answer.
func ended(t *testing.T, st voice.RecognizerStream, within time.Duration) error {
	t.Helper()
	bound := time.NewTimer(within)
	defer bound.Stop()
	for {
		select {
		case _, ok := <-st.Results():
			if !ok {
				return voicetest.CloseWithin(t, st, prompt)
			}
		case <-bound.C:
			t.Fatalf("Results still open %v later", within)
		}
	}
}
