package vad

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
)

type hit struct {
	ev    Event
	frame int // index of the 20 ms frame that reported it
}

func newEnergy(t testing.TB, cfg EnergyConfig) *Energy {
	t.Helper()
	e, err := NewEnergy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// run feeds pcm to d in 20 ms frames and returns every event with its frame index.
func run(d Detector, pcm []int16) []hit {
	frame := d.SampleRate() / 50
	var hits []hit
	for i := 0; i+frame <= len(pcm); i += frame {
		if ev := d.Process(pcm[i : i+frame]); ev != None {
			hits = append(hits, hit{ev, i / frame})
		}
	}
	return hits
}

// vowel is a steady voiced sound (a 150 Hz fundamental and harmonics shaped like an "ah")
// with an abrupt onset, so detection latency can be measured exactly; its RMS is dbfs.
func vowel(rate int, d time.Duration, dbfs float64) []int16 {
	parts := [][]int16{}
	for k, a := range []float64{0.5, 0.7, 1, 0.9, 0.8, 0.4, 0.25, 0.15} {
		parts = append(parts, audiotest.Tone(rate, 150*float64(k+1), d, a*0.1))
	}
	sum := parts[0]
	for _, p := range parts[1:] {
		sum = audiotest.Mix(sum, p)
	}
	return scaleTo(sum, dbfs)
}

func scaleTo(pcm []int16, dbfs float64) []int16 {
	g := math.Pow(10, (dbfs-audiotest.RMSDBFS(pcm))/20)
	out := make([]int16, len(pcm))
	for i, s := range pcm {
		out[i] = int16(math.Max(-32768, math.Min(32767, math.Round(float64(s)*g))))
	}
	return out
}

func TestEventString(t *testing.T) {
	for ev, want := range map[Event]string{None: "none", SpeechStart: "speech_start", SpeechEnd: "speech_end", 7: "event(7)"} {
		if got := ev.String(); got != want {
			t.Errorf("Event(%d).String() = %q, want %q", ev, got, want)
		}
	}
}

func TestNewEnergyDefaultsAndErrors(t *testing.T) {
	e := newEnergy(t, EnergyConfig{Rate: 16000})
	want := EnergyConfig{Rate: 16000, StartAfter: DefaultStartAfter, EndAfter: DefaultEndAfter,
		ThresholdDB: DefaultThresholdDB, MinLevelDBFS: DefaultMinLevelDBFS}
	if e.Config() != want || e.SampleRate() != 16000 {
		t.Errorf("Config() = %+v, want %+v", e.Config(), want)
	}
	if _, err := NewEnergy(EnergyConfig{}); err == nil || !strings.Contains(err.Error(), "rate 0") {
		t.Errorf("missing rate: err = %v, want one naming rate 0", err)
	}
	if _, err := NewEnergy(EnergyConfig{Rate: 8000, EndAfter: -time.Second}); err == nil {
		t.Error("negative EndAfter accepted")
	}
}

func TestSilenceNeverTriggers(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		for name, pcm := range map[string][]int16{
			"digital silence":      audiotest.Silence(rate, time.Minute),
			"line noise -70 dBFS":  audiotest.WhiteNoise(rate, time.Minute, -70, 1),
			"quiet noise -50 dBFS": audiotest.WhiteNoise(rate, time.Minute, -50, 2),
		} {
			e := newEnergy(t, EnergyConfig{Rate: rate})
			if hits := run(e, pcm); len(hits) != 0 || e.InSpeech() {
				t.Errorf("%d Hz %s: events %v", rate, name, hits)
			}
		}
	}
}

func TestBurstStartAndEndTiming(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		e := newEnergy(t, EnergyConfig{Rate: rate})
		cfg := e.Config()
		startFrames := int(cfg.StartAfter / (20 * time.Millisecond))
		endFrames := int(cfg.EndAfter / (20 * time.Millisecond))
		pcm := audiotest.Concat(
			audiotest.WhiteNoise(rate, time.Second, -60, 1),
			vowel(rate, 1200*time.Millisecond, -20),
			audiotest.WhiteNoise(rate, 2*time.Second, -60, 2),
		)
		hits := run(e, pcm)
		const onset, stop = 50, 110 // frame indices of the burst's first and first-after
		if len(hits) != 2 || hits[0].ev != SpeechStart || hits[1].ev != SpeechEnd {
			t.Fatalf("%d Hz: events %v, want one start and one end", rate, hits)
		}
		// The start comes on the burst's startFrames-th frame: within StartAfter + 1 frame.
		if got := hits[0].frame - onset + 1; got < startFrames || got > startFrames+1 {
			t.Errorf("%d Hz: SpeechStart after %d frames of speech, want %d", rate, got, startFrames)
		}
		if got := hits[1].frame - stop + 1; got < endFrames || got > endFrames+1 {
			t.Errorf("%d Hz: SpeechEnd after %d frames of quiet, want %d", rate, got, endFrames)
		}
	}
}

func TestShortPauseDoesNotEndSpeech(t *testing.T) {
	e := newEnergy(t, EnergyConfig{Rate: 8000})
	pcm := audiotest.Concat(
		audiotest.WhiteNoise(8000, time.Second, -60, 1),
		vowel(8000, 500*time.Millisecond, -20),
		audiotest.WhiteNoise(8000, 400*time.Millisecond, -60, 2), // < EndAfter
		vowel(8000, 500*time.Millisecond, -20),
		audiotest.WhiteNoise(8000, time.Second, -60, 3),
	)
	hits := run(e, pcm)
	if len(hits) != 2 || hits[0].ev != SpeechStart || hits[1].ev != SpeechEnd {
		t.Errorf("events %v, want one start and one end across the pause", hits)
	}
}

