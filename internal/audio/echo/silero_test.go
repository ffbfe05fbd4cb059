//go:build embedded

package echo_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/vad/silero"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
)

// TestSileroOverASettlingTalkspurt: a quiet caller (recorded speech at -34 dBFS) talks over
// a sentence that followed a pause and plays 60 ms later than the one before, from its
// first frame to 1.5 s into it, over a 6, 12 and 20 dB echo after 60 to 400 ms, with the
// fake TTS's tone words and a speech-like voice as the agent, into Silero as Handset
// configures it. The agent never sets Silero off on its own echo, and the caller is always
// heard, within a second (the level matrix's bound for the quiet caller over echo; the
// table it logs is the measurement docs/turn-taking.md reports).
func TestSileroOverASettlingTalkspurt(t *testing.T) {
	lib := vadtest.EngineFile(t, "libonnxruntime.so")
	model := vadtest.EngineFile(t, "silero_vad_v5.onnx")
	if err := silero.Init(lib); err != nil {
		t.Fatal(err)
	}
	recs := vadtest.Recordings(t)
	rec, err := vadtest.Telephone(recs[0].PCM, vadtest.SpeechRate)
	if err != nil {
		t.Fatal(err)
	}
	caller := audiotest.AtActiveLevel(rec, rate, audiotest.QuietCallerDBFS)
	for i := 0; i+160 <= len(caller); i += 160 { // from the onset
		if audiotest.RMSDBFS(caller[i:i+160]) > -50 {
			caller = caller[i:]
			break
		}
	}
	voices := []struct {
		name  string
		voice func(time.Duration, int64) []int16
	}{
		{"tone words", func(d time.Duration, _ int64) []int16 { return toneWords(int(d * rate / time.Second)) }},
		{"speech-like", func(d time.Duration, seed int64) []int16 {
			return audiotest.AtPeakFrame(audiotest.SpeechLike(rate, d, seed), rate, audiotest.TTSPeakFrameDBFS)
		}},
	}
	var worst time.Duration
	for _, v := range voices {
		for _, loss := range []float64{6, 12, 20} {
			for _, delay := range []time.Duration{60 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
				row := fmt.Sprintf("%s, loss %v dB, delay %v:", v.name, loss, delay)
				for _, into := range []int{0, 50, 150, 300, 500, 800, 1500} {
					spurts := []talkspurt{
						{at: 200 * time.Millisecond, audio: v.voice(2*time.Second, 1)},
						{at: 4 * time.Second, audio: v.voice(2*time.Second, 2)},
						{at: 6050 * time.Millisecond, audio: v.voice(3*time.Second, 3), late: 60 * time.Millisecond},
					}
					callerAt := 6050*time.Millisecond + delay + 60*time.Millisecond + ms(into)
					d, err := silero.New(silero.Config{ModelPath: model, Rate: rate, MinSpeech: 100 * time.Millisecond, MinSilence: 500 * time.Millisecond})
					if err != nil {
						t.Fatal(err)
					}
					starts, l := runSpurts(spurts, loss, delay, caller, callerAt, d)
					if err := d.Close(); err != nil {
						t.Fatal(err)
					}
					heard := time.Duration(-1)
					for _, s := range starts {
						if s < callerAt {
							t.Errorf("%s caller %dms into the sentence: Silero started at %v on the agent's own echo (path %+v)", row, into, s, l.Estimate())
						} else if heard < 0 {
							heard = s - callerAt
						}
					}
					if heard < 0 || heard > time.Second {
						t.Errorf("%s caller %dms into the sentence: heard after %v, want within 1s (path %+v)", row, into, heard, l.Estimate())
					}
					worst = max(worst, heard)
					row += fmt.Sprintf(" %dms", heard.Milliseconds())
				}
				t.Log(row)
			}
		}
	}
	t.Logf("the caller 0, 50, 150, 300, 500, 800 and 1500 ms into the sentence; heard after %v at worst", worst)
}
