package cli

import (
	"context"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/vad/silero"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/obs"
)

// TestRealSpeechThroughEachVAD: recorded human speech (pocketsphinx-testdata), over the
// phone path, through each real detector in the call engine: a turn is endpointed and
// answered, and talking over a long reply interrupts it exactly once.
func TestRealSpeechThroughEachVAD(t *testing.T) {
	recs := vadtest.Recordings(t)
	phone := func(i int) []byte {
		pcm, err := vadtest.Telephone(recs[i].PCM, 16000)
		if err != nil {
			t.Fatal(err)
		}
		return audiotest.Mulaw(pcm)
	}
	engines := []string{"webrtc"}
	if silero.Available() {
		engines = append(engines, "silero")
	}
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			r := startServe(t, []string{"LONG tell me about the menu", "stop there"},
				"HANDSET_VAD="+engine, "HANDSET_ENGINES_DIR="+repoEngines(t))
			ctx := context.Background()
			c := r.dial(ctx)
			waitMark(ctx, t, c, "t0-end")
			if err := c.SayAndWait(ctx, phone(0)); err != nil {
				t.Fatal(err)
			}
			waitMark(ctx, t, c, "t1-s2")
			if err := c.SayAndWait(ctx, phone(1)); err != nil {
				t.Fatal(err)
			}
			waitMark(ctx, t, c, "t2-end")
			_ = c.Hangup()
			<-c.Done()
			if n := c.Clears(); n != 1 {
				t.Errorf("clears = %d, want 1", n)
			}
			events := r.journal()
			starts, ends := eventsOf(events, obs.VADSpeechStart), eventsOf(events, obs.VADSpeechEnd)
			if len(starts) < 2 || len(ends) < 1 {
				t.Errorf("the %s VAD saw %d starts and %d ends of two utterances", engine, len(starts), len(ends))
			}
			if bi := eventsOf(events, obs.BargeIn); len(bi) != 1 || bi[0].Turn != 1 {
				t.Errorf("barge-ins %+v, want one on turn 1", bi)
			}
			t.Logf("%s: %d speech starts, %d ends; response times %v", engine, len(starts), len(ends), responseTimes(events))
		})
	}
}

func responseTimes(events []obs.Event) []time.Duration {
	var out []time.Duration
	for _, tr := range obs.Turns(events) {
		out = append(out, time.Duration(tr.ResponseMS*float64(time.Millisecond)).Round(100*time.Microsecond))
	}
	return out
}
