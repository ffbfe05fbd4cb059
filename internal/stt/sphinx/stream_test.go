package sphinx

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/voice"
)

func TestQuietAudioTakesNoDecoder(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	s := rg.open(t, wide)
	// Digital silence, then a hiss at -56 dBFS (a noisy line), for longer than an utterance.
	write(t, s, cat(quiet(time.Second), hiss(3*time.Second, 50)))
	if free, _ := rg.free(); free != 1 || rg.decs[0].startCount() != 0 {
		t.Fatalf("free decoders %d, starts %d: quiet audio took a decoder", free, rg.decs[0].startCount())
	}
	noFinal(t, s)
	if err := s.Finalize(); err != nil {
		t.Fatal(err)
	}
	if tr := next(t, s); !tr.Final || tr.Text != "" {
		t.Fatalf("Finalize with no utterance: %+v, want an empty Final", tr)
	}
}

func TestUtteranceGetsPreRollPartialsAndFinal(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	s := rg.open(t, wide)
	// 1 s of hiss below the gate, then 1 s of speech: the decoder must get the last 300 ms
	// of hiss first (the onset of a word is often quieter than the gate).
	write(t, s, hiss(time.Second, 40))
	if free, _ := rg.free(); free != 1 {
		t.Fatal("the gate opened on hiss")
	}
	write(t, s, loud(time.Second))
	if free, _ := rg.free(); free != 0 {
		t.Fatal("speech did not take the decoder")
	}
	if err := s.Finalize(); err != nil {
		t.Fatal(err)
	}
	tr, partials := final(t, s)
	if tr.Text != words(10) {
		t.Errorf("Final %q, want %q", tr.Text, words(10))
	}
	if len(partials) < 8 {
		t.Errorf("%d partials for 1 s of speech, want about 10: %q", len(partials), partials)
	}
	for i, p := range partials {
		if p != words(i+1) {
			t.Errorf("partial %d = %q, want %q (each a new hypothesis, normalised)", i, p, words(i+1))
			break
		}
	}
	eventually(t, "the decoder back in the pool", func() bool { free, _ := rg.free(); return free == 1 })
	utts, _, inUtt, _ := rg.decs[0].snapshot()
	if len(utts) != 1 || inUtt {
		t.Fatalf("%d utterances (open: %v), want 1 ended", len(utts), inUtt)
	}
	want := cat(hiss(time.Second, 40)[samplesIn(700*time.Millisecond):], loud(time.Second))
	if !slices.Equal(utts[0], want) {
		t.Errorf("decoder fed %d samples, want the 300 ms pre-roll then the speech (%d samples)", len(utts[0]), len(want))
	}
}

func TestPartialsArePacedByAudio(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	s := rg.open(t, wide)
	write(t, s, loud(2*time.Second))
	if err := s.Finalize(); err != nil {
		t.Fatal(err)
	}
	_, partials := final(t, s)
	_, at, _, _ := rg.decs[0].snapshot()
	if len(at) == 0 {
		t.Fatal("the partial hypothesis was never read")
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i] - at[i-1]; gap < samplesIn(100*time.Millisecond) {
			t.Fatalf("partial read after %v of audio, want at least 100 ms (reads at %v)", durationOf(gap), at)
		}
	}
	if len(partials) > 20 || len(partials) < 15 {
		t.Errorf("%d partials for 2 s of speech, want about 20 (one per 100 ms, when changed)", len(partials))
	}
	for i := 1; i < len(partials); i++ {
		if partials[i] == partials[i-1] {
			t.Errorf("partial %q repeated", partials[i])
		}
	}
}

func TestUnchangedHypothesisIsNotRepeated(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	s := rg.open(t, wide)
	// 200 ms of speech (2 words), then 1 s of hiss above the gate that adds no word.
	write(t, s, cat(loud(200*time.Millisecond), hiss(time.Second, 400)))
	if err := s.Finalize(); err != nil {
		t.Fatal(err)
	}
	tr, partials := final(t, s)
	if !slices.Equal(partials, []string{words(1), words(2)}) || tr.Text != words(2) {
		t.Errorf("partials %q, Final %q: want each hypothesis once", partials, tr.Text)
	}
}

