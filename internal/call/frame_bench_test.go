package call

import (
	"context"
	"io"
	"testing"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/voice"
)

type nopStream struct{ n int }

func (s *nopStream) Write(b []byte) error             { s.n += len(b); return nil }
func (s *nopStream) Finalize() error                  { return nil }
func (s *nopStream) Results() <-chan voice.Transcript { return nil }
func (s *nopStream) Close() error                     { return nil }

type nopProviders struct{}

func (nopProviders) Name() string { return "nop" }
func (nopProviders) Stream(context.Context, audio.Format, voice.StreamOptions) (voice.RecognizerStream, error) {
	return &nopStream{}, nil
}
func (nopProviders) Synthesize(context.Context, string, audio.Format) (io.ReadCloser, error) {
	return nil, io.EOF
}
func (nopProviders) Reply(context.Context, voice.TurnRequest) (voice.ReplyStream, error) {
	return nil, io.EOF
}

// BenchmarkInboundFrame is the engine's work for one 20 ms caller frame: mu-law decode, VAD,
// hand-off to STT (or the rescue ring while the agent speaks).
func BenchmarkInboundFrame(b *testing.B) {
	clk := clock.NewFake(t0)
	c := New(context.Background(), DefaultConfig(), Deps{
		Leg: &recLeg{clk: clk}, STT: nopProviders{}, TTS: nopProviders{}, Agent: nopProviders{}, Clock: clk,
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
