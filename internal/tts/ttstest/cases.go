package ttstest

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
	"github.com/handset-voice/handset/internal/voice/voicetest"
)

// Speech lasts between these per character of text, for every voice: far apart, so the
// check is about the format (a wrong rate or encoding is off by two or more), not the voice.
const (
	minPerChar = 25 * time.Millisecond
	maxPerChar = 250 * time.Millisecond
)

// shortest is the least audio in f text could become: anything less was cut short.
func shortest(f audio.Format, text string) int {
	return f.Bytes(time.Duration(len(text)) * minPerChar)
}

// testFormat: each format asked for comes in whole samples, loud enough to hear, lasting
// as long as the text takes to say, and the same text lasts as long in every format.
func testFormat(t *testing.T, p Peer) {
	var first time.Duration
	for i, f := range p.Formats {
		r := readUntil(t, speak(testContext(t), t, p.Synthesizer, sentence, f), patience, nil)
		if r.err != nil {
			t.Fatalf("%v: reading: %v", f, r.err)
		}
		if bps := f.Encoding.BytesPerSample(); len(r.audio)%bps != 0 {
			t.Errorf("%v: %d bytes is not a whole number of %d-byte samples", f, len(r.audio), bps)
		}
		d := f.Duration(len(r.audio))
		perChar := d / time.Duration(len(sentence))
		if perChar < minPerChar || perChar > maxPerChar {
			t.Errorf("%v: %v of audio for %d characters (%v each), want %v to %v each",
				f, d, len(sentence), perChar, minPerChar, maxPerChar)
		}
		if l := loudest(f, r.audio); l < -30 {
			t.Errorf("%v: the loudest 20 ms is %.1f dBFS: not speech a caller hears", f, l)
		}
		if i == 0 {
			first = d
			continue
		}
		if diff := (d - first).Abs(); diff > first/10+60*time.Millisecond {
			t.Errorf("the same text lasts %v in %v and %v in %v", first, p.Formats[0], d, f)
		}
	}
}

// testStreaming: a long text's first audio arrives long before its last.
func testStreaming(t *testing.T, p Peer) {
	if !p.Streams {
		t.Skip("the synthesizer hands over its audio whole (Peer.Streams is false)")
	}
	// long enough that starting up (a process, a connection) is a small part of the whole
	text := paragraph + paragraph + paragraph
	r := readUntil(t, speak(testContext(t), t, p.Synthesizer, text, p.Formats[0]), patience, nil)
	if r.err != nil {
		t.Fatalf("reading: %v", r.err)
	}
	if r.first > r.took/2 {
		t.Errorf("first audio after %v of %v: the audio was not handed over as it was made", r.first, r.took)
	}
}

// testCancel: cancelling the context mid-stream ends the audio at once; what still comes
// is what was already made, never the whole text.
func testCancel(t *testing.T, p Peer) {
	f := p.Formats[0]
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	rc := speak(ctx, t, p.Synthesizer, paragraph, f)
	if r := readUntil(t, rc, patience, func(a []byte) bool { return len(a) > 0 }); r.err != nil || len(r.audio) == 0 {
		t.Fatalf("no audio before the cancel: %v", r.err)
	}
	cancel()
	r := readUntil(t, rc, prompt, nil)
	if r.err != nil {
		voicetest.WantKind(t, "reading after the cancel", r.err, voice.KindCanceled)
	}
	if len(r.audio) >= shortest(f, paragraph) {
		t.Errorf("%v of audio after the cancel: the whole text was spoken", f.Duration(len(r.audio)))
	}
	if err := voicetest.CloseWithin(t, rc, prompt); err != nil {
		t.Errorf("Close after the cancel: %v", err)
	}
}

// testCloseMidStream: closing the reader mid-stream (the engine's deferred Close, after
// it stopped reading) returns at once, and a second Close is harmless. Read after Close
// is not the engine's to call, so not tested.
func testCloseMidStream(t *testing.T, p Peer) {
	rc := speak(testContext(t), t, p.Synthesizer, paragraph, p.Formats[0])
	if r := readUntil(t, rc, patience, func(a []byte) bool { return len(a) > 0 }); r.err != nil || len(r.audio) == 0 {
		t.Fatalf("no audio before Close: %v", r.err)
	}
	if err := voicetest.CloseWithin(t, rc, prompt); err != nil {
		t.Errorf("Close: %v", err)
	}
	voicetest.CloseWithin(t, rc, prompt)
}

// failing checks a synthesis that cannot work: Synthesize, or the first Read, returns a
// classified error, with no audio before it.
func failing(t *testing.T, s voice.Synthesizer, text string, f audio.Format, kinds ...voice.ErrorKind) {
	t.Helper()
	rc, err := s.Synthesize(testContext(t), text, f)
	if err != nil {
		voicetest.WantKind(t, "Synthesize", err, kinds...)
		return
	}
	t.Cleanup(func() { _ = rc.Close() })
	r := readUntil(t, rc, patience, nil)
	if len(r.audio) > 0 {
		t.Errorf("%v of audio from a synthesis that failed", f.Duration(len(r.audio)))
	}
	voicetest.WantKind(t, "Read", r.err, kinds...)
}

