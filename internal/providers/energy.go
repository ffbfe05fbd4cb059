package providers

import (
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
)

// energyVAD is the energy detector in the catalogue. It is described here, not in its own
// package as every other provider is, because internal/audio/vad is the core the registry
// itself imports (the VAD kind's detectors): vad importing the registry would be a cycle.
var energyVAD = registry.VAD{
	About: registry.About{
		Name:     "energy",
		Title:    "energy VAD",
		Settings: []string{"HANDSET_VAD_START", "HANDSET_VAD_END"},
		Offline:  true,
		Checks: func(p registry.Probe) []doctor.Check {
			return []doctor.Check{doctor.Fixed(p.Section, "engine", doctor.OKResult("energy ("+p.Choice+"): simple, and weak in noise"))}
		},
	},
	New: func(b registry.Build) (func(rate int) (vad.Detector, error), func(), error) {
		start, end := b.Settings.Duration("HANDSET_VAD_START"), b.Settings.Duration("HANDSET_VAD_END")
		b.Log.Info("voice activity detection: energy")
		return func(rate int) (vad.Detector, error) {
			return vad.NewEnergy(vad.EnergyConfig{Rate: rate, StartAfter: start, EndAfter: end})
		}, func() {}, nil
	},
}
