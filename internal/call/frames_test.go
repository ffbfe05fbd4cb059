package call

import (
	"time"

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

// A leg with a send clock of its own is filled further ahead: its queue is the only
// buffer before the wire, so a playout that wakes up late must not leave it dry. A
// carrier's WebSocket leg keeps the short lead.
func TestAClockedLegIsFilledFurtherAhead(t *testing.T) {
	cfg := testConfig()
	for _, c := range []struct {
		name    string
		clocked bool
		want    time.Duration
	}{
		{"clocked", true, cfg.ClockedLead},
		{"plain", false, cfg.PlayoutLead},
	} {
		clk := clock.NewFake(t0)
		var leg voice.Leg = newTestLeg(clk, playAtOnce)
		if c.clocked {
			leg = &clockedLeg{testLeg: leg.(*testLeg)}
		}
		r := startRig(t, clk, cfg, Deps{Leg: leg, STT: &scriptedSTT{results: make(chan voice.Transcript)},
			TTS: quickTTS{}, Agent: newPushAgent()})
		if got := r.c.playout.lead; got != c.want {
			t.Errorf("%s leg: playout lead %v, want %v", c.name, got, c.want)
		}
	}
	if cfg.ClockedLead <= cfg.PlayoutLead {
		t.Errorf("the clocked lead %v is not deeper than the playout's %v", cfg.ClockedLead, cfg.PlayoutLead)
	}
}
