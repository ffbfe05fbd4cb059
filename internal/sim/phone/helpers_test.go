package phone

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/clock"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newFakeClock() *clock.Fake { return clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// tone is d of a 440 Hz sine at amp of full scale, as 8 kHz mu-law.
func tone(d time.Duration, amp float64) []byte {
	out := make([]byte, audioBytes(d))
	for i := range out {
		s := amp * 32767 * math.Sin(2*math.Pi*440*float64(i)/8000)
		out[i] = g711.EncodeMulawSample(int16(s))
	}
	return out
}

// plainWire is a made-up carrier protocol for testing the core alone: media travels as
// binary frames of raw audio; "mark:NAME", "clear" and "hello"/"bye" are text. Its
// options stand for the differences real carriers have.
type plainWire struct {
	info           Info
	reportsCleared bool   // reports marks a clear dropped (Twilio does; Plivo does not)
	cleared        []byte // sent after a clear
}

func (w *plainWire) Info() Info { return w.info }

func (w *plainWire) Handshake() [][]byte { return [][]byte{[]byte("hello")} }

func (w *plainWire) AppendMedia(dst, payload []byte, f Frame) []byte {
	dst = append(dst, "media:"...)
	return append(dst, payload...)
}

func (w *plainWire) Mark(name string, cleared bool) []byte {
	if cleared && !w.reportsCleared {
		return nil
	}
	return []byte("played:" + name)
}

func (w *plainWire) Cleared() []byte { return w.cleared }

func (w *plainWire) DTMF(digit string) []byte { return []byte("dtmf:" + digit) }

func (w *plainWire) Stop() []byte { return nil }

func (w *plainWire) Decode(typ websocket.MessageType, msg, scratch []byte) (Inbound, error) {
	if typ == websocket.MessageBinary {
		return Inbound{Kind: InMedia, Audio: msg}, nil
	}
	s := string(msg)
	switch {
	case s == "clear":
		return Inbound{Kind: InClear}, nil
	case strings.HasPrefix(s, "mark:") && len(s) > len("mark:"):
		return Inbound{Kind: InMark, Name: s[len("mark:"):]}, nil
	}
	return Inbound{}, &WireError{Code: 7, Detail: "unknown message"}
}

func telephoneWire() *plainWire {
	return &plainWire{info: Info{Name: "plain", Format: audio.Telephone, MalformedCode: 6, OverflowCode: 8}, reportsCleared: true}
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
