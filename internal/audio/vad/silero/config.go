package silero

import (
	"errors"
	"fmt"
	"time"
)

// BuildTag is the build tag that links the model.
const BuildTag = "embedded"

// ErrNotLinked is returned by Init and New in builds without BuildTag.
var ErrNotLinked = errors.New("silero: Silero VAD is not linked into this binary: build with -tags " + BuildTag)

// ErrNotInitialized is returned by New before a successful Init.
var ErrNotInitialized = errors.New("silero: ONNX Runtime not initialised: call silero.Init with the path of libonnxruntime.so first")

// Available reports whether this binary links the Silero model (was built with BuildTag).
// Even then New needs Init to have found ONNX Runtime.
func Available() bool { return linked }

// Config tunes a Detector. Zero fields take the defaults named below.
type Config struct {
	// ModelPath is the path of silero_vad_v5.onnx. Required.
	ModelPath string
	// Rate is the sample rate of the frames in Hz: 8000 or 16000. Required.
	Rate int
	// Activation is the smoothed speech probability at or above which a window is speech
	// (default 0.5; Patter's phone preset uses 0.8).
	Activation float64
	// Deactivation is the smoothed probability above which a window stays speech once
	// speech has started (default the larger of Activation-0.15 and Activation/2).
	Deactivation float64
	// MinSpeech is how much speech, in consecutive speech windows, makes a SpeechStart
	// (default 250 ms).
	MinSpeech time.Duration
	// MinSilence is how much non-speech, in consecutive windows, makes a SpeechEnd
	// (default 400 ms).
	MinSilence time.Duration
	// Smoothing is the weight of the previous smoothed probability in the exponential
	// filter: smoothed = Smoothing·previous + (1-Smoothing)·probability (default 0.35).
	// A negative value turns smoothing off.
	Smoothing float64
}

// Defaults for Config's zero fields.
const (
	DefaultActivation = 0.5
	DefaultMinSpeech  = 250 * time.Millisecond
	DefaultMinSilence = 400 * time.Millisecond
	DefaultSmoothing  = 0.35
	// deactivationGap is how far Deactivation sits below Activation by default.
	deactivationGap = 0.15
)

func (c Config) withDefaults() (Config, error) {
	if c.ModelPath == "" {
		return c, errors.New("silero: no ModelPath (the path of silero_vad_v5.onnx)")
	}
	if c.Rate != 8000 && c.Rate != 16000 {
		return c, fmt.Errorf("silero: sample rate %d Hz: the model takes 8000 or 16000", c.Rate)
	}
	if c.Activation == 0 {
		c.Activation = DefaultActivation
	}
	if c.Deactivation == 0 {
		c.Deactivation = max(c.Activation-deactivationGap, c.Activation/2)
	}
	if !(c.Activation > 0 && c.Activation < 1) || !(c.Deactivation > 0 && c.Deactivation <= c.Activation) {
		return c, fmt.Errorf("silero: Activation %g, Deactivation %g: want 0 < Deactivation <= Activation < 1",
			c.Activation, c.Deactivation)
	}
	if c.MinSpeech < 0 || c.MinSilence < 0 {
		return c, errors.New("silero: MinSpeech and MinSilence must not be negative")
	}
	if c.MinSpeech == 0 {
		c.MinSpeech = DefaultMinSpeech
	}
	if c.MinSilence == 0 {
		c.MinSilence = DefaultMinSilence
	}
	switch {
	case c.Smoothing == 0:
		c.Smoothing = DefaultSmoothing
	case c.Smoothing < 0:
		c.Smoothing = -1 // off; kept negative so the Config says so
	case c.Smoothing >= 1:
		return c, fmt.Errorf("silero: Smoothing %g: want less than 1", c.Smoothing)
	}
	return c, nil
}

// Window is the number of new samples the model reads per inference at rate Hz (512 at
// 16 kHz, 256 at 8 kHz: 32 ms), and contextLen how many samples of the previous window
// precede them.
func Window(rate int) int { return rate * 512 / 16000 }

func contextLen(rate int) int { return rate * 64 / 16000 }
