package call

import (
	"testing"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/voice"
)

// A leg with a send clock of its own gets the call's goroutine lent to it each time the
// call takes the caller's audio: on a busy core that keeps its packets on time.
func TestTheCallLendsItsTimeToTheLegsSendClock(t *testing.T) {
	clk := clock.NewFake(t0)
	leg := &clockedLeg{testLeg: newTestLeg(clk, playAtOnce)}
	r := startRig(t, clk, testConfig(), Deps{Leg: leg, STT: &scriptedSTT{results: make(chan voice.Transcript)},
		TTS: quickTTS{}, Agent: newPushAgent()})
	before := leg.kept.Load()
	for range 10 {
		r.frame(quietFrame)
	}
	r.until("the leg's clock is lent the call's time", false, func() bool { return leg.kept.Load() >= before+10 })
}
