package stttest

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
	"github.com/handset-voice/handset/internal/voice/voicetest"
)

// testStreaming speaks at a caller's pace and keeps the line open after: partials (where
// the recognizer sends them) come while the caller is still talking, and the final, with
// the caller's words, while audio is still flowing, without Close.
func testStreaming(t *testing.T, p Peer) {
	st := open(testContext(t), t, p.Recognizer, p)
	const step = 100 * time.Millisecond
	piece := p.Format.Bytes(step)
	speech := append(silence(t, p.Format, 300*time.Millisecond), p.Utterance...)
	quiet := silence(t, p.Format, step)
	tick := time.NewTicker(step)
	defer tick.Stop()
	bound := time.NewTimer(patience + p.Format.Duration(len(speech)))
	defer bound.Stop()

	var partials []string
	partialsWhileSpeaking, written, quietSteps := -1, 0, 0
	for {
		select {
		case tr, ok := <-st.Results():
			switch {
			case !ok:
				t.Fatalf("Results closed before a final transcript (Close: %v)", st.Close())
			case !tr.Final:
				partials = append(partials, tr.Text)
			case strings.TrimSpace(tr.Text) != "":
				checkWords(t, p, tr.Text)
				if p.Partials && partialsWhileSpeaking <= 0 {
					t.Errorf("no partial transcript while the caller spoke (%v of speech); after: %q",
						p.Format.Duration(len(p.Utterance)), partials)
				}
				return
			}
		case <-tick.C:
			if written < len(speech) {
				n := min(piece, len(speech)-written)
				write(t, st, speech[written:written+n], p.Format.FrameBytes())
				if written += n; written == len(speech) {
					partialsWhileSpeaking = len(partials)
				}
				continue
			}
			write(t, st, quiet, p.Format.FrameBytes())
			// the engine's VAD hears the end of speech after its hangover, then finalizes
			if quietSteps++; quietSteps == 8 {
				if err := st.Finalize(); err != nil {
					t.Fatalf("Finalize: %v", err)
				}
			}
		case <-bound.C:
			t.Fatalf("no final transcript with words (partials: %q)", partials)
		}
	}
}

// testNextUtterance: a stream hears one utterance after another, each with its final.
func testNextUtterance(t *testing.T, p Peer) {
	st := open(testContext(t), t, p.Recognizer, p)
	hears(t, st, p)
	hears(t, st, p)
	if err := voicetest.CloseWithin(t, st, prompt); err != nil {
		t.Errorf("Close after normal use: %v, want nil", err)
	}
}

// testCancel: cancelling the stream's context ends it at once, mid-utterance, Results
// closes, and Close says it was cancelled (or nothing), the same every time.
func testCancel(t *testing.T, p Peer) {
	ctx, cancel := context.WithCancel(testContext(t))
	st := open(ctx, t, p.Recognizer, p)
	write(t, st, append(silence(t, p.Format, 300*time.Millisecond), p.Utterance...), p.Format.FrameBytes())
	cancel()
	err := ended(t, st, prompt)
	if err != nil {
		voicetest.WantKind(t, "Close after cancel", err, voice.KindCanceled)
	}
	if again := voicetest.CloseWithin(t, st, prompt); again != err {
		t.Errorf("second Close = %v, first %v", again, err)
	}
}

// testCloseIdempotent: Close after use returns nil, ends Results, and a second Close
// returns at once with the same answer.
func testCloseIdempotent(t *testing.T, p Peer) {
	st := open(testContext(t), t, p.Recognizer, p)
	hears(t, st, p)
	if err := voicetest.CloseWithin(t, st, prompt); err != nil {
		t.Errorf("Close: %v, want nil", err)
	}
	if err := ended(t, st, prompt); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
}

// testCloseUnread: an owner that stops reading Results (the call hung up mid-utterance)
// can still Close promptly.
func testCloseUnread(t *testing.T, p Peer) {
	st := open(testContext(t), t, p.Recognizer, p)
	say(t, st, p)
	say(t, st, p)
	if err := voicetest.CloseWithin(t, st, prompt); err != nil {
		t.Errorf("Close: %v, want nil", err)
	}
}

// sayRegardless says p's utterance on a stream that may be failing: Write and Finalize
// may refuse once it has ended, which is allowed.
func sayRegardless(t *testing.T, st voice.RecognizerStream, p Peer) {
	t.Helper()
	a, n := spoken(t, p), p.Format.FrameBytes()
	for len(a) > 0 {
		k := min(n, len(a))
		if st.Write(a[:k]) != nil {
			return
		}
		a = a[k:]
	}
	_ = st.Finalize()
}

// outcome is the first final (words or none), or the end of Results.
func outcome(t *testing.T, st voice.RecognizerStream) (final string, ended bool) {
	t.Helper()
	bound := time.NewTimer(patience)
	defer bound.Stop()
	for {
		select {
		case tr, ok := <-st.Results():
			if !ok {
				return "", true
			}
			if tr.Final {
				return tr.Text, false
			}
		case <-bound.C:
			t.Fatalf("neither a final transcript nor the end of the stream in %v", patience)
		}
	}
}

