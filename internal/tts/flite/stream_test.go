package flite

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/voice"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a speaker that says each text as a ramp of 100 samples per character, in
// chunks of 256 samples, the way flite's streaming callback hands them out.
type fake struct {
	sr      int
	forever bool  // keep producing until the sink refuses
	fail    error // returned by speak
	calls   atomic.Int64
}

func (f *fake) id() string { return "fake" }
func (f *fake) rate() int  { return f.sr }

func (f *fake) speak(text string, sink func([]int16) bool) error {
	if f.fail != nil {
		return f.fail
	}
	pcm := make([]int16, 256)
	for done := 0; f.forever || done < 100*len(text); done += len(pcm) {
		for i := range pcm {
			pcm[i] = int16((done + i) % 1000)
		}
		n := len(pcm)
		if !f.forever {
			n = min(n, 100*len(text)-done)
		}
		f.calls.Add(1)
		if !sink(pcm[:n]) {
			return errStopped
		}
	}
	return nil
}

func fakeSynth(sp speaker) *Synthesizer {
	return &Synthesizer{v8k: sp, v16k: sp, log: slog.New(slog.DiscardHandler)}
}

func TestStreamDeliversEverythingInFormat(t *testing.T) {
	text := "One two three. Four five."
	samples := 100 * (len("One two three.") + len("Four five."))
	for _, c := range []struct {
		f     audio.Format
		bytes int
	}{
		{audio.Format{Encoding: audio.PCM16, Rate: 16000}, 2 * samples},
		{audio.Format{Encoding: audio.Mulaw, Rate: 16000}, samples},
		{audio.Format{Encoding: audio.Alaw, Rate: 16000}, samples},
		{audio.Format{Encoding: audio.PCM16, Rate: 48000}, 2 * 3 * samples},
		{audio.Format{Encoding: audio.PCM16, Rate: 22050}, 2 * samples * 22050 / 16000},
	} {
		r, err := fakeSynth(&fake{sr: 16000}).Synthesize(context.Background(), text, c.f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatalf("%v: %v", c.f, err)
		}
		if d := len(got) - c.bytes; d < -4 || d > 4 {
			t.Errorf("%v: %d bytes, want %d", c.f, len(got), c.bytes)
		}
		if c.f.Rate != 16000 {
			continue
		}
		// Same rate: the samples come through exactly, only encoded.
		var want []byte
		for _, n := range []int{100 * len("One two three."), 100 * len("Four five.")} {
			for done := 0; done < n; done += 256 {
				for i := range min(256, n-done) {
					s := int16((done + i) % 1000)
					switch c.f.Encoding {
					case audio.PCM16:
						want = binary.LittleEndian.AppendUint16(want, uint16(s))
					case audio.Mulaw:
						want = append(want, g711.EncodeMulawSample(s))
					case audio.Alaw:
						want = append(want, g711.EncodeAlawSample(s))
					}
				}
			}
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%v: audio differs from the voice's samples", c.f)
		}
	}
}

func TestBadFormatIsBadInput(t *testing.T) {
	s := fakeSynth(&fake{sr: 16000})
	for _, f := range []audio.Format{{Encoding: 0, Rate: 16000}, {Encoding: audio.PCM16, Rate: 11025}, {Encoding: audio.Mulaw, Rate: 0}} {
		_, err := s.Synthesize(context.Background(), "hello", f)
		var pe *voice.ProviderError
		if !errors.As(err, &pe) || pe.Kind != voice.KindBadInput || pe.Provider != "flite" {
			t.Errorf("%v: err = %v, want a flite KindBadInput ProviderError", f, err)
		}
	}
}

func TestEmptyTextGivesEmptyReader(t *testing.T) {
	sp := &fake{sr: 8000}
	for _, text := range []string{"", "   ", "\n\t\r\n", "\x00\x01"} {
		r, err := fakeSynth(sp).Synthesize(context.Background(), text, audio.Telephone)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if b, err := io.ReadAll(r); err != nil || len(b) != 0 {
			t.Errorf("%q: %d bytes, %v; want none", text, len(b), err)
		}
		r.Close()
	}
	if sp.calls.Load() != 0 {
		t.Errorf("the voice was asked to speak %d times", sp.calls.Load())
	}
}

func TestCancelledContextRefusesAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := fakeSynth(&fake{sr: 8000}).Synthesize(ctx, "hello", audio.Telephone)
	if voice.KindOf(err) != voice.KindCanceled {
		t.Errorf("err = %v, want KindCanceled", err)
	}
}

func TestSpeakerFailureIsProviderError(t *testing.T) {
	r, err := fakeSynth(&fake{sr: 8000, fail: errors.New("boom")}).Synthesize(context.Background(), "hello", audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = io.ReadAll(r)
	var pe *voice.ProviderError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("err = %v, want a ProviderError with the cause", err)
	}
}

// waitFinished waits for st's producer to return. That it stops soon is shown by the
// samples it made; the deadline is only a safety net against one that never stops.
func waitFinished(t *testing.T, st *stream) time.Duration {
	t.Helper()
	const safety = 30 * time.Second
	start := time.Now()
	select {
	case <-st.finished:
	case <-time.After(safety):
		t.Fatalf("synthesis still running %v after it was stopped", safety)
	}
	return time.Since(start)
}

func TestCloseAndCancelStopTheProducer(t *testing.T) {
	for _, how := range []string{"close", "cancel"} {
		sp := &fake{sr: 16000, forever: true}
		ctx, cancel := context.WithCancel(context.Background())
		r, err := fakeSynth(sp).Synthesize(ctx, "endless", audio.Format{Encoding: audio.PCM16, Rate: 16000})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(r, make([]byte, 1000)); err != nil {
			t.Fatal(err)
		}
		if how == "close" {
			r.Close()
		} else {
			cancel()
		}
		waitFinished(t, r.(*stream))
		calls := sp.calls.Load()
		_, err = r.Read(make([]byte, 10))
		switch how {
		case "close":
			if !errors.Is(err, errClosed) {
				t.Errorf("Read after Close: %v", err)
			}
		case "cancel":
			if voice.KindOf(err) != voice.KindCanceled {
				t.Errorf("Read after cancel: %v, want KindCanceled", err)
			}
		}
		time.Sleep(20 * time.Millisecond)
		if sp.calls.Load() != calls {
			t.Errorf("%s: the voice kept producing", how)
		}
		r.Close()
		cancel()
	}
}

func TestSlowReaderHoldsTheProducerBack(t *testing.T) {
	sp := &fake{sr: 8000, forever: true}
	r, err := fakeSynth(sp).Synthesize(context.Background(), "endless", audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st := r.(*stream)
	limit := audio.Telephone.Bytes(maxAhead)
	buf := make([]byte, 160)
	for range 50 {
		time.Sleep(2 * time.Millisecond)
		if _, err := io.ReadFull(r, buf); err != nil {
			t.Fatal(err)
		}
		st.mu.Lock()
		held := len(st.buf) - st.off
		st.mu.Unlock()
		if held > limit+256 {
			t.Fatalf("%d bytes held for the reader, limit %d", held, limit)
		}
	}
	if made := st.samples.Load(); made > int64(limit+2*256+50*160) { // one chunk more may wait in push
		t.Errorf("producer made %d samples for a reader that took %d", made, 50*160)
	}
}