func TestFinalizeWithNoUtteranceIsEmpty(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	s := rg.open(t, wide)
	for range 2 {
		if err := s.Finalize(); err != nil {
			t.Fatal(err)
		}
		if tr := next(t, s); !tr.Final || tr.Text != "" {
			t.Fatalf("got %+v, want an empty Final", tr)
		}
	}
	// A Finalize right after one that ended an utterance is empty too.
	write(t, s, loud(300*time.Millisecond))
	_ = s.Finalize()
	_ = s.Finalize()
	if tr, _ := final(t, s); tr.Text != words(3) {
		t.Fatalf("Final %q, want %q", tr.Text, words(3))
	}
	if tr := next(t, s); !tr.Final || tr.Text != "" {
		t.Fatalf("second Finalize: %+v, want an empty Final", tr)
	}
}

func TestFinalizeFlushesAPartFrame(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	s := rg.open(t, wide)
	// 210 ms: 10 whole frames and half of one, then Finalize: all of it reaches the decoder.
	write(t, s, loud(210*time.Millisecond))
	_ = s.Finalize()
	if tr, _ := final(t, s); tr.Text != words(2) {
		t.Fatalf("Final %q, want %q", tr.Text, words(2))
	}
	utts, _, _, _ := rg.decs[0].snapshot()
	if len(utts) != 1 || len(utts[0]) != samplesIn(210*time.Millisecond) {
		t.Fatalf("decoder fed %d samples, want %d", len(utts[0]), samplesIn(210*time.Millisecond))
	}
}

func TestQuietEndsTheUtteranceSilently(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	s := rg.open(t, wide)
	// Speech, then 1.9 s below the gate: still the same utterance.
	write(t, s, cat(loud(500*time.Millisecond), hiss(1900*time.Millisecond, 40)))
	if free, _ := rg.free(); free != 0 {
		t.Fatal("released before 2 s of quiet")
	}
	// 100 ms more makes 2 s: the decoder goes back, and the hypothesis is discarded (the
	// engine's VAD, not this gate, decides what speech was).
	write(t, s, hiss(100*time.Millisecond, 40))
	if free, _ := rg.free(); free != 1 {
		t.Fatal("not released after 2 s of quiet")
	}
	noFinal(t, s)
	if err := s.Finalize(); err != nil {
		t.Fatal(err)
	}
	if tr := next(t, s); !tr.Final || tr.Text != "" {
		t.Fatalf("Finalize after the release: %+v, want an empty Final", tr)
	}
	if n := s.st.quietEnds.Load(); n != 1 {
		t.Errorf("quiet ends = %d, want 1", n)
	}
	// Speech after that opens a new utterance.
	write(t, s, loud(200*time.Millisecond))
	_ = s.Finalize()
	if tr, _ := final(t, s); tr.Text != words(2) {
		t.Errorf("next utterance: Final %q, want %q", tr.Text, words(2))
	}
}

func TestNoAudioEndsTheUtterance(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	s := rg.open(t, wide)
	write(t, s, loud(500*time.Millisecond))
	// The engine stops writing (the agent speaks). 1.5 s later a frame still arrives, so
	// 2 s after the utterance began it is not over yet.
	rg.clock.Advance(1500 * time.Millisecond)
	write(t, s, loud(20*time.Millisecond))
	rg.clock.Advance(600 * time.Millisecond)
	settle(t, s)
	if free, _ := rg.free(); free != 0 {
		t.Fatal("released although audio arrived 600 ms ago")
	}
	// 2 s after the last frame it is.
	rg.clock.Advance(1400 * time.Millisecond)
	eventually(t, "the decoder back in the pool", func() bool { free, _ := rg.free(); return free == 1 })
	noFinal(t, s)
	_ = s.Finalize()
	if tr := next(t, s); !tr.Final || tr.Text != "" {
		t.Fatalf("Finalize after the release: %+v, want an empty Final", tr)
	}
}

