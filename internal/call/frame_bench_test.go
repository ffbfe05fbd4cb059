package call

import (
	"context"
	"testing"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/clock"
)

// BenchmarkInboundFrame is the engine's work for one 20 ms caller frame: mu-law decode, VAD,
// hand-off to STT (or the rescue ring while the agent speaks).
func BenchmarkInboundFrame(b *testing.B) {
	clk := clock.NewFake(t0)
	c := New(context.Background(), DefaultConfig(), Deps{
		Leg: newTestLeg(clk, playNever), STT: nopProviders{}, TTS: nopProviders{}, Agent: nopProviders{}, Clock: clk,
		NewVAD: func(rate int) (vad.Detector, error) { return vad.NewEnergy(vad.EnergyConfig{Rate: rate}) },
	})
	defer c.cancel()
	c.vad = c.newVAD()
	c.stt = &nopStream{}
	speech := audiotest.Mulaw(audiotest.SpeechLike(8000, 2000*audio.FrameDuration/20, 1))
	frames := len(speech) / 160
	b.ReportAllocs()
	b.SetBytes(160)
	i := 0
	for b.Loop() {
		f := speech[(i%frames)*160 : (i%frames+1)*160]
		c.inbound.Push(f)
		c.drainInbound()
		i++
	}
}
