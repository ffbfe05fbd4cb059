package espeak

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Provider is espeak-ng, the offline voice run as a program, in the catalogue.
var Provider = registry.TTS{
	About: registry.About{
		Name:     name,
		Title:    "espeak-ng",
		Settings: []string{"HANDSET_ESPEAK_VOICE"},
		Offline:  true,
		Hints: registry.Hints{
			ModelFix: "Check espeak-ng is installed (apt-get install espeak-ng) and HANDSET_ESPEAK_VOICE is one of `espeak-ng --voices`.",
			SlowFix:  "espeak-ng runs on this host's CPU: the host is short of CPU.",
			TestFix:  registry.Fixed(registry.OfflineTestFix),
		},
		Checks: func(p registry.Probe) []doctor.Check {
			return []doctor.Check{doctor.Local(p.Section, name, func(context.Context) doctor.Result { return ready(p) })}
		},
	},
	New: func(b registry.Build) (voice.Synthesizer, error) {
		t, err := New(Options{Voice: b.Settings.Value("HANDSET_ESPEAK_VOICE"), Logger: b.Log})
		if err != nil {
			return nil, fmt.Errorf("%s=espeak: %w", b.Choice, err)
		}
		return t, nil
	},
}

// ready is doctor's check: the program is installed.
func ready(p registry.Probe) doctor.Result {
	if _, err := exec.LookPath(DefaultBinary); err != nil {
		return doctor.FailResult("espeak-ng is not installed ("+p.Choice+"=espeak)", "apt-get install espeak-ng, or choose another "+p.Choice)
	}
	return doctor.OKResult("espeak ready")
}
