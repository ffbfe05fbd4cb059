package silero

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/handset-voice/handset/internal/audio/vad"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scripted is a model whose probabilities are given per window; past the script it
// repeats the last value.
type scripted struct {
	probs   []float32
	n       int       // windows inferred
	first   []float32 // a copy of the first window it saw
	resets  int
	closed  int
	failAt  int // window number (1-based) that fails; 0 never
	lastLen int
}

func (s *scripted) infer(w []float32) (float32, error) {
	s.n++
	s.lastLen = len(w)
	if s.first == nil {
		s.first = append([]float32(nil), w...)
	}
	if s.failAt == s.n {
		return 0, errors.New("scripted failure")
	}
	if len(s.probs) == 0 {
		return 0, nil
	}
	return s.probs[min(s.n, len(s.probs))-1], nil
}
func (s *scripted) reset()       { s.resets++ }
func (s *scripted) close() error { s.closed++; return nil }

func fakeDetector(t *testing.T, cfg Config, m *scripted) *Detector {
	t.Helper()
	cfg.ModelPath = "fake.onnx"
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return newDetector(cfg, m)
}

// repeat is n windows of probability p.
func repeat(p float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = p
	}
	return out
}

func concat(parts ...[]float32) []float32 {
	var out []float32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

type hit struct {
	ev     vad.Event
	window int // windows inferred when it was reported
}

// windows feeds n windows of samples in 20 ms frames and lists the events.
func windows(d *Detector, m *scripted, n int) []hit {
	frame := d.SampleRate() / 50
	var hits []hit
	for m.n < n {
		if ev := d.Process(make([]int16, frame)); ev != vad.None {
			hits = append(hits, hit{ev, m.n})
		}
	}
	return hits
}

func TestConfigDefaultsAndErrors(t *testing.T) {
	cfg, err := Config{ModelPath: "m.onnx", Rate: 16000}.withDefaults()
	want := Config{ModelPath: "m.onnx", Rate: 16000, Activation: 0.5, Deactivation: 0.35,
		MinSpeech: 250 * time.Millisecond, MinSilence: 400 * time.Millisecond, Smoothing: 0.35}
	if err != nil || math.Abs(cfg.Deactivation-0.35) > 1e-9 {
		t.Fatalf("defaults: %+v, %v", cfg, err)
	}
	cfg.Deactivation = 0.35
	if cfg != want {
		t.Errorf("defaults = %+v, want %+v", cfg, want)
	}
	phone, _ := Config{ModelPath: "m", Rate: 8000, Activation: 0.8}.withDefaults()
	low, _ := Config{ModelPath: "m", Rate: 8000, Activation: 0.2}.withDefaults()
	if math.Abs(phone.Deactivation-0.65) > 1e-9 || math.Abs(low.Deactivation-0.1) > 1e-9 {
		t.Errorf("Deactivation for Activation 0.8 = %g (want 0.65), for 0.2 = %g (want 0.1)", phone.Deactivation, low.Deactivation)
	}
	if off, _ := (Config{ModelPath: "m", Rate: 8000, Smoothing: -1}).withDefaults(); off.Smoothing >= 0 {
		t.Errorf("negative Smoothing became %g", off.Smoothing)
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Rate: 16000}, "ModelPath"},
		{Config{ModelPath: "m", Rate: 44100}, "44100"},
		{Config{ModelPath: "m", Rate: 8000, Activation: 1.2}, "Activation 1.2"},
		{Config{ModelPath: "m", Rate: 8000, Activation: 0.5, Deactivation: 0.6}, "Deactivation 0.6"},
		{Config{ModelPath: "m", Rate: 8000, MinSilence: -time.Second}, "negative"},
		{Config{ModelPath: "m", Rate: 8000, Smoothing: 1}, "Smoothing 1"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	if Window(16000) != 512 || Window(8000) != 256 || contextLen(16000) != 64 || contextLen(8000) != 32 {
		t.Errorf("windows %d/%d, context %d/%d; want 512/256 and 64/32",
			Window(16000), Window(8000), contextLen(16000), contextLen(8000))
	}
}

func TestStartAfterMinSpeechEndAfterMinSilence(t *testing.T) {
	for _, rate := range []int{8000, 16000} {
		// 250 ms is 8 windows of 32 ms, 400 ms is 13.
		m := &scripted{probs: concat(repeat(0, 10), repeat(0.9, 30), repeat(0.1, 40))}
		d := fakeDetector(t, Config{Rate: rate}, m)
		hits := windows(d, m, 80)
		// Smoothing: 0.9 after 0 gives 0.585 on the first speech window, so the first is
		// already speech; 0.1 after 0.9 gives 0.38, still above Deactivation 0.35, so
		// silence starts one window late.
		want := []hit{{vad.SpeechStart, 10 + 8}, {vad.SpeechEnd, 40 + 1 + 13}}
		if len(hits) != 2 || hits[0] != want[0] || hits[1] != want[1] {
			t.Errorf("%d Hz: events %v, want %v", rate, hits, want)
		}
		if m.lastLen != Window(rate) {
			t.Errorf("%d Hz: model got windows of %d samples", rate, m.lastLen)
		}
	}
}

func TestSmoothingAndThresholds(t *testing.T) {
	// A single loud window among quiet ones: smoothed 0.65·0.7 = 0.455 < 0.5, not speech.
	m := &scripted{probs: concat(repeat(0, 5), []float32{0.7}, repeat(0, 5))}
	d := fakeDetector(t, Config{Rate: 16000, MinSpeech: time.Millisecond}, m)
	for m.n < 11 {
		if d.Process(make([]int16, 320)) != vad.None || d.RawSpeech() {
			t.Fatalf("window %d: a smoothed-away blip counted as speech", m.n)
		}
	}
	// Without smoothing the same blip is speech (MinSpeech of one window starts at once).
	m = &scripted{probs: concat(repeat(0, 5), []float32{0.7}, repeat(0, 5))}
	d = fakeDetector(t, Config{Rate: 16000, MinSpeech: time.Millisecond, Smoothing: -1}, m)
	if hits := windows(d, m, 11); len(hits) != 1 || hits[0] != (hit{vad.SpeechStart, 6}) {
		t.Errorf("unsmoothed blip: events %v, want a start at window 6", hits)
	}
	// Between the thresholds: 0.4 keeps speech going once started but never starts it.
	m = &scripted{probs: concat(repeat(0.4, 20), repeat(0.9, 10), repeat(0.4, 30))}
	d = fakeDetector(t, Config{Rate: 16000, Smoothing: -1}, m)
	hits := windows(d, m, 60)
	if len(hits) != 1 || hits[0] != (hit{vad.SpeechStart, 28}) {
		t.Errorf("hysteresis: events %v, want only a start at window 28", hits)
	}
	if d.Probability() != 0.4 {
		t.Errorf("Probability = %v, want the model's 0.4", d.Probability())
	}
}

func TestShortBurstsAndPausesDoNotToggle(t *testing.T) {
	// 7 speech windows (224 ms) is short of MinSpeech; a 12-window pause (384 ms) short of
	// MinSilence.
	m := &scripted{probs: concat(repeat(1, 7), repeat(0, 20), repeat(1, 20), repeat(0, 12), repeat(1, 20), repeat(0, 20))}
	d := fakeDetector(t, Config{Rate: 16000, Smoothing: -1}, m)
	hits := windows(d, m, 99)
	want := []hit{{vad.SpeechStart, 27 + 8}, {vad.SpeechEnd, 79 + 13}}
	if len(hits) != 2 || hits[0] != want[0] || hits[1] != want[1] {
		t.Errorf("events %v, want %v", hits, want)
	}
}

func TestPartialWindowsAreBufferedAndScaled(t *testing.T) {
	m := &scripted{}
	d := fakeDetector(t, Config{Rate: 16000}, m)
	pcm := make([]int16, 512)
	for i := range pcm {
		pcm[i] = int16(i*64 - 16384)
	}
	pcm[0], pcm[1] = math.MinInt16, math.MaxInt16
	for _, n := range []int{1, 100, 300} { // 401 samples: no window yet
		d.Process(pcm[:n])
		pcm = pcm[n:]
	}
	if m.n != 0 {
		t.Fatalf("%d windows inferred from 401 samples", m.n)
	}
	d.Process(pcm) // the remaining 111 complete the window
	if m.n != 1 {
		t.Fatalf("%d windows after 512 samples, want 1", m.n)
	}
	if m.first[0] != -1 || m.first[1] != 32767.0/32768 || m.first[511] != float32(511*64-16384)/32768 {
		t.Errorf("window scaled to %v, %v ... %v", m.first[0], m.first[1], m.first[511])
	}
}

func TestOneLongCallQueuesEvents(t *testing.T) {
	m := &scripted{probs: concat(repeat(0, 5), repeat(1, 20), repeat(0, 20), repeat(1, 20), repeat(0, 20))}
	d := fakeDetector(t, Config{Rate: 8000, Smoothing: -1}, m)
	var got []vad.Event
	for ev := d.Process(make([]int16, 85*256)); ev != vad.None; ev = d.Process(nil) {
		got = append(got, ev)
		if d.InSpeech() != (ev == vad.SpeechStart) {
			t.Fatalf("InSpeech %v after %v", d.InSpeech(), ev)
		}
	}
	want := []vad.Event{vad.SpeechStart, vad.SpeechEnd, vad.SpeechStart, vad.SpeechEnd}
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
}

func TestResetForgetsEverything(t *testing.T) {
	m := &scripted{probs: repeat(1, 200)}
	d := fakeDetector(t, Config{Rate: 16000}, m)
	if hits := windows(d, m, 10); len(hits) != 1 || !d.InSpeech() {
		t.Fatalf("events %v, want a start", hits)
	}
	d.Process(make([]int16, 100)) // a partial window, dropped by Reset
	d.Reset()
	if d.InSpeech() || d.RawSpeech() || m.resets != 1 {
		t.Fatalf("after Reset: InSpeech %v, RawSpeech %v, model resets %d", d.InSpeech(), d.RawSpeech(), m.resets)
	}
	// Ongoing speech must start afresh: MinSpeech of windows after the Reset, counted
	// from a whole new window (the partial one was dropped).
	n0 := m.n
	hits := windows(d, m, n0+10)
	if len(hits) != 1 || hits[0] != (hit{vad.SpeechStart, n0 + 8}) {
		t.Errorf("after Reset: events %v, want a start %d windows on", hits, 8)
	}
}

func TestModelFailureEndsSpeechOnce(t *testing.T) {
	m := &scripted{probs: repeat(1, 100), failAt: 20}
	d := fakeDetector(t, Config{Rate: 16000}, m)
	hits := windows(d, m, 20)
	if len(hits) != 2 || hits[0].ev != vad.SpeechStart || hits[1] != (hit{vad.SpeechEnd, 20}) {
		t.Errorf("events %v, want a start, then an end on the failing window", hits)
	}
	if ev := d.Process(make([]int16, 2048)); ev != vad.None || d.InSpeech() || m.n != 20 {
		t.Errorf("after the failure: %v, InSpeech %v, %d windows; want nothing more", ev, d.InSpeech(), m.n)
	}
	if d.Err() == nil || !strings.Contains(d.Err().Error(), "scripted failure") {
		t.Errorf("Err = %v", d.Err())
	}
	if err := d.Close(); err != nil || m.closed != 1 {
		t.Errorf("Close after a failure: %v, model closed %d times", err, m.closed)
	}
}

func TestClose(t *testing.T) {
	m := &scripted{probs: repeat(1, 100)}
	d := fakeDetector(t, Config{Rate: 16000}, m)
	windows(d, m, 10)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil || m.closed != 1 {
		t.Errorf("second Close: %v, model closed %d times", err, m.closed)
	}
	if ev := d.Process(make([]int16, 4096)); ev != vad.None || !errors.Is(d.Err(), ErrClosed) || d.InSpeech() {
		t.Errorf("after Close: %v, Err %v, InSpeech %v", ev, d.Err(), d.InSpeech())
	}
	d.Reset() // must not touch the closed model
	if m.resets != 0 {
		t.Error("Reset after Close reset the model")
	}
}

func TestLags(t *testing.T) {
	d := fakeDetector(t, Config{Rate: 8000}, &scripted{})
	start, end := d.Lags()
	if start != 256*time.Millisecond || end != 416*time.Millisecond {
		t.Errorf("Lags = %v, %v; want 256 ms (8 windows) and 416 ms (13)", start, end)
	}
}

func BenchmarkProcessLogic20ms(b *testing.B) {
	m := &scripted{probs: concat(repeat(0, 50), repeat(1, 50))}
	cfg, _ := Config{ModelPath: "fake", Rate: 16000}.withDefaults()
	d := newDetector(cfg, m)
	frame := make([]int16, 320)
	b.ReportAllocs()
	for range b.N {
		if m.n > 90 {
			m.n = 0
		}
		d.Process(frame)
	}
}
