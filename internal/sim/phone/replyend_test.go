package phone

import (
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio/g711"
)

func silence(d time.Duration) []byte {
	out := make([]byte, audioBytes(d))
	for i := range out {
		out[i] = g711.MulawSilence
	}
	return out
}

// On an audio-only line, speech followed by ReplyGap of silence is one reply end, placed
// where the speech ended; shorter pauses (between words) end nothing.
func TestAudioOnlyLineHearsReplyEnds(t *testing.T) {
	clk := newFakeClock()
	w := telephoneWire()
	w.info.AudioOnly = true
	c, err := Detached(testCtx(t), w, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Hangup()
	feed := func(frame []byte, n int) {
		for range n {
			c.Feed(websocket.MessageBinary, frame)
			clk.Advance(20 * ms)
		}
	}
	word, quiet := tone(20*ms, 0.5), silence(20*ms)
	feed(word, 10)  // speech to 200 ms
	feed(quiet, 10) // a pause between words: 200 ms
	feed(word, 5)   // speech to 500 ms
	if n := c.Snapshot().ReplyEnds(); n != 0 {
		t.Fatalf("%d reply ends heard inside a reply", n)
	}
	gapFrames := int(ReplyGap / (20 * ms))
	feed(quiet, gapFrames-1)
	if n := c.Snapshot().ReplyEnds(); n != 0 {
		t.Fatalf("a reply ended after %v of silence, short of ReplyGap %v", ReplyGap-20*ms, ReplyGap)
	}
	feed(quiet, 1+3*gapFrames) // the gap, then a long silence that ends nothing more
	ends := c.Snapshot().Filter(ReplyEnded)
	if len(ends) != 1 || ends[0].End != 500*ms || ends[0].At != 500*ms+ReplyGap-20*ms {
		t.Fatalf("reply ends %v, want one at the speech's end 500ms, told when the gap was complete", ends)
	}
	feed(word, 3)
	feed(quiet, gapFrames)
	if n := c.Snapshot().ReplyEnds(); n != 2 {
		t.Fatalf("%d reply ends after a second reply and its gap, want 2", n)
	}
}

// A line with marks finds no reply ends in its audio: the marks say where replies end.
func TestMarkedLineHearsNoReplyEnds(t *testing.T) {
	clk := newFakeClock()
	c, err := Detached(testCtx(t), telephoneWire(), Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Hangup()
	for _, f := range [][]byte{tone(200*ms, 0.5), silence(2 * ReplyGap)} {
		for off := 0; off < len(f); off += pieceBytes {
			c.Feed(websocket.MessageBinary, f[off:off+pieceBytes])
			clk.Advance(20 * ms)
		}
	}
	if n := c.Snapshot().ReplyEnds(); n != 0 {
		t.Fatalf("%d reply ends on a line with marks", n)
	}
}
