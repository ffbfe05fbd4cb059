package webrtc

import (
	"context"
	"fmt"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
)

// WasmFile is libfvad compiled to WebAssembly, as scripts/engines.sh lays it out.
const WasmFile = "fvad.wasm"

// Provider is the WebRTC VAD (libfvad) in the catalogue of providers.
var Provider = registry.VAD{
	About: registry.About{
		Name:     "webrtc",
		Title:    "WebRTC VAD",
		Settings: []string{"HANDSET_VAD_START", "HANDSET_VAD_END"},
		Offline:  true,
		Checks: func(p registry.Probe) []doctor.Check {
			return []doctor.Check{doctor.Local(p.Section, "engine", func(context.Context) doctor.Result {
				f, release, err := load(p.Settings, p.EngineFile)
				if err == nil {
					err = vad.Loads(f, release)
				}
				if err != nil {
					return doctor.FailResult(p.Choice+"=webrtc cannot load: "+err.Error(), vad.EngineFix)
				}
				return doctor.OKResult("webrtc (" + p.Choice + ")")
			})}
		},
	},
	// New's error names the choice; with none (the best engine available is being looked
	// for) it is the bare reason, for the log line that says why the next one is tried.
	New: func(b registry.Build) (func(rate int) (vad.Detector, error), func(), error) {
		f, release, err := load(b.Settings, b.EngineFile)
		if err != nil {
			if b.Choice != "" {
				err = fmt.Errorf("%s=webrtc: %w", b.Choice, err)
			}
			return nil, nil, err
		}
		b.Log.Info("voice activity detection: webrtc")
		return f, release, nil
	},
}

// load compiles the engine once: a factory of detectors, and how to free the engine.
func load(s registry.Settings, engineFile func(string) (string, error)) (func(rate int) (vad.Detector, error), func(), error) {
	path, err := engineFile(WasmFile)
	if err != nil {
		return nil, nil, err
	}
	engine, err := LoadEngine(context.Background(), path)
	if err != nil {
		return nil, nil, err
	}
	start, end := s.Duration("HANDSET_VAD_START"), s.Duration("HANDSET_VAD_END")
	return func(rate int) (vad.Detector, error) {
			return engine.NewDetector(Config{Rate: rate, StartAfter: start, EndAfter: end})
		}, func() {
			_ = engine.Close(context.Background())
		}, nil
}
