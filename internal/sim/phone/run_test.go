package phone

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/clock"
)

const ms = time.Millisecond

// handset is the far end of one call's socket in these tests: what the phone sends
// arrives on msgs, and send writes to the phone.
type handset struct {
	t    *testing.T
	conn *websocket.Conn
	msgs chan []byte
}

func (h *handset) send(typ websocket.MessageType, data []byte) {
	h.t.Helper()
	if err := h.conn.Write(context.Background(), typ, data); err != nil {
		h.t.Fatalf("send: %v", err)
	}
}

// next is the next message from the phone that is not media.
func (h *handset) nextNonMedia() string {
	h.t.Helper()
	for {
		select {
		case m := <-h.msgs:
			if !bytes.HasPrefix(m, []byte("media:")) {
				return string(m)
			}
		case <-time.After(10 * time.Second):
			h.t.Fatal("no message from the phone")
		}
	}
}

// nextMedia is the payload of the next media message from the phone.
func (h *handset) nextMedia() []byte {
	h.t.Helper()
	for {
		select {
		case m := <-h.msgs:
			if p, ok := bytes.CutPrefix(m, []byte("media:")); ok {
				return p
			}
		case <-time.After(10 * time.Second):
			h.t.Fatal("no media from the phone")
		}
	}
}

// connect runs a phone on wire against a test server and returns both ends.
func connect(t *testing.T, wire Wire, clk clock.Clock) (*Call, *handset) {
	t.Helper()
	return connectWith(t, wire, Options{Clock: clk})
}

// connectWith is connect with the phone's options (Ref is set).
func connectWith(t *testing.T, wire Wire, opts Options) (*Call, *handset) {
	t.Helper()
	accepted := make(chan *handset, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		h := &handset{t: t, conn: conn, msgs: make(chan []byte, 4096)}
		accepted <- h
		for {
			_, data, err := conn.Read(context.Background())
			if err != nil {
				close(h.msgs)
				return
			}
			h.msgs <- data
		}
	}))
	t.Cleanup(srv.Close)
	ctx := testCtx(t)
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Ref = "call-1"
	c, err := Run(ctx, conn, wire, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Hangup() })
	h := <-accepted
	if m := <-h.msgs; string(m) != "hello" {
		t.Fatalf("first message %q, want the handshake", m)
	}
	return c, h
}

// pcm16 is mu-law audio as 16-bit little-endian PCM at rate (8 or 16 kHz, by repeating
// samples).
func pcm16(mulaw []byte, rate int) []byte {
	var out []byte
	for _, b := range mulaw {
		for range rate / 8000 {
			out = binary.LittleEndian.AppendUint16(out, uint16(g711.DecodeMulawSample(b)))
		}
	}
	return out
}

// levelOf is the mean absolute sample of 16-bit little-endian PCM.
func levelOf(pcm []byte) float64 {
	var sum float64
	for i := 0; i+1 < len(pcm); i += 2 {
		s := float64(int16(binary.LittleEndian.Uint16(pcm[i:])))
		sum += max(s, -s)
	}
	return sum / float64(len(pcm)/2)
}

