package twiliocaller

import (
	"context"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/phone"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const ms = time.Millisecond

// detached is a call on Twilio's wire with no socket, fed by Feed.
func detached(t testing.TB, o Options, streamSid string) *Call {
	t.Helper()
	o = o.withDefaults()
	w := &wire{streamSid: streamSid, accountSid: o.AccountSid, callSid: o.CallSid, params: map[string]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pc, err := phone.Detached(ctx, w, phone.Options{Ref: o.CallSid, Lean: o.Lean, Echo: o.Echo, Clock: o.Clock, Logger: o.Logger})
	if err != nil {
		t.Fatal(err)
	}
	return &Call{Call: pc, opts: o, streamSid: streamSid}
}

// isSpeech is whether one frame of mu-law counts as speech in a recording.
func isSpeech(frame []byte) bool {
	return len(Snapshot{Events: []Event{{Kind: AudioPlayed, Bytes: len(frame), Audio: frame}}}.SpeechSegments()) > 0
}

// pieceBytes is one 20 ms frame of 8 kHz mu-law.
const (
	pieceBytes = 160
	bytesPerMs = 8
)

// audioDuration is how long n bytes of 8 kHz mu-law play.
func audioDuration(n int) time.Duration { return time.Duration(n) * 125 * time.Microsecond }

// audioBytes is how many bytes of 8 kHz mu-law play in d, rounded down.
func audioBytes(d time.Duration) int { return max(0, int(d/(125*time.Microsecond))) }
