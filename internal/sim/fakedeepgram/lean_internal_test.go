package fakedeepgram

import (
	"bytes"
	"context"
	"crypto/sha256"
	"math"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/g711"
)

const leanQuery = "encoding=mulaw&sample_rate=8000&interim_results=true&utterance_end_ms=1000&vad_events=true"

// socketless is a connection without a socket: audio goes straight to conn.audio, and the
// messages meant for the writer wait in out (large enough for a test) until taken.
func socketless(tb testing.TB, opts Options) (*conn, chan outMsg) {
	tb.Helper()
	s := New(opts)
	q, err := url.ParseQuery(leanQuery)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := parseParams(q)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(func() { cancel(); s.Close() })
	out := make(chan outMsg, 4096)
	rec := &ConnStats{ID: 1, RequestID: "00000000-0000-4000-8000-000000000001", Query: q}
	c := &conn{
		s: s, rec: rec, p: p, det: newDetector(p, s.opts), sha: sha256.New(), out: out,
		wdone: make(chan struct{}), ctx: ctx,
		meta: resultsMeta{RequestID: rec.RequestID, ModelInfo: newModelInfo(p.model), ModelUUID: fakeModelUUID},
	}
	return c, out
}

// tone is d of a loud 200 Hz tone (speech to the detector) as 8 kHz mu-law.
func tone(d time.Duration) []byte {
	pcm := make([]int16, int(d/(125*time.Microsecond)))
	for i := range pcm {
		pcm[i] = int16(7000 * math.Sin(2*math.Pi*200*float64(i)/8000))
	}
	return g711.EncodeMulaw(make([]byte, len(pcm)), pcm)
}

func quiet(d time.Duration) []byte {
	return g711.EncodeMulaw(make([]byte, int(d/(125*time.Microsecond))), make([]int16, int(d/(125*time.Microsecond))))
}

// feedFrames hands audio to c in 20 ms messages, as Handset streams it, calling each
// after every message.
func feedFrames(tb testing.TB, c *conn, audio []byte, each func()) {
	tb.Helper()
	for len(audio) > 0 {
		n := min(160, len(audio))
		if dropped, ok := c.audio(audio[:n]); dropped || !ok {
			tb.Fatalf("audio: dropped %t, ok %t", dropped, ok)
		}
		audio = audio[n:]
		if each != nil {
			each()
		}
	}
}

func drain(out chan outMsg) [][]byte {
	var msgs [][]byte
	for len(out) > 0 {
		msgs = append(msgs, (<-out).data)
	}
	return msgs
}

// TestLeanConnectionForgetsUtterances: a lean connection sends exactly the messages a
// normal one sends, counts them in Totals, and holds at most the open utterance however
// many it has heard.
func TestLeanConnectionForgetsUtterances(t *testing.T) {
	const utterances = 20
	cycle := append(tone(400*time.Millisecond), quiet(1200*time.Millisecond)...)
	var sent [2][][]byte
	for i, lean := range []bool{false, true} {
		c, out := socketless(t, Options{Lean: lean, Transcripts: []string{"one two", "three four"}})
		held := 0
		for range utterances {
			feedFrames(t, c, cycle, func() { held = max(held, len(c.det.utts)) })
		}
		sent[i] = drain(out)
		tot := c.s.Totals()
		want := Totals{AudioBytes: int64(utterances * len(cycle)), Interims: utterances, Finals: utterances, UtteranceEnds: utterances}
		if tot != want {
			t.Errorf("lean=%t: totals %+v, want %+v", lean, tot, want)
		}
		c.s.mu.Lock()
		kept := len(c.rec.Utterances) + len(c.rec.Transcripts) + len(c.rec.Interims)
		c.s.mu.Unlock()
		switch {
		case lean && (held > 1 || kept != 0):
			t.Errorf("lean connection held %d utterances and kept %d records", held, kept)
		case !lean && kept != 3*utterances:
			t.Errorf("normal connection kept %d records, want %d", kept, 3*utterances)
		}
	}
	if len(sent[0]) != 4*utterances { // SpeechStarted, interim, final, UtteranceEnd
		t.Fatalf("normal connection sent %d messages, want %d", len(sent[0]), 4*utterances)
	}
	if len(sent[0]) != len(sent[1]) {
		t.Fatalf("normal sent %d messages, lean %d", len(sent[0]), len(sent[1]))
	}
	for i := range sent[0] {
		if !bytes.Equal(sent[0][i], sent[1][i]) {
			t.Fatalf("message %d differs:\nnormal %s\nlean   %s", i, sent[0][i], sent[1][i])
		}
	}
}

// BenchmarkAudioFrame is the per-message path of a connection: one 20 ms mu-law message
// through the byte count, hash, decoder and energy detector. Silence and steady speech
// must not allocate; an utterance allocates only for the JSON results it sends.
func BenchmarkAudioFrame(b *testing.B) {
	for _, tc := range []struct {
		name  string
		audio []byte // fed 160 bytes per op, cycling
		lean  bool
	}{
		{"silence", quiet(time.Second), false},
		{"speech", tone(time.Second), false},
		{"speech/lean", tone(time.Second), true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c, out := socketless(b, Options{Lean: tc.lean, EndSilence: time.Hour})
			off := 0
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := c.audio(tc.audio[off : off+160]); !ok {
					b.Fatal("writer gone")
				}
				off = (off + 160) % len(tc.audio)
				for len(out) > 0 {
					<-out
				}
			}
		})
	}
	// One op is a whole utterance: 1 s of speech then 1 s of silence, 100 messages.
	for _, lean := range []bool{false, true} {
		b.Run("utterance/lean="+strconv.FormatBool(lean), func(b *testing.B) {
			c, out := socketless(b, Options{Lean: lean})
			cycle := append(tone(time.Second), quiet(time.Second)...)
			b.ReportAllocs()
			for b.Loop() {
				feedFrames(b, c, cycle, nil)
				for len(out) > 0 {
					<-out
				}
			}
		})
	}
}
