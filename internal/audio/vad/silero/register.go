package silero

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
)

// The engine files Silero loads, as scripts/engines.sh lays them out.
const (
	LibFile   = "libonnxruntime.so"
	ModelFile = "silero_vad_v5.onnx"
)

// Provider is Silero, the neural VAD, in the catalogue of providers.
var Provider = registry.VAD{
	About: registry.About{
		Name:     "silero",
		Title:    "Silero VAD",
		Settings: []string{"HANDSET_VAD_THRESHOLD", "HANDSET_VAD_START", "HANDSET_VAD_END"},
		Offline:  true,
		Checks: func(p registry.Probe) []doctor.Check {
			return []doctor.Check{doctor.Local(p.Section, "engine", func(context.Context) doctor.Result {
				f, err := load(p.Settings, p.EngineFile)
				if err == nil {
					err = vad.Loads(f, nil)
				}
				if err != nil {
					return doctor.FailResult(p.Choice+"=silero cannot load: "+err.Error(), vad.EngineFix)
				}
				return doctor.OKResult("silero (" + p.Choice + ")")
			})}
		},
	},
	// New's error names the choice; with none (the best engine available is being looked
	// for) it is the bare reason, for the log line that says why the next one is tried.
	New: func(b registry.Build) (func(rate int) (vad.Detector, error), func(), error) {
		f, err := load(b.Settings, b.EngineFile)
		if err != nil {
			if b.Choice != "" {
				err = fmt.Errorf("%s=silero: %w", b.Choice, err)
			}
			return nil, nil, err
		}
		b.Log.Info("voice activity detection: silero")
		return f, func() {}, nil
	},
}

// load finds ONNX Runtime and the model and starts the runtime: a factory of detectors.
func load(s registry.Settings, engineFile func(string) (string, error)) (func(rate int) (vad.Detector, error), error) {
	if !Available() {
		return nil, errors.New("not linked into this build (build with -tags embedded: ./scripts/setup.sh does)")
	}
	lib, err := engineFile(LibFile)
	if err != nil {
		return nil, err
	}
	model, err := engineFile(ModelFile)
	if err != nil {
		return nil, err
	}
	if err := Init(lib); err != nil {
		return nil, err
	}
	// HANDSET_VAD_THRESHOLD is a probability validated with the configuration.
	threshold, _ := strconv.ParseFloat(s.Value("HANDSET_VAD_THRESHOLD"), 64)
	start, end := s.Duration("HANDSET_VAD_START"), s.Duration("HANDSET_VAD_END")
	return func(rate int) (vad.Detector, error) {
		return New(Config{ModelPath: model, Rate: rate, Activation: threshold, MinSpeech: start, MinSilence: end})
	}, nil
}