func TestLongUtteranceIsCappedAndStartsAfresh(t *testing.T) {
	tune := testTuning()
	tune.maxUtterance = time.Second
	rg := newRig(t, 1, tune)
	s := rg.open(t, wide)
	write(t, s, loud(2500*time.Millisecond))
	_ = s.Finalize()
	var finals []string
	for len(finals) < 3 {
		if tr := next(t, s); tr.Final {
			finals = append(finals, tr.Text)
		}
	}
	want := []string{words(10), words(10), words(5)}
	if !slices.Equal(finals, want) {
		t.Errorf("Finals %q, want %q (two capped at 1 s, then the rest)", finals, want)
	}
	if n := s.st.capped.Load(); n != 2 {
		t.Errorf("capped = %d, want 2", n)
	}
}

func TestDefaultCapIs30Seconds(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	s := rg.open(t, wide)
	fin := finals(s)
	for range 31 {
		write(t, s, loud(time.Second))
	}
	if text := recv(t, fin); text != words(300) {
		t.Fatalf("capped Final has %d words, want 300 (30 s)", len(strings.Fields(text)))
	}
	_ = s.Finalize()
	if text := recv(t, fin); text != words(10) {
		t.Fatalf("after the cap: Final %q, want %q", text, words(10))
	}
}

func TestPoolOfOneSharedByTwoStreams(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	a := rg.open(t, wide)
	b := rg.open(t, wide)
	write(t, a, loud(500*time.Millisecond))
	// b starts speaking while a holds the only decoder: it waits, keeping its audio.
	write(t, b, loud(300*time.Millisecond))
	if free, waiting := rg.free(); free != 0 || waiting != 1 {
		t.Fatalf("free %d, waiting %d: want b waiting", free, waiting)
	}
	rg.clock.Advance(700 * time.Millisecond)
	write(t, b, loud(300*time.Millisecond))
	noFinal(t, b)
	_ = a.Finalize()
	if tr, _ := final(t, a); tr.Text != words(5) {
		t.Errorf("a: Final %q, want %q", tr.Text, words(5))
	}
	// The decoder went straight to b, which decodes everything it heard while waiting.
	eventually(t, "b to get the decoder", func() bool { _, waiting := rg.free(); return waiting == 0 })
	write(t, b, loud(400*time.Millisecond))
	_ = b.Finalize()
	if tr, _ := final(t, b); tr.Text != words(10) {
		t.Errorf("b: Final %q, want %q (all of its 1 s)", tr.Text, words(10))
	}
	if w := time.Duration(b.st.waited.Load()); w != 700*time.Millisecond {
		t.Errorf("b waited %v, want 700ms", w)
	}
	eventually(t, "the decoder back", func() bool { free, _ := rg.free(); return free == 1 })
}

func TestFinalizeWhileWaitingDecodesWhenADecoderComes(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	a := rg.open(t, wide)
	b := rg.open(t, wide)
	write(t, a, loud(500*time.Millisecond))
	write(t, b, loud(400*time.Millisecond))
	_ = b.Finalize()
	// What b says after its Finalize belongs to its next utterance.
	send(t, b, loud(200*time.Millisecond))
	time.Sleep(10 * time.Millisecond)
	noFinal(t, b)
	_ = a.Finalize()
	if tr, _ := final(t, a); tr.Text != words(5) {
		t.Errorf("a: Final %q", tr.Text)
	}
	if tr, _ := final(t, b); tr.Text != words(4) {
		t.Errorf("b: Final %q, want %q", tr.Text, words(4))
	}
	settle(t, b)
	_ = b.Finalize()
	if tr, _ := final(t, b); tr.Text != words(2) {
		t.Errorf("b's next utterance: Final %q, want %q", tr.Text, words(2))
	}
}

func TestWaitingKeepsAtMostMaxWait(t *testing.T) {
	tune := testTuning()
	tune.maxWait = time.Second
	rg := newRig(t, 1, tune)
	a := rg.open(t, wide)
	b := rg.open(t, wide)
	write(t, a, loud(100*time.Millisecond))
	write(t, b, loud(3*time.Second))
	if got := durationOf(int(b.st.droppedWaiting.Load())); got != 2*time.Second {
		t.Errorf("b dropped %v while waiting, want 2s", got)
	}
	_ = a.Finalize()
	_ = b.Finalize()
	if tr, _ := final(t, b); tr.Text != words(10) {
		t.Errorf("b: Final %q, want the newest 1 s (%q)", tr.Text, words(10))
	}
}