// TestRunSpeaksTheWiresFormatAndFrame: a wire of 16 kHz PCM16 in 60 ms frames gets its
// audio in that format and size both ways; the recording stays 8 kHz mu-law.
func TestRunSpeaksTheWiresFormatAndFrame(t *testing.T) {
	w := telephoneWire()
	w.info.Format, w.info.Frame = audio.Format{Encoding: audio.PCM16, Rate: 16000}, 60*ms
	clk := newFakeClock()
	c, h := connect(t, w, clk)

	if n := len(h.nextMedia()); n != 1920 {
		t.Fatalf("first frame %d bytes, want 60 ms of 16 kHz PCM16 (1920)", n)
	}
	if c.Ref() != "call-1" {
		t.Fatalf("Ref %q", c.Ref())
	}
	said := c.Say(tone(120*ms, 0.5))
	var loud int
	for range 3 {
		clk.Advance(60 * ms)
		p := h.nextMedia()
		if len(p) != 1920 {
			t.Fatalf("frame of %d bytes", len(p))
		}
		if levelOf(p) > 3000 {
			loud++
		}
	}
	<-said
	if loud < 2 {
		t.Fatalf("%d of the frames after Say carried the tone, want 2", loud)
	}

	// 100 ms of 16 kHz audio from Handset, then a mark: the mark is reported once it has
	// played, and what played is recorded as 8 kHz mu-law.
	h.send(websocket.MessageBinary, pcm16(tone(100*ms, 0.5), 16000))
	h.send(websocket.MessageText, []byte("mark:m1"))
	if err := c.WaitFor(testCtx(t), func(s Snapshot) bool { return s.Count(MarkSent) == 1 }); err != nil {
		t.Fatal(err)
	}
	clk.Advance(100 * ms)
	if m := h.nextNonMedia(); m != "played:m1" {
		t.Fatalf("got %q, want the mark reported", m)
	}
	s := c.Snapshot()
	if got := len(s.PlayedAudio()); got < 780 || got > 800 {
		t.Fatalf("played %d bytes of mu-law, want about 800 (100 ms at 8 kHz)", got)
	}
	if len(s.SpeechSegments()) != 1 || s.Counters.ReceivedFrames != 1 {
		t.Fatalf("recording %v", s)
	}
}

// TestClearFollowsTheWire: a wire that does not report cleared marks sends none, and
// sends its own message after the clear; the recording still notes the mark as cleared.
func TestClearFollowsTheWire(t *testing.T) {
	w := telephoneWire()
	w.reportsCleared, w.cleared = false, []byte("cleared")
	clk := newFakeClock()
	c, h := connect(t, w, clk)
	h.send(websocket.MessageBinary, tone(time.Second, 0.5))
	h.send(websocket.MessageText, []byte("mark:m1"))
	h.send(websocket.MessageText, []byte("clear"))
	if m := h.nextNonMedia(); m != "cleared" {
		t.Fatalf("got %q after the clear, want the wire's cleared message alone", m)
	}
	marks := c.Marks()
	if len(marks) != 1 || !marks[0].Echoed || !marks[0].Cleared {
		t.Fatalf("marks %+v, want m1 noted as cleared", marks)
	}
	if err := c.DTMF("5"); err != nil {
		t.Fatal(err)
	}
	if m := h.nextNonMedia(); m != "dtmf:5" {
		t.Fatalf("got %q, want the key press", m)
	}
	h.send(websocket.MessageText, []byte("nonsense"))
	if err := c.WaitFor(testCtx(t), func(s Snapshot) bool { return len(s.ProtocolErrors()) == 1 }); err != nil {
		t.Fatal(err)
	}
	if e := c.ProtocolErrors()[0]; e.Code != 7 || e.Detail != "unknown message" {
		t.Fatalf("protocol error %+v, want the wire's code and detail", e)
	}
}

func TestRunRefusesAFrameThatIsNotWholeFrames(t *testing.T) {
	for _, frame := range []time.Duration{30 * ms, -20 * ms, 2 * time.Second} {
		w := telephoneWire()
		w.info.Frame = frame
		if _, err := Detached(context.Background(), w, Options{}); err == nil {
			t.Errorf("frame %v accepted", frame)
		}
	}
	w := telephoneWire()
	w.info.Format = audio.Format{Encoding: audio.PCM16, Rate: 44100}
	if _, err := Detached(context.Background(), w, Options{}); err == nil {
		t.Error("44.1 kHz accepted")
	}
}

