package cli

import (
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/voice"
)

// checkHeardPrefix holds every carrier to the same account of a barge-in: what the agent is
// told the caller heard of the interrupted reply (heard, the history's text before the
// marker) is the reply cut at a word, with every sentence whose mark the phone played
// before the clear and at most part of the next. Carriers differ in how marks come back
// around a clear (Twilio returns cleared ones, Plivo never does, Telnyx's is unknown); the
// heard prefix must not.
func checkHeardPrefix(t *testing.T, snap phone.Snapshot, turn, reply, interrupted string) {
	t.Helper()
	heard := strings.TrimSpace(strings.TrimSuffix(interrupted, voice.InterruptedMarker))
	if !strings.HasPrefix(reply, heard) || (len(heard) < len(reply) && heard != "" && reply[len(heard)] != ' ') {
		t.Errorf("heard %q is not the reply cut at a word:\n%s", heard, reply)
		return
	}
	played := 0
	for _, m := range snap.Marks() {
		if strings.HasPrefix(m.Name, turn+"-") && m.Echoed && !m.Cleared {
			played++
		}
	}
	sentences := strings.Count(heard, ". ")
	if strings.HasSuffix(heard, ".") {
		sentences++
	}
	if played == 0 || sentences < played || sentences > played+1 {
		t.Errorf("heard %d whole sentences of the interrupted reply, but the phone played %d of its marks:\nheard %q", sentences, played, heard)
	}
}