func testWrongKey(t *testing.T, p Peer) {
	if p.WrongKey == nil {
		t.Skip("the peer takes no credentials (Peer.WrongKey is nil)")
	}
	failing(t, p.WrongKey(t), sentence, p.Formats[0], voice.KindAuth)
}

func testUnreachable(t *testing.T, p Peer) {
	if p.Unreachable == nil {
		t.Skip("the synthesizer has no peer to miss (Peer.Unreachable is nil)")
	}
	failing(t, p.Unreachable(t, testpeer.NowhereURL(t)), sentence, p.Formats[0], voice.KindTransient)
}

func testServerError(t *testing.T, p Peer) {
	if p.ServerErrorText == "" {
		t.Skip("the peer cannot fail a request (Peer.ServerErrorText is empty)")
	}
	failing(t, p.Synthesizer, p.ServerErrorText, p.Formats[0], voice.KindTransient)
}

func testTimeout(t *testing.T, p Peer) {
	if p.StallText == "" {
		t.Skip("the peer cannot stall (Peer.StallText is empty)")
	}
	failing(t, p.Synthesizer, p.StallText, p.Formats[0], voice.KindTimeout)
}

// testCut: audio broken off partway ends in an error, never io.EOF: the engine must not
// take half a sentence for a whole one.
func testCut(t *testing.T, p Peer) {
	if p.CutText == "" {
		t.Skip("the peer cannot break off its audio (Peer.CutText is empty)")
	}
	r := readUntil(t, speak(testContext(t), t, p.Synthesizer, p.CutText, p.Formats[0]), patience, nil)
	if len(r.audio) == 0 {
		t.Errorf("no audio before the cut")
	}
	voicetest.WantKind(t, "Read at the cut", r.err, voice.KindTransient)
}

func testUnsupportedFormat(t *testing.T, p Peer) {
	for _, f := range []audio.Format{{Encoding: 99, Rate: p.Formats[0].Rate}, {Encoding: p.Formats[0].Encoding}} {
		rc, err := p.Synthesizer.Synthesize(testContext(t), sentence, f)
		if err == nil {
			_ = rc.Close()
		}
		voicetest.WantKind(t, "Synthesize in "+f.String(), err, voice.KindBadInput)
	}
}

// testBlankText: blank text is refused as bad input, or spoken as nothing.
func testBlankText(t *testing.T, p Peer) {
	for _, text := range []string{"", " \n\t "} {
		rc, err := p.Synthesizer.Synthesize(testContext(t), text, p.Formats[0])
		if err != nil {
			voicetest.WantKind(t, "Synthesize(blank)", err, voice.KindBadInput)
			continue
		}
		r := readUntil(t, rc, prompt, nil)
		if r.err != nil || len(r.audio) > 0 {
			t.Errorf("blank text %q gave %d bytes of audio and %v, want none and io.EOF", text, len(r.audio), r.err)
		}
		if err := voicetest.CloseWithin(t, rc, prompt); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}

// testLongText: a text of several thousand characters is refused as bad input (the peer
// takes no more), or starts speaking like any other and stops when closed.
func testLongText(t *testing.T, p Peer) {
	f := p.Formats[0]
	text := paragraph + paragraph + paragraph + paragraph + paragraph
	rc, err := p.Synthesizer.Synthesize(testContext(t), text, f)
	if err != nil {
		voicetest.WantKind(t, "Synthesize(long)", err, voice.KindBadInput)
		return
	}
	t.Cleanup(func() { _ = rc.Close() })
	r := readUntil(t, rc, patience, func(a []byte) bool { return len(a) >= f.Bytes(time.Second) })
	switch {
	case r.err != nil && len(r.audio) == 0:
		voicetest.WantKind(t, "Read(long)", r.err, voice.KindBadInput)
	case r.err != nil:
		t.Errorf("after %v of audio: %v", f.Duration(len(r.audio)), r.err)
	case len(r.audio) < f.Bytes(time.Second):
		t.Errorf("%v of audio for %d characters", f.Duration(len(r.audio)), len(text))
	}
	if err := voicetest.CloseWithin(t, rc, prompt); err != nil {
		t.Errorf("Close: %v", err)
	}
}

// testNoGoroutineLeft: once a synthesis is read to its end, or cancelled, and closed,
// nothing of it runs. Connections kept in an HTTP client's pool, and the peer's end of
// them, belong to the client and the server (the provider's TestMain checks them when
// its peers are gone).
func testNoGoroutineLeft(t *testing.T, p Peer) {
	before := goleak.IgnoreCurrent()
	f := p.Formats[0]
	whole := speak(testContext(t), t, p.Synthesizer, sentence, f)
	if r := readUntil(t, whole, patience, nil); r.err != nil {
		t.Fatalf("reading: %v", r.err)
	}
	voicetest.CloseWithin(t, whole, prompt)
	ctx, cancel := context.WithCancel(testContext(t))
	cut := speak(ctx, t, p.Synthesizer, paragraph, f)
	readUntil(t, cut, patience, func(a []byte) bool { return len(a) > 0 })
	cancel()
	readUntil(t, cut, prompt, nil)
	voicetest.CloseWithin(t, cut, prompt)
	voicetest.NoneLeft(t, before)
}
