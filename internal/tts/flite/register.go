package flite

import (
	"context"
	"fmt"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Provider is Flite, the offline voice linked into the binary, in the catalogue.
var Provider = registry.TTS{
	About: registry.About{
		Name:     name,
		Title:    "flite",
		Settings: []string{"HANDSET_FLITE_VOICE", "HANDSET_FLITE_WIDEBAND_VOICE"},
		Offline:  true,
		Hints: registry.Hints{
			ModelFix: "Check HANDSET_FLITE_VOICE, and that `handset version` lists flite as ready (it needs a build with -tags embedded).",
			SlowFix:  "flite runs on this host's CPU: the host is short of CPU.",
			TestFix:  registry.Fixed(registry.OfflineTestFix),
		},
		Checks: func(p registry.Probe) []doctor.Check {
			return []doctor.Check{doctor.Local(p.Section, name, func(context.Context) doctor.Result { return ready(p) })}
		},
	},
	New: func(b registry.Build) (voice.Synthesizer, error) {
		s := b.Settings
		t, err := New(Options{Voice8k: s.Value("HANDSET_FLITE_VOICE"), Voice16k: s.Value("HANDSET_FLITE_WIDEBAND_VOICE"), Logger: b.Log})
		if err != nil {
			return nil, fmt.Errorf("%s=flite: %w", b.Choice, err)
		}
		return t, nil
	},
}

// ready is doctor's check: Flite has no files of its own, so linked in is ready.
func ready(p registry.Probe) doctor.Result {
	if !Available() {
		return doctor.FailResult("flite is not in this binary ("+p.Choice+"=flite; built without -tags embedded)", doctor.EngineSetupFix)
	}
	return doctor.OKResult("Flite ready (voices " + p.Settings.Value("HANDSET_FLITE_VOICE") + " for calls, " + p.Settings.Value("HANDSET_FLITE_WIDEBAND_VOICE") + " for browsers)")
}
