package silero

import (
	"errors"
	"fmt"
	"time"

	"github.com/handset-voice/handset/internal/audio/vad"
)

// ErrClosed is reported (see Detector.Err) by a detector used after Close.
var ErrClosed = errors.New("silero: detector closed")

// model is the classifier a Detector drives: an ONNX Runtime session in builds with
// BuildTag (tests substitute a scripted one).
type model interface {
	// infer returns the probability that window (Window(rate) samples scaled to [-1, 1))
	// is speech, given the windows inferred before it.
	infer(window []float32) (float32, error)
	// reset forgets the windows before: the recurrent state and the context.
	reset()
	// close frees the model; it is not used afterwards.
	close() error
}

// Detector is Silero VAD behind vad.Detector. Process cuts the samples into the model's
// windows (buffering a partial window until the next call) and, for each window:
//
//   - smooths the model's probability p: s = Smoothing·s + (1-Smoothing)·p;
//   - calls the window speech when s >= Activation, or, once speech has started, when
//     s > Deactivation;
//   - counts consecutive speech windows, and reports SpeechStart when they reach
//     MinSpeech; counts consecutive non-speech windows and reports SpeechEnd when they
//     reach MinSilence.
//
// It does not allocate per frame and is not safe for concurrent use.
type Detector struct {
	cfg        Config
	m          model
	win        []float32 // the window being filled, scaled to [-1, 1)
	filled     int
	minSpeech  int // samples
	minSilence int // samples

	prob       float32 // the model's output for the last window
	smoothed   float64
	raw        bool // the last window's speech decision
	speechRun  int  // samples of consecutive speech windows, up to minSpeech
	silenceRun int  // samples of consecutive non-speech windows
	speaking   bool // the decided state, which may run ahead of inSpeech
	pending    int  // transitions decided but not yet reported
	inSpeech   bool // the last reported transition was SpeechStart
	err        error
}

var _ vad.Detector = (*Detector)(nil)

// New returns a detector for frames at cfg.Rate with its own ONNX Runtime session
// (single-threaded) on cfg.ModelPath. Init must have succeeded first. It fails for a bad
// Config, a model that does not load or does not look like Silero VAD v5, and, in builds
// without BuildTag, with ErrNotLinked.
func New(cfg Config) (*Detector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newModel(cfg)
	if err != nil {
		return nil, err
	}
	return newDetector(cfg, m), nil
}

func newDetector(cfg Config, m model) *Detector {
	window := Window(cfg.Rate)
	// Times are counted in whole windows: MinSpeech of 250 ms is 8 windows of 32 ms.
	perWindow := time.Duration(window) * time.Second / time.Duration(cfg.Rate)
	atLeast := func(d time.Duration) int { return max(1, int((d+perWindow-1)/perWindow)) * window }
	return &Detector{
		cfg:        cfg,
		m:          m,
		win:        make([]float32, window),
		minSpeech:  atLeast(cfg.MinSpeech),
		minSilence: atLeast(cfg.MinSilence),
	}
}

// Config is the configuration in use, defaults filled in.
func (d *Detector) Config() Config { return d.cfg }

// SampleRate is the rate of the frames Process expects, in Hz.
func (d *Detector) SampleRate() int { return d.cfg.Rate }

// InSpeech reports whether the last transition reported was SpeechStart.
func (d *Detector) InSpeech() bool { return d.inSpeech }

// RawSpeech is the last window's speech decision (smoothed probability against the
// thresholds), before MinSpeech and MinSilence. For traces and accuracy tests.
func (d *Detector) RawSpeech() bool { return d.raw }

// Probability is the model's speech probability for the last window, before smoothing.
func (d *Detector) Probability() float32 { return d.prob }

// Lags are how late the detector reports by design: SpeechStart comes MinSpeech after
// the first speech window began, SpeechEnd MinSilence after the last one ended, each
// rounded up to whole windows.
func (d *Detector) Lags() (start, end time.Duration) {
	toDur := func(n int) time.Duration { return time.Duration(n) * time.Second / time.Duration(d.cfg.Rate) }
	return toDur(d.minSpeech), toDur(d.minSilence)
}

// Err is the first failure of the model (or ErrClosed), or nil. After a failure the
// detector classifies nothing more: Process reports the SpeechEnd that closes speech in
// progress, then None.
func (d *Detector) Err() error { return d.err }

// Process classifies the next samples (at SampleRate) and reports a transition, if any.
// It reports at most one per call: when one call's audio holds more (only possible for
// calls longer than MinSpeech or MinSilence) the rest are reported by the following calls.
func (d *Detector) Process(frame []int16) vad.Event {
	for len(frame) > 0 && d.err == nil {
		n := min(len(frame), len(d.win)-d.filled)
		w := d.win[d.filled : d.filled+n]
		for i, s := range frame[:n] {
			w[i] = float32(s) / 32768
		}
		d.filled += n
		frame = frame[n:]
		if d.filled == len(d.win) {
			d.filled = 0
			d.classify()
		}
	}
	if d.pending == 0 {
		return vad.None
	}
	d.pending--
	d.inSpeech = !d.inSpeech
	if d.inSpeech {
		return vad.SpeechStart
	}
	return vad.SpeechEnd
}

// classify runs the model on the full window and advances smoothing and hysteresis.
func (d *Detector) classify() {
	p, err := d.m.infer(d.win)
	if err != nil {
		d.fail(fmt.Errorf("silero: inference: %w", err))
		return
	}
	d.prob = p
	if a := d.cfg.Smoothing; a > 0 {
		d.smoothed = a*d.smoothed + (1-a)*float64(p)
	} else {
		d.smoothed = float64(p)
	}
	d.raw = d.smoothed >= d.cfg.Activation || (d.speaking && d.smoothed > d.cfg.Deactivation)
	window := len(d.win)
	if d.raw {
		d.speechRun = min(d.speechRun+window, d.minSpeech)
		d.silenceRun = 0
		if !d.speaking && d.speechRun >= d.minSpeech {
			d.speaking = true
			d.pending++
		}
		return
	}
	d.silenceRun = min(d.silenceRun+window, d.minSilence)
	d.speechRun = 0
	if d.speaking && d.silenceRun >= d.minSilence {
		d.speaking = false
		d.pending++
	}
}

// fail records the first failure and leaves the detector ending any speech.
func (d *Detector) fail(err error) {
	if d.err != nil {
		return
	}
	d.err = err
	d.raw, d.speaking = false, false
	d.pending = 0
	if d.inSpeech {
		d.pending = 1
	}
}

// Reset returns to silence without reporting SpeechEnd and forgets the audio so far: the
// model's recurrent state and context, the smoothed probability, the buffered partial
// window, the speech and silence counts and any unreported transition, as Patter's
// Silero VAD does at each agent turn (a stale state keeps it in speech through echo).
func (d *Detector) Reset() {
	d.filled = 0
	d.prob, d.smoothed = 0, 0
	d.raw, d.speaking, d.inSpeech = false, false, false
	d.speechRun, d.silenceRun, d.pending = 0, 0, 0
	if d.err == nil {
		d.m.reset()
	}
}

// Close frees the model's session and tensors; the detector reports ErrClosed
// afterwards. Idempotent.
func (d *Detector) Close() error {
	if errors.Is(d.err, ErrClosed) {
		return nil
	}
	d.err = ErrClosed
	d.pending, d.inSpeech, d.speaking = 0, false, false
	return d.m.close()
}
