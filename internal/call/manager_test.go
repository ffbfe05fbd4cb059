package call

import (
	"context"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/voice"
)

// TestDrainBoundsTheGoodbye: a call whose goodbye never plays (its carrier echoes no mark)
// is hung up once Goodbye.Within has passed, and Drain returns.
func TestDrainBoundsTheGoodbye(t *testing.T) {
	m := NewManager(context.Background(), 0)
	clk := clock.NewFake(t0)
	c, err := m.Start(DefaultConfig(), Deps{
		Leg: newTestLeg(clk, playNever), STT: nopProviders{}, TTS: quickTTS{}, Agent: nopProviders{}, Clock: clk,
		NewVAD: func(rate int) (vad.Detector, error) { return vad.NewEnergy(vad.EnergyConfig{Rate: rate}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	over, cancel := context.WithCancel(context.Background())
	cancel() // the drain timeout has run out already
	drained := make(chan struct{})
	start := time.Now()
	go func() { m.Drain(over, Goodbye{Text: "Goodbye.", Within: 200 * time.Millisecond}); close(drained) }()
	select {
	case <-drained:
	case <-time.After(30 * time.Second):
		t.Fatal("Drain did not return: the unplayed goodbye held the call")
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("Drain returned after %v, before the goodbye's %v were up", took, 200*time.Millisecond)
	}
	<-c.Done()
	if c.Reason() != voice.EndShutdown || m.Active() != 0 || !m.Draining() {
		t.Errorf("reason %v, %d active, draining %v", c.Reason(), m.Active(), m.Draining())
	}
	if _, err := m.Start(DefaultConfig(), Deps{}); err != ErrDraining {
		t.Errorf("a call after the drain: %v, want ErrDraining", err)
	}
}

// TestDrainGoodbyeNoVoice: a goodbye no voice can speak ends the call at once, and the call
// still ends as the server's shutdown, not as a TTS failure.
func TestDrainGoodbyeNoVoice(t *testing.T) {
	m := NewManager(context.Background(), 0)
	clk := clock.NewFake(t0)
	c, err := m.Start(DefaultConfig(), Deps{
		Leg: newTestLeg(clk, playNever), STT: nopProviders{}, TTS: nopProviders{}, Agent: nopProviders{}, Clock: clk,
		NewVAD: func(rate int) (vad.Detector, error) { return vad.NewEnergy(vad.EnergyConfig{Rate: rate}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	over, cancel := context.WithCancel(context.Background())
	cancel()
	drained := make(chan struct{})
	go func() { m.Drain(over, Goodbye{Text: "Goodbye.", Within: time.Minute}); close(drained) }()
	select {
	case <-drained:
	case <-time.After(30 * time.Second):
		t.Fatal("Drain waited out the goodbye's minute although no voice could say it")
	}
	<-c.Done()
	if c.Reason() != voice.EndShutdown {
		t.Errorf("reason %v, want shutdown", c.Reason())
	}
}
