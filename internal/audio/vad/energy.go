package vad

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// EnergyConfig tunes the energy VAD. Zero fields take the defaults named below.
type EnergyConfig struct {
	// Rate is the sample rate of the frames in Hz. Required.
	Rate int
	// StartAfter is how long the level must stay speech-like before SpeechStart
	// (default 100 ms). The start is reported this long after the speech began.
	StartAfter time.Duration
	// EndAfter is how long the level must stay below the speech threshold before
	// SpeechEnd (default 500 ms), so short pauses inside an utterance do not end it.
	EndAfter time.Duration
	// ThresholdDB is how far above the adaptive noise floor a frame must be to count
	// as speech (default 10 dB).
	ThresholdDB float64
	// MinLevelDBFS is an absolute level below which nothing is speech, however quiet the
	// line (default -45 dBFS, where 0 dBFS is an RMS of 32768).
	MinLevelDBFS float64
}

// Defaults for EnergyConfig's zero fields.
const (
	DefaultStartAfter   = 100 * time.Millisecond
	DefaultEndAfter     = 500 * time.Millisecond
	DefaultThresholdDB  = 10.0
	DefaultMinLevelDBFS = -45.0
)

// Noise floor tracking: the floor is the quietest frame level over the last floorWindow,
// kept as floorSlots minima of equal sub-windows. It falls to a quieter level at once and
// rises toward a louder minimum with time constant floorRise. Frames quieter than
// digitalSilenceDBFS (dropped packets, muted lines) say nothing about the noise and are
// left out of the floor.
const (
	floorWindow        = 2 * time.Second
	floorSlots         = 8
	floorRise          = 500 * time.Millisecond
	digitalSilenceDBFS = -90.0
)

func (c EnergyConfig) withDefaults() (EnergyConfig, error) {
	if c.Rate <= 0 {
		return c, fmt.Errorf("vad: sample rate %d Hz: must be positive", c.Rate)
	}
	if c.StartAfter < 0 || c.EndAfter < 0 {
		return c, errors.New("vad: StartAfter and EndAfter must not be negative")
	}
	if c.StartAfter == 0 {
		c.StartAfter = DefaultStartAfter
	}
	if c.EndAfter == 0 {
		c.EndAfter = DefaultEndAfter
	}
	if c.ThresholdDB == 0 {
		c.ThresholdDB = DefaultThresholdDB
	}
	if c.MinLevelDBFS == 0 {
		c.MinLevelDBFS = DefaultMinLevelDBFS
	}
	return c, nil
}

func samples(rate int, d time.Duration) int {
	return int(int64(d) * int64(rate) / int64(time.Second))
}

// Energy is a Detector that calls a frame speech when its RMS level is at least
// MinLevelDBFS and more than ThresholdDB above the adaptive noise floor, and reports
// SpeechStart after StartAfter of consecutive speech frames and SpeechEnd after EndAfter
// of consecutive non-speech frames. Timing is counted in samples, so frames of any length
// work. It does not allocate per frame and is not safe for concurrent use.
type Energy struct {
	cfg        EnergyConfig
	startAfter int // samples
	endAfter   int // samples
	floor      noiseFloor
	inSpeech   bool
	run        int     // samples of the state-changing kind seen in a row
	lastLevel  float64 // dBFS of the last frame
}

var _ Detector = (*Energy)(nil)

// NewEnergy returns an energy VAD for frames at cfg.Rate. It fails only for a missing or
// negative rate or negative durations.
func NewEnergy(cfg EnergyConfig) (*Energy, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e := &Energy{
		cfg:        cfg,
		startAfter: max(1, samples(cfg.Rate, cfg.StartAfter)),
		endAfter:   max(1, samples(cfg.Rate, cfg.EndAfter)),
		floor:      newNoiseFloor(cfg.Rate),
		lastLevel:  math.Inf(-1),
	}
	return e, nil
}

// Config is the configuration in use, defaults filled in.
func (e *Energy) Config() EnergyConfig { return e.cfg }

// SampleRate is the rate of the frames Process expects, in Hz.
func (e *Energy) SampleRate() int { return e.cfg.Rate }

// InSpeech reports whether speech has started and not yet ended.
func (e *Energy) InSpeech() bool { return e.inSpeech }

// NoiseFloorDBFS is the current noise floor estimate in dBFS (+Inf before any frame with
// signal). For traces and tests.
func (e *Energy) NoiseFloorDBFS() float64 { return e.floor.level }

// LevelDBFS is the RMS level of the last frame in dBFS (-Inf for digital silence).
func (e *Energy) LevelDBFS() float64 { return e.lastLevel }

// Reset returns to silence (not in speech, nothing pending) without reporting SpeechEnd.
// It keeps the noise floor learnt so far: the call engine resets the VAD at every agent
// turn, and the line's noise has not changed. A new stream needs a new Energy.
func (e *Energy) Reset() {
	e.inSpeech = false
	e.run = 0
}

// Process classifies one frame (samples at SampleRate) and reports a transition, if any.
// An empty frame changes nothing.
func (e *Energy) Process(frame []int16) Event {
	if len(frame) == 0 {
		return None
	}
	level := rmsDBFS(frame)
	e.lastLevel = level
	e.floor.observe(level, len(frame))
	speech := level >= e.cfg.MinLevelDBFS && level > e.floor.level+e.cfg.ThresholdDB
	if speech != e.inSpeech {
		e.run += len(frame)
	} else {
		e.run = 0
	}
	switch {
	case !e.inSpeech && e.run >= e.startAfter:
		e.inSpeech, e.run = true, 0
		return SpeechStart
	case e.inSpeech && e.run >= e.endAfter:
		e.inSpeech, e.run = false, 0
		return SpeechEnd
	}
	return None
}

// rmsDBFS is the RMS level of pcm in dBFS, -Inf for all zeros.
func rmsDBFS(pcm []int16) float64 {
	var sum int64
	for _, s := range pcm {
		v := int64(s)
		sum += v * v
	}
	if sum == 0 {
		return math.Inf(-1)
	}
	return 10 * math.Log10(float64(sum)/float64(len(pcm))/(32768*32768))
}