// failing checks how a recognizer that cannot work fails: Stream returns a classified
// error, or the stream ends and Close returns one. A final without words (the utterance
// was lost) is allowed when more is allowed: the stream then carries on.
func failing(t *testing.T, r voice.Recognizer, p Peer, streamGoesOn bool, kinds ...voice.ErrorKind) {
	t.Helper()
	st, err := r.Stream(testContext(t), p.Format, voice.StreamOptions{})
	if err != nil {
		voicetest.WantKind(t, "Stream", err, kinds...)
		return
	}
	t.Cleanup(func() { _ = st.Close() })
	sayRegardless(t, st, p)
	final, end := outcome(t, st)
	switch {
	case end:
		voicetest.WantKind(t, "Close of the ended stream", voicetest.CloseWithin(t, st, prompt), kinds...)
	case final != "":
		t.Errorf("final transcript %q from a recognizer that cannot reach its peer", final)
	case !streamGoesOn:
		t.Errorf("an empty final, and the stream goes on, where the failure cannot pass (want kind %v)", kinds)
	}
}

func testWrongKey(t *testing.T, p Peer) {
	if p.WrongKey == nil {
		t.Skip("the peer takes no credentials (Peer.WrongKey is nil)")
	}
	failing(t, p.WrongKey(t), p, false, voice.KindAuth)
}

func testUnreachable(t *testing.T, p Peer) {
	if p.Unreachable == nil {
		t.Skip("the recognizer has no peer to miss (Peer.Unreachable is nil)")
	}
	failing(t, p.Unreachable(t, testpeer.NowhereURL(t)), p, true, voice.KindTransient)
}

// testDropped: after the peer drops the connection, the stream either repairs itself
// (the next utterance is heard; the one cut off may be lost) or ends with a retryable
// error the call engine answers by reopening.
func testDropped(t *testing.T, p Peer) {
	if p.Drop == nil {
		t.Skip("the peer cannot drop connections (Peer.Drop is nil)")
	}
	st := open(testContext(t), t, p.Recognizer, p)
	hears(t, st, p)
	p.Drop()
	sayRegardless(t, st, p)
	final, end := outcome(t, st)
	switch {
	case end:
		voicetest.WantKind(t, "Close after the drop", voicetest.CloseWithin(t, st, prompt), voice.KindTransient, voice.KindTimeout)
	case final == "":
		hears(t, st, p) // the utterance the drop cut off was lost; the next one is heard
	default:
		checkWords(t, p, final)
	}
}

func testUnsupportedFormat(t *testing.T, p Peer) {
	for _, f := range []audio.Format{{Encoding: 99, Rate: p.Format.Rate}, {Encoding: p.Format.Encoding}} {
		st, err := p.Recognizer.Stream(testContext(t), f, voice.StreamOptions{})
		if err == nil {
			_ = st.Close()
		}
		voicetest.WantKind(t, "Stream("+f.String()+")", err, voice.KindBadInput)
	}
}

// testEmptyWrites: empty writes and a Finalize with nothing said are harmless, and make
// up no words; the stream then hears the caller as usual.
func testEmptyWrites(t *testing.T, p Peer) {
	st := open(testContext(t), t, p.Recognizer, p)
	for _, b := range [][]byte{nil, {}} {
		if err := st.Write(b); err != nil {
			t.Fatalf("Write(%v): %v", b, err)
		}
	}
	if err := st.Finalize(); err != nil {
		t.Fatalf("Finalize with nothing said: %v", err)
	}
	hears(t, st, p)
}

// testSplitSamples: audio arrives in writes of any length; a 16-bit sample split across
// two writes is joined again.
func testSplitSamples(t *testing.T, p Peer) {
	st := open(testContext(t), t, p.Recognizer, p)
	write(t, st, spoken(t, p), 333)
	if err := st.Finalize(); err != nil {
		t.Fatalf("Finalize: %v", err)
	}
	h := listen(t, st)
	if h.ended {
		t.Fatalf("Results closed before a final transcript (Close: %v)", st.Close())
	}
	checkWords(t, p, h.final)
}

// testNoGoroutineLeft: once Close returns, nothing of the stream runs. Connections kept
// in an HTTP client's pool, and the peer's end of them, belong to the client and the
// server, not the stream (the provider's TestMain checks them when its peers are gone).
func testNoGoroutineLeft(t *testing.T, p Peer) {
	before := goleak.IgnoreCurrent()
	st, err := p.Recognizer.Stream(testContext(t), p.Format, voice.StreamOptions{})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	hears(t, st, p)
	if err := voicetest.CloseWithin(t, st, prompt); err != nil {
		t.Errorf("Close: %v", err)
	}
	voicetest.NoneLeft(t, before)
}
