//go:build embedded

package flite

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/voice"
)

const sentence = "Please book a table for two at seven."

// paragraph is a long reply: about 45 s of speech.
var paragraph = strings.Repeat("I would like to cancel my appointment on Friday, and then book a new one "+
	"for next week, ideally in the morning. My account number is four five six seven. ", 6)

func mustNew(t testing.TB, o Options) *Synthesizer {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decode turns audio in f into PCM.
func decode(t testing.TB, f audio.Format, b []byte) []int16 {
	t.Helper()
	switch f.Encoding {
	case audio.PCM16:
		if len(b)%2 != 0 {
			t.Fatalf("%d bytes of pcm16", len(b))
		}
		pcm := make([]int16, len(b)/2)
		for i := range pcm {
			pcm[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
		}
		return pcm
	case audio.Mulaw:
		return g711.DecodeMulaw(make([]int16, len(b)), b)
	case audio.Alaw:
		return g711.DecodeAlaw(make([]int16, len(b)), b)
	}
	t.Fatalf("encoding %v", f.Encoding)
	return nil
}

func synthesize(t testing.TB, s *Synthesizer, text string, f audio.Format) []byte {
	t.Helper()
	r, err := s.Synthesize(context.Background(), text, f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%v: %v", f, err)
	}
	return b
}

// speechLevel is the RMS level of the loud part of pcm: the 20 ms frames above -50 dBFS,
// so pauses do not count.
func speechLevel(pcm []int16, rate int) (dbfs float64, voiced time.Duration) {
	frame := rate / 50
	var loud []int16
	for i := 0; i+frame <= len(pcm); i += frame {
		if audiotest.RMSDBFS(pcm[i:i+frame]) > -50 {
			loud = append(loud, pcm[i:i+frame]...)
		}
	}
	return audiotest.RMSDBFS(loud), time.Duration(len(loud)) * time.Second / time.Duration(rate)
}

func TestEveryVoiceInEveryFormat(t *testing.T) {
	formats := []audio.Format{
		audio.Telephone,
		{Encoding: audio.Alaw, Rate: 8000},
		{Encoding: audio.PCM16, Rate: 16000},
		{Encoding: audio.PCM16, Rate: 24000},
		{Encoding: audio.PCM16, Rate: 48000},
	}
	for _, v := range Voices() {
		s := mustNew(t, Options{Voice8k: v, Voice16k: v})
		var first time.Duration
		for _, f := range formats {
			b := synthesize(t, s, sentence, f)
			d := f.Duration(len(b))
			pcm := decode(t, f, b)
			level, voiced := speechLevel(pcm, f.Rate)
			t.Logf("%s %v: %v of audio, %v voiced at %.1f dBFS", v, f, d, voiced, level)
			// 37 characters take a person about 2.5 s to say.
			if d < 1500*time.Millisecond || d > 4*time.Second {
				t.Errorf("%s %v: %v of audio for %q", v, f, d, sentence)
			}
			if voiced < d/3 {
				t.Errorf("%s %v: only %v of %v is above -50 dBFS", v, f, voiced, d)
			}
			if level < -35 || level > -6 {
				t.Errorf("%s %v: speech at %.1f dBFS, want -35 to -6", v, f, level)
			}
			// Resampling keeps the length: every format lasts as long as the first (the
			// clustergen voices add random noise, but their timing is fixed).
			if first == 0 {
				first = d
			} else if diff := (d - first).Abs(); diff > 5*time.Millisecond {
				t.Errorf("%s %v: %v of audio, %v in %v", v, f, d, first, formats[0])
			}
			// A 16 kHz voice has nothing above 8 kHz; resampling must not put images there.
			if f.Rate >= 24000 && v != "kal" {
				if hi := audiotest.ToneLevelDB(pcm, f.Rate, 10000); hi > level-50 {
					t.Errorf("%s %v: %.1f dBFS at 10 kHz against speech at %.1f", v, f, hi, level)
				}
			}
		}
	}
}

func TestDefaultsAndUnknownVoices(t *testing.T) {
	s := mustNew(t, Options{})
	if s.Name() != "flite" || s.v8k.id() != "kal" || s.v16k.id() != "slt" {
		t.Errorf("defaults: %s, %s, %s", s.Name(), s.v8k.id(), s.v16k.id())
	}
	for _, o := range []Options{{Voice8k: "nope"}, {Voice16k: "SLT"}} {
		_, err := New(o)
		if err == nil {
			t.Fatalf("%+v accepted", o)
		}
		for _, v := range []string{"kal", "kal16", "slt", "rms", "awb"} {
			if !strings.Contains(err.Error(), v) {
				t.Errorf("error %q does not list voice %s", err, v)
			}
		}
	}
}

func TestEmptyTextIsEmptyAudio(t *testing.T) {
	s := mustNew(t, Options{})
	for _, text := range []string{"", " \n\t "} {
		if b := synthesize(t, s, text, audio.Telephone); len(b) != 0 {
			t.Errorf("%q: %d bytes", text, len(b))
		}
	}
	// Text flite has no words for is not an error either.
	synthesize(t, s, `'"`, audio.Telephone)
}

// heldSpeaker is a voice that pauses right after handing on its first samples until
// release is closed, so a test can look at what the reader has while flite is held there.
type heldSpeaker struct {
	speaker
	release chan struct{}
	once    sync.Once
}

func (h *heldSpeaker) speak(text string, sink func([]int16) bool) error {
	return h.speaker.speak(text, func(pcm []int16) bool {
		ok := sink(pcm)
		h.once.Do(func() { <-h.release })
		return ok
	})
}

// TestFirstAudioLongBeforeTheEnd proves by the order of events, not by the clock, that
// audio streams as flite makes it: with flite held after its first samples, the reader
// already has audio, and those samples are a small part of the first utterance alone. How
// soon the first audio comes is BenchmarkFirstAudio's business.
func TestFirstAudioLongBeforeTheEnd(t *testing.T) {
	for _, c := range []struct {
		voice string
		f     audio.Format
	}{
		{"kal", audio.Telephone},
		{"slt", audio.Format{Encoding: audio.PCM16, Rate: 16000}},
	} {
		s := mustNew(t, Options{Voice8k: c.voice, Voice16k: c.voice})
		sp := s.v8k
		if c.f.Rate != 8000 {
			sp = s.v16k
		}
		// What flite makes of the first utterance on its own: a whole-utterance (or
		// whole-text) synthesis would hand over at least this much before any audio.
		var utterance int
		if err := sp.speak(splitText(paragraph)[0], func(pcm []int16) bool { utterance += len(pcm); return true }); err != nil {
			t.Fatal(err)
		}
		held := &heldSpeaker{speaker: sp, release: make(chan struct{})}
		s.v8k, s.v16k = held, held
		r, err := s.Synthesize(context.Background(), paragraph, c.f)
		if err != nil {
			t.Fatal(err)
		}
		st := r.(*stream)
		buf := make([]byte, 64<<10)
		type result struct {
			n   int
			err error
		}
		first := make(chan result, 1)
		go func() { n, err := r.Read(buf); first <- result{n, err} }()
		var got result
		select {
		case got = <-first:
		case <-time.After(30 * time.Second): // a safety net: flite is held, nothing else can come
			close(held.release)
			r.Close()
			t.Fatalf("%s: no audio reached the reader while flite was held after its first samples", c.voice)
		}
		madeByThen := st.samples.Load()
		close(held.release)
		total, err := got.n, got.err
		for err == nil {
			var n int
			n, err = r.Read(buf)
			total += n
		}
		r.Close()
		if err != io.EOF {
			t.Fatal(err)
		}
		all := st.samples.Load()
		t.Logf("%s: first audio (%d bytes) when %d samples were made; the first utterance alone is %d, the text %d (%v)",
			c.voice, got.n, madeByThen, utterance, all, c.f.Duration(total))
		if got.n == 0 || madeByThen == 0 || madeByThen > int64(utterance)/4 {
			t.Errorf("%s: first audio (%d bytes) only when %d samples were made, of %d in the first utterance",
				c.voice, got.n, madeByThen, utterance)
		}
	}
}

func TestStopMidUtterance(t *testing.T) {
	s := mustNew(t, Options{})
	f := audio.Format{Encoding: audio.PCM16, Rate: 16000}
	full := len(decode(t, f, synthesize(t, s, paragraph, f)))
	for _, how := range []string{"cancel", "close"} {
		ctx, cancel := context.WithCancel(context.Background())
		r, err := s.Synthesize(ctx, paragraph, f)
		if err != nil {
			t.Fatal(err)
		}
		st := r.(*stream)
		if _, err := io.ReadFull(r, make([]byte, 2*1600)); err != nil { // 100 ms
			t.Fatal(err)
		}
		if how == "cancel" {
			cancel()
		} else {
			r.Close()
		}
		took := waitFinished(t, st)
		made := st.samples.Load()
		t.Logf("%s: synthesis stopped %v later, after %d of %d samples", how, took, made, full)
		if made > int64(full)/4 {
			t.Errorf("%s: %d of %d samples made", how, made, full)
		}
		_, err = r.Read(make([]byte, 100))
		if how == "cancel" && voice.KindOf(err) != voice.KindCanceled {
			t.Errorf("Read after cancel: %v, want KindCanceled", err)
		}
		if how == "close" && err == nil {
			t.Error("Read after Close succeeded")
		}
		r.Close()
		cancel()
	}
}

func TestConcurrentSynthesis(t *testing.T) {
	type job struct {
		voice string
		f     audio.Format
		text  string
	}
	jobs := []job{
		{"kal", audio.Telephone, sentence},
		{"slt", audio.Format{Encoding: audio.PCM16, Rate: 16000}, "What is the weather like in Boston tomorrow?"},
		{"kal16", audio.Format{Encoding: audio.PCM16, Rate: 24000}, "Transfer me to a human agent, please."},
		{"awb", audio.Format{Encoding: audio.Alaw, Rate: 16000}, "My account number is 4567; yes, that is correct."},
		{"rms", audio.Format{Encoding: audio.PCM16, Rate: 48000}, "No thank you, goodbye."},
	}
	synths := map[string]*Synthesizer{}
	want := map[string][]byte{}
	for _, j := range jobs {
		synths[j.voice] = mustNew(t, Options{Voice8k: j.voice, Voice16k: j.voice})
		want[j.voice] = synthesize(t, synths[j.voice], j.text, j.f)
	}
	const workers, rounds = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				j := jobs[(w+i)%len(jobs)]
				r, err := synths[j.voice].Synthesize(context.Background(), j.text, j.f)
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(r)
				r.Close()
				switch {
				case err != nil:
					errs <- err
				case len(got) != len(want[j.voice]):
					errs <- fmt.Errorf("%s: %d bytes, %d alone", j.voice, len(got), len(want[j.voice]))
				case (j.voice == "kal" || j.voice == "kal16") && !bytes.Equal(got, want[j.voice]):
					// The diphone voices are deterministic: any difference is corruption.
					errs <- fmt.Errorf("%s: audio differs from the same text synthesised alone", j.voice)
				default:
					a, _ := speechLevel(decode(t, j.f, got), j.f.Rate)
					b, _ := speechLevel(decode(t, j.f, want[j.voice]), j.f.Rate)
					if math.Abs(a-b) > 1 {
						errs <- fmt.Errorf("%s: speech at %.1f dBFS, %.1f alone", j.voice, a, b)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// BenchmarkFirstAudio measures the time from Synthesize to the first audio of a two
// sentence reply (90 characters) and the real-time factor of the whole reply.
func BenchmarkFirstAudio(b *testing.B) {
	const reply = "Sure, I can help with that. What is the weather like in Boston tomorrow, and at what time?"
	for _, c := range []struct {
		voice string
		f     audio.Format
	}{
		{"kal", audio.Telephone},
		{"slt", audio.Format{Encoding: audio.PCM16, Rate: 16000}},
	} {
		b.Run(fmt.Sprintf("%s/%v", c.voice, c.f), func(b *testing.B) {
			s := mustNew(b, Options{Voice8k: c.voice, Voice16k: c.voice})
			buf := make([]byte, 64<<10)
			var first, whole, played time.Duration
			for b.Loop() {
				start := time.Now()
				r, err := s.Synthesize(context.Background(), reply, c.f)
				if err != nil {
					b.Fatal(err)
				}
				n, err := r.Read(buf)
				first += time.Since(start)
				total := n
				for err == nil {
					n, err = r.Read(buf)
					total += n
				}
				whole += time.Since(start)
				played += c.f.Duration(total)
				r.Close()
			}
			b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "ms-first-audio")
			b.ReportMetric(whole.Seconds()/played.Seconds(), "rtf")
		})
	}
}

// BenchmarkRealTimeFactor synthesises the long paragraph (about 45 s of speech).
func BenchmarkRealTimeFactor(b *testing.B) {
	for _, c := range []struct {
		voice string
		f     audio.Format
	}{
		{"kal", audio.Telephone},
		{"slt", audio.Format{Encoding: audio.PCM16, Rate: 16000}},
	} {
		b.Run(fmt.Sprintf("%s/%v", c.voice, c.f), func(b *testing.B) {
			s := mustNew(b, Options{Voice8k: c.voice, Voice16k: c.voice})
			var played time.Duration
			start := time.Now()
			for b.Loop() {
				played += c.f.Duration(len(synthesize(b, s, paragraph, c.f)))
			}
			b.ReportMetric(time.Since(start).Seconds()/played.Seconds(), "rtf")
		})
	}
}
