package call

import (
	"context"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

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

// dyingSTT opens streams that end at once, as a recognizer with a revoked key might.
type dyingSTT struct {
	nopProviders
	mu    sync.Mutex
	opens int
}

func (d *dyingSTT) opensSeen() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.opens
}

func (d *dyingSTT) Stream(context.Context, audio.Format, voice.StreamOptions) (voice.RecognizerStream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.opens++
	ch := make(chan voice.Transcript)
	close(ch)
	return &closedStream{ch: ch}, nil
}

type closedStream struct {
	nopStream
	ch chan voice.Transcript
}

func (s *closedStream) Results() <-chan voice.Transcript { return s.ch }

func TestSTTThatKeepsDyingIsReopenedABoundedNumberOfTimes(t *testing.T) {
	clk := clock.NewFake(t0)
	stt := &dyingSTT{}
	c := New(context.Background(), DefaultConfig(), Deps{
		Leg: &recLeg{clk: clk}, STT: stt, TTS: nopProviders{}, Agent: nopProviders{}, Clock: clk,
		NewVAD: func(rate int) (vad.Detector, error) { return vad.NewEnergy(vad.EnergyConfig{Rate: rate}) },
	})
	done := make(chan struct{})
	go func() { c.Run(); close(done) }()
	deadline := time.Now().Add(30 * time.Second) // a safety net: the loop ends on the opens
	for stt.opensSeen() < maxSTTOpens && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	c.Hangup()
	<-done
	if stt.opens != maxSTTOpens {
		t.Errorf("opened %d streams, want %d", stt.opens, maxSTTOpens)
	}
}