func TestConstantNoiseStopsTriggeringAfterAdaptation(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		for _, lead := range []time.Duration{0, time.Second} {
			// The line may open with digital silence, which makes the detector assume a
			// quiet line, so the noise can trigger once before the floor adapts.
			e := newEnergy(t, EnergyConfig{Rate: rate})
			run(e, audiotest.Silence(rate, lead))
			early := run(e, audiotest.WhiteNoise(rate, 5*time.Second, -40, 3))
			late := run(e, audiotest.WhiteNoise(rate, time.Minute, -40, 4))
			if len(late) != 0 || e.InSpeech() {
				t.Errorf("%d Hz, %v of silence first: -40 dBFS noise still triggers after 5 s: %v", rate, lead, late)
			}
			if lead == 0 && len(early) != 0 {
				t.Errorf("%d Hz: noise from the first frame triggered: %v", rate, early)
			}
			if f := e.NoiseFloorDBFS(); math.Abs(f+40) > 3 {
				t.Errorf("%d Hz: noise floor %.1f dBFS, want about -40", rate, f)
			}
		}
	}
}

func TestBurstsTenDBAboveNoiseAreDetected(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		for name, burst := range map[string][]int16{
			"vowel":       vowel(rate, time.Second, -30),
			"speech-like": scaleTo(audiotest.SpeechLike(rate, 1500*time.Millisecond, 5), -30),
		} {
			e := newEnergy(t, EnergyConfig{Rate: rate})
			noise := audiotest.WhiteNoise(rate, 10*time.Second, -40, 6)
			pcm := audiotest.Concat(noise[:3*rate], audiotest.Mix(burst, noise[3*rate:]), noise[3*rate+len(burst):])
			hits := run(e, pcm)
			if len(hits) < 2 || hits[0].ev != SpeechStart || hits[len(hits)-1].ev != SpeechEnd {
				t.Errorf("%d Hz %s: events %v, want the burst found and ended", rate, name, hits)
				continue
			}
			if s := hits[0].frame; s < 150 || s > 150+len(burst)/(rate/50) {
				t.Errorf("%d Hz %s: SpeechStart at frame %d, outside the burst", rate, name, s)
			}
		}
	}
}

func TestResetReturnsToSilence(t *testing.T) {
	e := newEnergy(t, EnergyConfig{Rate: 8000})
	run(e, audiotest.WhiteNoise(8000, time.Second, -60, 1))
	v := vowel(8000, 2*time.Second, -20)
	if hits := run(e, v[:8000/2]); len(hits) != 1 || !e.InSpeech() {
		t.Fatalf("events %v before Reset, want SpeechStart", hits)
	}
	e.Reset()
	if e.InSpeech() {
		t.Fatal("InSpeech after Reset")
	}
	// Speech still going on must be detected afresh, StartAfter later.
	hits := run(e, v[8000/2:])
	if len(hits) == 0 || hits[0].ev != SpeechStart || hits[0].frame != 4 {
		t.Errorf("events after Reset %v, want SpeechStart at frame 4", hits)
	}
	// Reset keeps the noise floor: quiet noise after it does not trigger.
	e.Reset()
	if hits := run(e, audiotest.WhiteNoise(8000, 3*time.Second, -60, 2)); len(hits) != 0 {
		t.Errorf("noise after Reset triggered %v", hits)
	}
}

func TestAnyFrameLength(t *testing.T) {
	// Frames of 7 ms and 33 ms must give the same decisions in time as 20 ms frames.
	pcm := audiotest.Concat(audiotest.WhiteNoise(16000, time.Second, -60, 1),
		vowel(16000, time.Second, -20), audiotest.WhiteNoise(16000, time.Second, -60, 2))
	for _, ms := range []int{7, 33, 20} {
		e := newEnergy(t, EnergyConfig{Rate: 16000})
		n := 16 * ms
		var at []int // sample offsets of events
		for i := 0; i+n <= len(pcm); i += n {
			if ev := e.Process(pcm[i : i+n]); ev != None {
				at = append(at, i+n)
			}
		}
		if e.Process(nil) != None {
			t.Error("empty frame reported an event")
		}
		if len(at) != 2 {
			t.Fatalf("%d ms frames: %d events, want 2", ms, len(at))
		}
		// Burst onset + StartAfter and burst end + EndAfter, give or take the frame that
		// straddles each edge and the rounding up to a frame boundary.
		start, end := 16000+1600, 32000+8000
		if at[0] < start-n || at[0] > start+n || at[1] < end || at[1] > end+2*n {
			t.Errorf("%d ms frames: events at samples %v, want about %d and %d", ms, at, start, end)
		}
	}
}

func BenchmarkEnergy20ms(b *testing.B) {
	for _, rate := range []int{8000, 16000} {
		b.Run(map[int]string{8000: "8k", 16000: "16k"}[rate], func(b *testing.B) {
			e := newEnergy(b, EnergyConfig{Rate: rate})
			pcm := audiotest.Mix(audiotest.SpeechLike(rate, 2*time.Second, 1), audiotest.WhiteNoise(rate, 2*time.Second, -40, 2))
			frame := rate / 50
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				e.Process(pcm[i : i+frame])
				i = (i + frame) % (len(pcm) - frame)
			}
		})
	}
}