func TestWaitEndsWhenTheCallerGoesQuiet(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	a := rg.open(t, wide)
	b := rg.open(t, wide)
	write(t, a, loud(100*time.Millisecond))
	write(t, b, cat(hiss(300*time.Millisecond, 400), quiet(2*time.Second)))
	if _, waiting := rg.free(); waiting != 0 {
		t.Fatal("b still waits after 2 s of quiet")
	}
	_ = a.Finalize()
	final(t, a)
	eventually(t, "the decoder back", func() bool { free, _ := rg.free(); return free == 1 })
	_ = b.Finalize()
	if tr := next(t, b); !tr.Final || tr.Text != "" {
		t.Fatalf("b: %+v, want an empty Final", tr)
	}
	if n := rg.decs[0].startCount(); n != 1 {
		t.Errorf("decoder started %d times, want once (a only)", n)
	}
}

func TestWaitEndsWhenAudioStops(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	a := rg.open(t, wide)
	b := rg.open(t, wide)
	write(t, a, loud(100*time.Millisecond))
	write(t, b, loud(100*time.Millisecond))
	rg.clock.Advance(2 * time.Second) // neither writes: both let go
	eventually(t, "the pool to settle", func() bool { free, waiting := rg.free(); return free == 1 && waiting == 0 })
	noFinal(t, a)
	noFinal(t, b)
}

func TestFullQueueDropsTheOldestAudio(t *testing.T) {
	tune := testTuning()
	tune.queue = time.Second
	rg := newRig(t, 1, tune)
	s := rg.open(t, wide)
	block := make(chan struct{})
	rg.decs[0].setBlock(block)
	// The first frame takes the decoder, which then hangs in process: 3 s more must not
	// block Write or Finalize; the queue keeps the newest 1 s.
	send(t, s, loud(20*time.Millisecond))
	eventually(t, "the decoder to start", func() bool { return len(rg.decs[0].events) > 0 })
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 150 {
			_ = s.Write(pcmBytes(loud(20 * time.Millisecond)))
		}
		_ = s.Finalize()
	}()
	select {
	case <-done:
	case <-time.After(patience): // blocked, they would wait for close(block): forever
		t.Fatal("Write or Finalize blocked on a busy decoder")
	}
	if got := wide.Duration(int(s.st.droppedQueue.Load())); got != 2*time.Second {
		t.Errorf("dropped %v, want 2s", got)
	}
	close(block)
	if tr, _ := final(t, s); tr.Text != words(10) {
		t.Errorf("Final %q, want %q (20 ms + the newest 1 s)", tr.Text, words(10))
	}
}