// TestPerFramePathsDoNotAllocate: a lean call's receive path (with the reply-end
// detection of an audio-only line) and both conversions.
func TestPerFramePathsDoNotAllocate(t *testing.T) {
	for _, f := range []audio.Format{audio.Telephone, {Encoding: audio.PCM16, Rate: 16000}, {Encoding: audio.Alaw, Rate: 8000}} {
		w := telephoneWire()
		w.info.Format = f
		w.info.AudioOnly = true
		clk := newFakeClock()
		ctx, cancel := context.WithCancel(context.Background())
		c, err := Detached(ctx, w, Options{Lean: true, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		frame := make([]byte, f.FrameBytes())
		feed := func() {
			c.Feed(websocket.MessageBinary, frame)
			clk.Advance(20 * ms)
		}
		for range 10 {
			feed()
		}
		if n := testing.AllocsPerRun(100, feed); n != 0 {
			t.Errorf("%v: receiving a frame allocates %v times", f, n)
		}
		if c.conv != nil {
			mulaw, wire := make([]byte, 0, 160), make([]byte, 0, c.conv.wireLen(160))
			convert := func() {
				wire = c.conv.fromMulaw(wire[:0], frame[:160])
				mulaw = c.conv.toMulaw(mulaw[:0], frame)
			}
			convert()
			if n := testing.AllocsPerRun(100, convert); n != 0 {
				t.Errorf("%v: converting a frame allocates %v times", f, n)
			}
		}
		cancel()
		<-c.Done()
	}
}

// TestLeanPlaybackKeepsNoAudioAndStaysSmall: a lean call's playback buffer queues lengths
// alone, and its arrays stay a few pieces long for audio that arrives at real-time pace.
func TestLeanPlaybackKeepsNoAudioAndStaysSmall(t *testing.T) {
	clk := newFakeClock()
	c, err := Detached(testCtx(t), telephoneWire(), Options{Lean: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Hangup()
	frame := tone(20*ms, 0.3)
	for range 50 {
		c.Feed(websocket.MessageBinary, frame)
	}
	c.mu.Lock()
	for _, q := range c.play.pending() {
		if q.audio != nil {
			t.Errorf("queued piece keeps %d bytes of audio", len(q.audio))
		}
	}
	c.mu.Unlock()
	clk.Advance(time.Second)
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}

	c, err = Detached(testCtx(t), telephoneWire(), Options{Lean: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Hangup()
	maxBuf := 0
	for range 500 {
		c.Feed(websocket.MessageBinary, frame)
		clk.Advance(20 * ms)
		c.mu.Lock()
		maxBuf = max(maxBuf, cap(c.play.buf), cap(c.play.out))
		c.mu.Unlock()
	}
	if maxBuf > 4 {
		t.Fatalf("playback arrays grew to %d pieces for audio that never queued more than a frame", maxBuf)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.play.pending()) != 0 || cap(c.play.buf) > maxIdlePieces || cap(c.play.out) > maxIdlePieces {
		t.Errorf("playback holds %d pieces in %d, result array %d", len(c.play.pending()), cap(c.play.buf), cap(c.play.out))
	}
	if n := c.counters.PlayedBytes; n != 500*160 {
		t.Errorf("played %d bytes, want %d", n, 500*160)
	}
}

// TestSilentSendsNoMedia: a silent phone sends its handshake, key presses and raw frames,
// and plays what Handset sends, but never a media frame however long the call runs.
func TestSilentSendsNoMedia(t *testing.T) {
	clk := newFakeClock()
	c, h := connectWith(t, telephoneWire(), Options{Clock: clk, Silent: true})
	said := c.Say(tone(100*ms, 0.5))
	for range 5 {
		clk.Advance(20 * ms)
	}
	if err := c.DTMF("7"); err != nil {
		t.Fatal(err)
	}
	if err := c.SendRaw("raw"); err != nil {
		t.Fatal(err)
	}
	h.send(websocket.MessageBinary, tone(40*ms, 0.5))
	h.send(websocket.MessageText, []byte("mark:m1"))
	if err := c.WaitFor(testCtx(t), func(s Snapshot) bool { return s.Count(MarkSent) == 1 }); err != nil {
		t.Fatal(err)
	}
	clk.Advance(40 * ms)
	for _, want := range []string{"dtmf:7", "raw", "played:m1"} {
		select {
		case m := <-h.msgs:
			if string(m) != want {
				t.Fatalf("got %q, want %q", m, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %q from the phone", want)
		}
	}
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}
	<-said
	for m := range h.msgs {
		t.Errorf("the silent phone sent %q", m)
	}
	if s := c.Snapshot(); s.Counters.SentFrames != 0 || s.Count(SayStarted) != 0 {
		t.Fatalf("recording %v", s)
	}
}
