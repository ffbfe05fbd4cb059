package call

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/recording"
)

// legFrameCall is a call ready to take caller frames the way its leg delivers them, with
// rec recording it (nil: not recorded), and the frames of 2 s of speech-like audio.
func legFrameCall(tb testing.TB, rec Recorder) (*Call, *clock.Fake, [][]byte) {
	clk := clock.NewFake(t0)
	c := New(context.Background(), DefaultConfig(), Deps{
		Leg: newTestLeg(clk, playNever), STT: nopProviders{}, TTS: nopProviders{}, Agent: nopProviders{}, Clock: clk,
		NewVAD:   func(rate int) (vad.Detector, error) { return vad.NewEnergy(vad.EnergyConfig{Rate: rate}) },
		Recorder: rec,
	})
	tb.Cleanup(c.cancel)
	c.vad = c.newVAD()
	c.stt = &nopStream{}
	if rec != nil {
		rec.Start(clk.Now())
		tb.Cleanup(func() { _ = rec.Close(clk.Now()) })
	}
	speech := audiotest.Mulaw(audiotest.SpeechLike(8000, 2000*audio.FrameDuration/20, 1))
	var frames [][]byte
	for i := 0; i+160 <= len(speech); i += 160 {
		frames = append(frames, speech[i:i+160])
	}
	return c, clk, frames
}

func newRecorder(tb testing.TB) *recording.Recorder {
	rec, err := recording.New(recording.Options{Path: filepath.Join(tb.TempDir(), recording.FileName), Format: audio.Telephone})
	if err != nil {
		tb.Fatal(err)
	}
	return rec
}

// BenchmarkLegFrame is BenchmarkInboundFrame from the leg's side (the sink, then the
// owner's drain), with and without a recorder: what recording adds to a caller frame.
func BenchmarkLegFrame(b *testing.B) {
	for _, recorded := range []bool{false, true} {
		name := "plain"
		var rec Recorder
		if recorded {
			name, rec = "recorded", newRecorder(b)
		}
		b.Run(name, func(b *testing.B) {
			c, _, frames := legFrameCall(b, rec)
			sink := legSink{c}
			b.ReportAllocs()
			b.SetBytes(160)
			i := 0
			for b.Loop() { // the clock stands: caller frames are placed back to back all the same
				sink.Audio(frames[i%len(frames)])
				c.drainInbound()
				i++
			}
		})
	}
}

func TestRecordingACallerFrameDoesNotAllocate(t *testing.T) {
	c, clk, frames := legFrameCall(t, newRecorder(t))
	sink := legSink{c}
	i := 0
	allocs := testing.AllocsPerRun(500, func() {
		clk.Advance(audio.FrameDuration)
		sink.Audio(frames[i%len(frames)])
		c.drainInbound()
		i++
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations a recorded caller frame, want 0", allocs)
	}
}
