package twiliocaller

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"github.com/handset-voice/handset/internal/clock"
)

func withLean(clk *clock.Fake) func(*Options) {
	return func(o *Options) { o.Clock, o.Lean = clk, true }
}

// waitCounters polls the call's counters until they satisfy cond: counters wake no
// WaitFor.
func waitCounters(t *testing.T, c *Call, what string, cond func(Counters) bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond(c.Counters()) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: counters %+v", what, c.Counters())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLeanCallKeepsNoAudioButTimesMarks: a lean call records no per-frame events however
// much audio Handset sends, yet marks still come back when the audio before them has
// played, and the counters account for every byte.
func TestLeanCallKeepsNoAudioButTimesMarks(t *testing.T) {
	f := newFakeHandset(t)
	clk := newFakeClock()
	c, fs := dial(t, f, withLean(clk))

	// Five seconds of audio in 20 ms frames, all at once, a mark after each second.
	const frames = 250
	frame := tone(20*ms, 0.3)
	for i := 1; i <= frames; i++ {
		fs.sendMedia(frame)
		if i%50 == 0 {
			fs.sendMark("s" + strconv.Itoa(i/50))
		}
	}
	// The last mark follows the last frame, so once it is in, every frame is.
	waitFor(t, c, "every mark", countAtLeast(MarkSent, 5))
	if n := c.Counters().ReceivedFrames; n != frames {
		t.Fatalf("%d frames counted before the mark that followed the last", n)
	}
	clk.Advance(5 * time.Second)
	for k := 1; k <= 5; k++ {
		if m, _ := fs.nextNonMedia(); m.Event != "mark" || m.Mark == nil || m.Mark.Name != "s"+strconv.Itoa(k) {
			t.Fatalf("echo %s, want mark s%d", m.raw, k)
		}
	}
	var want []Mark
	for k := 1; k <= 5; k++ {
		want = append(want, Mark{Name: "s" + strconv.Itoa(k), Echoed: true, EchoedAt: time.Duration(k) * time.Second})
	}
	s := c.Snapshot()
	if d := cmp.Diff(want, s.Marks()); d != "" {
		t.Fatalf("marks (-want +got):\n%s", d)
	}
	if n := len(s.Events); n != 10 || s.Count(AudioReceived)+s.Count(AudioPlayed) != 0 {
		t.Fatalf("lean call recorded %d events (%v), want the 10 mark events alone", n, s)
	}
	if got := s.PlayedAudio(); len(got) != 0 {
		t.Fatalf("lean call kept %d bytes of played audio", len(got))
	}
	wantCounters := Counters{ReceivedFrames: frames, ReceivedBytes: frames * 160, PlayedFrames: frames, PlayedBytes: frames * 160, SentFrames: s.Counters.SentFrames}
	if d := cmp.Diff(wantCounters, s.Counters); d != "" {
		t.Fatalf("counters (-want +got):\n%s", d)
	}
	if s.Counters.SentFrames < 1 {
		t.Fatal("no media frame counted as sent")
	}
	// A clear still drops what is queued, returns the pending mark at once and counts
	// only what really played.
	fs.sendMedia(tone(time.Second, 0.3))
	fs.sendMark("c1")
	waitFor(t, c, "mark c1", countAtLeast(MarkSent, 6))
	clk.Advance(300 * ms)
	fs.sendClear()
	waitFor(t, c, "the clear", func(s Snapshot) bool { return s.Clears() == 1 })
	s = c.Snapshot()
	if cl := s.Filter(Clear)[0]; cl.Bytes != 8000-2400 {
		t.Fatalf("clear dropped %d bytes, want %d", cl.Bytes, 8000-2400)
	}
	if m := s.Marks()[5]; m.Name != "c1" || !m.Echoed || !m.Cleared || m.EchoedAt != 5300*ms {
		t.Fatalf("mark c1 %+v, want echoed by the clear at 5.3 s", m)
	}
	if s.Counters.PlayedBytes != frames*160+2400 || s.Counters.ReceivedBytes != frames*160+8000 {
		t.Fatalf("counters after the clear %+v", s.Counters)
	}
	if n := len(s.Events); n != 13 {
		t.Fatalf("%d events after the clear, want 13: %v", n, s.Events)
	}
}

// TestLeanCallMemoryStaysFlat streams audio the way Handset does, a frame every 20 ms,
// for ten seconds: the recording and the playback buffer stay the same size throughout.
func TestLeanCallMemoryStaysFlat(t *testing.T) {
	f := newFakeHandset(t)
	clk := newFakeClock()
	c, fs := dial(t, f, withLean(clk))
	frame := tone(20*ms, 0.3)
	const frames = 500
	for i := 1; i <= frames; i++ {
		fs.sendMedia(frame)
		waitCounters(t, c, "frame "+strconv.Itoa(i), func(n Counters) bool { return n.ReceivedFrames == int64(i) })
		clk.Advance(20 * ms)
	}
	s := c.Snapshot()
	if len(s.Events) != 0 {
		t.Fatalf("ten seconds of audio left %d events: %v", len(s.Events), s)
	}
	if s.Counters.PlayedFrames != frames || s.Counters.PlayedBytes != frames*160 {
		t.Fatalf("counters %+v, want every frame played", s.Counters)
	}
	// The writer kept pace: one frame per 20 ms of the clock, the first at 0.
	waitCounters(t, c, "501 frames sent", func(n Counters) bool { return n.SentFrames == frames+1 })
}

// TestCountersMatchTheEvents: without Lean the counters agree with the recording.
func TestCountersMatchTheEvents(t *testing.T) {
	f := newFakeHandset(t)
	clk := newFakeClock()
	c, fs := dial(t, f, withClock(clk))
	fs.sendMedia(tone(time.Second, 0.3))
	fs.sendMedia(tone(30*ms, 0.3))
	fs.sendMark("m")
	waitFor(t, c, "the mark", countAtLeast(MarkSent, 1))
	clk.Advance(500 * ms)
	fs.sendClear()
	waitFor(t, c, "the clear", func(s Snapshot) bool { return s.Clears() == 1 })
	s := c.Snapshot()
	var played int64
	for _, e := range s.Filter(AudioPlayed) {
		played += int64(e.Bytes)
	}
	want := Counters{
		ReceivedFrames: int64(s.Count(AudioReceived)), ReceivedBytes: int64(len(s.ReceivedAudio())),
		PlayedFrames: int64(s.Count(AudioPlayed)), PlayedBytes: played, SentFrames: s.Counters.SentFrames,
	}
	if d := cmp.Diff(want, s.Counters); d != "" {
		t.Fatalf("counters (-want +got):\n%s", d)
	}
	if want.ReceivedFrames != 2 || want.PlayedBytes != 4000 {
		t.Fatalf("received %d frames, played %d bytes; want 2 and 4000", want.ReceivedFrames, want.PlayedBytes)
	}
	if got := c.Counters(); got.ReceivedBytes != 8240 {
		t.Fatalf("Counters() = %+v", got)
	}
}

// TestLeanEchoStillEchoes: with Echo the lean call keeps queued audio until it has played
// and echoed, so the line still echoes.
func TestLeanEchoStillEchoes(t *testing.T) {
	f := newFakeHandset(t)
	clk := newFakeClock()
	c, fs := dial(t, f, func(o *Options) {
		o.Clock, o.Lean, o.Echo = clk, true, &EchoOptions{Delay: 40 * ms}
	})
	if m, _ := fs.next(); m.Event != "media" {
		t.Fatalf("first message %s", m.raw)
	}
	fs.sendMedia(tone(100*ms, 0.5))
	waitCounters(t, c, "the audio", func(n Counters) bool { return n.ReceivedFrames == 1 })
	loud := 0
	for k := 0; k < 10; k++ {
		clk.Advance(20 * ms)
		m, _ := fs.next()
		if isSpeech(payloadOf(t, m)) {
			loud++
		}
	}
	if loud == 0 {
		t.Fatal("no echo came back on a lean call with Echo")
	}
	if n := len(c.Events()); n != 0 {
		t.Fatalf("lean call recorded %d events", n)
	}
}

// leanBenchCall is a call without a socket, fed by Feed, as the fuzz target uses.
func leanBenchCall(b *testing.B, lean bool) (*Call, *clock.Fake) {
	clk := newFakeClock()
	c := detached(b, Options{Clock: clk, Lean: lean}, NewSid("MZ"))
	return c, clk
}

// BenchmarkReceiveFrame is the reader's per-frame path: one 20 ms media message from
// Handset, then 20 ms of playback. Lean calls retain nothing per frame; what remains
// allocated is transient (JSON decoding and the base64 payload).
func BenchmarkReceiveFrame(b *testing.B) {
	for _, lean := range []bool{false, true} {
		b.Run("lean="+strconv.FormatBool(lean), func(b *testing.B) {
			c, clk := leanBenchCall(b, lean)
			msg := []byte(`{"event":"media","streamSid":"` + c.streamSid + `","media":{"payload":"` +
				base64.StdEncoding.EncodeToString(tone(20*ms, 0.3)) + `"}}`)
			b.ReportAllocs()
			for b.Loop() {
				c.Feed(websocket.MessageText, msg)
				clk.Advance(20 * ms)
			}
		})
	}
}

// TestFastMediaTakesHandsetsFormat: the media message as Handset writes it skips
// encoding/json and is recorded exactly as the general path records it.
func TestFastMediaTakesHandsetsFormat(t *testing.T) {
	const sid = "MZ0123456789abcdef0123456789abcdef"
	audio := tone(20*ms, 0.3)
	b64 := base64.StdEncoding.EncodeToString(audio)
	exact := []byte(`{"event":"media","streamSid":"` + sid + `","media":{"payload":"` + b64 + `"}}`)
	sorted := []byte(`{"event":"media","media":{"payload":"` + b64 + `"},"streamSid":"` + sid + `"}`)
	var recorded [][]byte
	for i, msg := range [][]byte{exact, sorted} {
		c := detached(t, Options{Clock: newFakeClock()}, sid)
		if _, _, fast := fastMedia(msg, sid, nil); fast != (i == 0) {
			t.Errorf("fast path taken %t for %s", fast, msg)
		}
		c.Feed(websocket.MessageText, msg)
		recorded = append(recorded, c.Snapshot().ReceivedAudio())
	}
	if !bytes.Equal(recorded[0], audio) || !bytes.Equal(recorded[1], audio) {
		t.Fatalf("recorded %d and %d bytes, want the %d sent", len(recorded[0]), len(recorded[1]), len(audio))
	}
	for _, payload := range []string{"%%%", `\/w==`, "/w=", "/w==\n"} {
		if _, _, ok := fastMedia([]byte(mediaHead+sid+mediaMid+payload+mediaTail), sid, nil); ok {
			t.Errorf("fast path took payload %q", payload)
		}
	}
}

// FuzzFastMedia checks the fast path against encoding/json and base64: whatever it takes
// must decode to the same audio the general path finds.
func FuzzFastMedia(f *testing.F) {
	const sid = "MZ0123456789abcdef0123456789abcdef"
	for _, p := range []string{"//////////8=", "", "/w==", "/w=", "%%%", `\/w==`, "AAAA====", "A"} {
		f.Add(p, []byte(nil), false)
		f.Add(p, []byte(mediaHead+sid+mediaMid+p+`"} }`), true)
	}
	f.Fuzz(func(t *testing.T, payload string, raw []byte, lean bool) {
		var scratch []byte
		if lean {
			scratch = make([]byte, 4) // a reused buffer, sometimes too short
		}
		for _, msg := range [][]byte{[]byte(mediaHead + sid + mediaMid + payload + mediaTail), raw} {
			got, _, ok := fastMedia(msg, sid, scratch)
			if !ok {
				continue
			}
			got = bytes.Clone(got)
			var m inMsg
			if err := json.Unmarshal(msg, &m); err != nil || m.Event != "media" || m.StreamSid != sid || m.Media == nil || m.Media.Payload == nil {
				t.Fatalf("fast path took %q, which the general path reads as %+v, %v", msg, m, err)
			}
			want, err := base64.StdEncoding.DecodeString(*m.Media.Payload)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("fast path decoded %q to %x, general path to %x, %v", msg, got, want, err)
			}
		}
	})
}
