package sphinx

import (
	"context"
	"fmt"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Provider is PocketSphinx, the offline recognizer, in the catalogue.
var Provider = registry.STT{
	About: registry.About{
		Name:     providerName,
		Title:    "PocketSphinx",
		Settings: []string{"HANDSET_SPHINX_MODEL", "HANDSET_SPHINX_DECODERS"},
		Offline:  true,
		Hints: registry.Hints{URLHint: "; with many callers speaking at once raise HANDSET_SPHINX_DECODERS",
			ModelFix: "Check HANDSET_SPHINX_MODEL is the folder of the US English model (Debian package pocketsphinx-en-us) and `handset version` lists sphinx as ready.",
			TestFix:  registry.Fixed(registry.OfflineTestFix),
			MishearFix: func(registry.Settings) string {
				return "sphinx is offline and demo quality, and mishears some voices: for real calls use a cloud STT (HANDSET_STT=deepgram with DEEPGRAM_API_KEY)"
			},
		},
		Checks: func(p registry.Probe) []doctor.Check {
			return []doctor.Check{doctor.Local(p.Section, providerName, func(context.Context) doctor.Result { return ready(p) })}
		},
	},
	New: build,
}

// build loads the decoders, saying what to install when it cannot.
func build(b registry.Build) (voice.Recognizer, error) {
	model, decoders := b.Settings.Value("HANDSET_SPHINX_MODEL"), b.Settings.Int("HANDSET_SPHINX_DECODERS")
	if !Available() {
		return nil, fmt.Errorf("%s=sphinx: %w", b.Choice, ErrNotLinked)
	}
	if err := CheckModel(model); err != nil {
		return nil, fmt.Errorf("%s=sphinx: %w", b.Choice, err)
	}
	r, err := New(Options{ModelDir: model, Decoders: decoders, Logger: b.Log})
	if err != nil {
		return nil, fmt.Errorf("%s=sphinx: %w", b.Choice, err)
	}
	b.Log.Info("speech recognition: PocketSphinx (offline, demo quality: configure a cloud STT for real calls)",
		"decoders", decoders)
	return r, nil
}

// ready is doctor's check: linked into this binary, and its model where the setting says.
func ready(p registry.Probe) doctor.Result {
	model := p.Settings.Value("HANDSET_SPHINX_MODEL")
	if !Available() {
		return doctor.FailResult("sphinx is not in this binary ("+p.Choice+"=sphinx; built without -tags embedded)", doctor.EngineSetupFix)
	}
	if err := CheckModel(model); err != nil {
		return doctor.FailResult("sphinx is linked, but its files are missing", err.Error())
	}
	return doctor.OKResult("PocketSphinx ready (model " + model + "); offline and demo quality: a cloud STT hears callers better")
}