func TestCloseReleasesTheDecoder(t *testing.T) {
	defer goleak.VerifyNone(t)
	rg := newRig(t, 1, testTuning())
	s := rg.open(t, wide)
	write(t, s, loud(time.Second))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, tr := range drained(t, s) {
		if tr.Final {
			t.Errorf("Close emitted a Final %+v", tr)
		}
	}
	if free, _ := rg.free(); free != 1 {
		t.Fatal("decoder not back after Close")
	}
	if _, _, inUtt, _ := rg.decs[0].snapshot(); inUtt {
		t.Fatal("utterance left open")
	}
	if err := s.Write(pcmBytes(loud(20 * time.Millisecond))); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: %v, want ErrClosed", err)
	}
	if err := s.Finalize(); !errors.Is(err, ErrClosed) {
		t.Errorf("Finalize after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// The owner's Close while waiting withdraws the request.
	a := rg.open(t, wide)
	b := rg.open(t, wide)
	write(t, a, loud(100*time.Millisecond))
	write(t, b, loud(100*time.Millisecond))
	_ = b.Close()
	if _, waiting := rg.free(); waiting != 0 {
		t.Fatal("a closed stream still waits")
	}
	_ = a.Close()
	if free, _ := rg.free(); free != 1 {
		t.Fatal("decoder not back")
	}
	_ = rg.r.Close()
}

func TestContextCancelEndsTheStream(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	ctx, cancel := context.WithCancel(context.Background())
	rs, err := rg.r.Stream(ctx, wide, voice.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := rs.(*stream)
	write(t, s, loud(time.Second))
	cancel()
	drained(t, s)
	if free, _ := rg.free(); free != 1 {
		t.Fatal("decoder not back after cancel")
	}
	err = s.Close()
	if pe := providerError(t, err); pe.Kind != voice.KindCanceled || !errors.Is(err, context.Canceled) {
		t.Errorf("Close after cancel: %v, want KindCanceled wrapping context.Canceled", err)
	}
	if err := s.Write(pcmBytes(loud(20 * time.Millisecond))); !errors.Is(err, context.Canceled) {
		t.Errorf("Write after cancel: %v", err)
	}
	if _, err := rg.r.Stream(ctx, wide, voice.StreamOptions{}); voice.KindOf(err) != voice.KindCanceled {
		t.Errorf("Stream with a cancelled ctx: %v", err)
	}
}

func TestRecognizerCloseEndsOpenStreams(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	a := rg.open(t, wide)
	b := rg.open(t, wide)
	c := rg.open(t, wide)
	write(t, a, loud(200*time.Millisecond)) // holds the decoder
	write(t, b, loud(200*time.Millisecond)) // waits for it
	if err := rg.r.Close(); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*stream{"active": a, "waiting": b, "idle": c} {
		drained(t, s)
		err := s.Close()
		if pe := providerError(t, err); pe.Kind != voice.KindCanceled || !errors.Is(err, ErrClosed) {
			t.Errorf("%s stream: Close = %v, want KindCanceled wrapping ErrClosed", name, err)
		}
		if err := s.Finalize(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s stream: Finalize = %v", name, err)
		}
	}
	if _, _, inUtt, closed := rg.decs[0].snapshot(); inUtt || !closed {
		t.Errorf("decoder in an utterance %v, freed %v: want ended and freed", inUtt, closed)
	}
	_, err := rg.r.Stream(context.Background(), wide, voice.StreamOptions{})
	if pe := providerError(t, err); pe.Kind != voice.KindCanceled || !errors.Is(err, ErrClosed) {
		t.Errorf("Stream after Close: %v", err)
	}
	if err := rg.r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestDecoderFailureEndsTheStream(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	rg.decs[0].failStart = errors.New("ps_start_utt failed")
	s := rg.open(t, wide)
	_ = s.Write(pcmBytes(loud(100 * time.Millisecond))) // later writes may already see the failure
	drained(t, s)
	err := s.Close()
	if pe := providerError(t, err); pe.Op != "decode" || pe.Provider != "sphinx" {
		t.Errorf("Close: %v, want the decode error", err)
	}
	if free, _ := rg.free(); free != 1 {
		t.Error("failed decoder not back in the pool")
	}
}

func TestManyStreamsFewDecoders(t *testing.T) {
	defer goleak.VerifyNone(t)
	rg := newRig(t, 2, testTuning())
	const calls = 8
	streams := make([]*stream, calls)
	for i := range streams {
		streams[i] = rg.open(t, wide)
	}
	done := make(chan string, calls)
	for i, s := range streams {
		go func() {
			// Each caller says i+1 words, then the engine's VAD finalizes.
			pcm := cat(quiet(200*time.Millisecond), loud(time.Duration(i+1)*100*time.Millisecond), quiet(100*time.Millisecond))
			b := pcmBytes(pcm)
			for len(b) > 0 {
				_ = s.Write(b[:640])
				b = b[640:]
			}
			_ = s.Finalize()
			for tr := range s.Results() {
				if tr.Final {
					done <- tr.Text
					return
				}
			}
			done <- "closed"
		}()
	}
	got := map[string]bool{}
	for range calls {
		select {
		case text := <-done:
			got[text] = true
		case <-time.After(5 * time.Second):
			t.Fatal("not every call got its Final")
		}
	}
	for i := range calls {
		if !got[words(i+1)] {
			t.Errorf("no Final %q among %v", words(i+1), got)
		}
	}
	for _, s := range streams {
		_ = s.Close()
	}
	_ = rg.r.Close()
}

func TestTelephoneAudioIsUpSampled(t *testing.T) {
	for _, f := range []audio.Format{audio.Telephone, {Encoding: audio.Alaw, Rate: 8000}, {Encoding: audio.PCM16, Rate: 8000}, {Encoding: audio.Mulaw, Rate: 16000}} {
		t.Run(f.String(), func(t *testing.T) {
			rg := newRig(t, 1, testTuning())
			s := rg.open(t, f)
			// A 1 kHz tone at about -15 dBFS for 1 s.
			n := f.Rate
			pcm := make([]int16, n)
			for i := range pcm {
				pcm[i] = int16(6000 * sine(float64(i)*1000/float64(f.Rate)))
			}
			var b []byte
			switch f.Encoding {
			case audio.Mulaw:
				b = g711.EncodeMulaw(make([]byte, n), pcm)
			case audio.Alaw:
				b = g711.EncodeAlaw(make([]byte, n), pcm)
			default:
				b = pcmBytes(pcm)
			}
			for len(b) > 0 {
				k := min(f.FrameBytes(), len(b))
				_ = s.Write(b[:k])
				b = b[k:]
			}
			_ = s.Finalize()
			final(t, s)
			utts, _, _, _ := rg.decs[0].snapshot()
			if len(utts) != 1 || len(utts[0]) != modelRate {
				t.Fatalf("decoder fed %d samples for 1 s, want %d at 16 kHz", len(utts[0]), modelRate)
			}
			if lvl := rmsDBFS(utts[0][samplesIn(100*time.Millisecond):]); lvl < -20 || lvl > -16 {
				t.Errorf("level at the decoder %.1f dBFS, want about -18 (the tone's)", lvl)
			}
		})
	}
}

func TestOtherFormatsAreRefused(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	for _, f := range []audio.Format{
		{Encoding: audio.PCM16, Rate: 44100}, {Encoding: audio.PCM16, Rate: 48000},
		{Encoding: audio.Mulaw, Rate: 24000}, {Encoding: audio.Encoding(9), Rate: 8000}, {},
	} {
		_, err := rg.r.Stream(context.Background(), f, voice.StreamOptions{})
		pe := providerError(t, err)
		if pe.Kind != voice.KindBadInput || pe.Op != "open stream" {
			t.Errorf("%v: %v, want a bad_input error", f, err)
		}
		if msg := err.Error(); !containsAll(msg, f.String(), "8000 or 16000") {
			t.Errorf("%v: %q does not name the format and what is accepted", f, msg)
		}
	}
}

func TestEachCallKeepsItsOwnCepstralMean(t *testing.T) {
	rg := newRig(t, 1, testTuning())
	a := rg.open(t, wide)
	write(t, a, loud(300*time.Millisecond)) // a's first utterance: the model's mean
	_ = a.Finalize()
	final(t, a)
	b := rg.open(t, wide) // b's first: the last mean at 16 kHz (a's)
	write(t, b, loud(500*time.Millisecond))
	_ = b.Finalize()
	final(t, b)
	c := rg.open(t, audio.Telephone) // c's first, at 8 kHz: the model's again
	_ = c.Write(make([]byte, 0))
	cm := make([]byte, 1600)
	for i := range cm {
		cm[i] = []byte{0x00, 0x80}[i%2] // full-scale square wave in mu-law
	}
	_ = c.Write(cm)
	_ = c.Finalize()
	final(t, c)
	write(t, a, loud(100*time.Millisecond)) // a's second: its own mean, not b's or c's
	_ = a.Finalize()
	final(t, a)
	d := rg.open(t, wide) // a noise with no words, released when quiet: not a prior
	write(t, d, cat(hiss(100*time.Millisecond, 400), quiet(2*time.Second)))
	e := rg.open(t, wide) // e's first: a's second, the last speech at 16 kHz
	write(t, e, loud(100*time.Millisecond))
	_ = e.Finalize()
	final(t, e)
	rg.decs[0].mu.Lock()
	got := rg.decs[0].cmnIn
	rg.decs[0].mu.Unlock()
	if len(got) != 6 {
		t.Fatalf("%d utterances, want 6", len(got))
	}
	mean := func(d time.Duration) []float32 { return []float32{float32(samplesIn(d))} }
	want := [][]float32{nil, mean(300 * time.Millisecond), nil, mean(300 * time.Millisecond), mean(100 * time.Millisecond), mean(100 * time.Millisecond)}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("utterance %d started from mean %v, want %v (all: %v)", i, got[i], want[i], got)
		}
	}
}
