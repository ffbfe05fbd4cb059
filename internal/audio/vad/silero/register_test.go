package silero

import (
	"log/slog"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
)

func buildFromSettings(t *testing.T, choice string, settings registrytest.Settings) (*Detector, error) {
	t.Helper()
	newDetector, release, err := Provider.New(registry.Build{Settings: settings, Choice: choice, Log: slog.New(slog.DiscardHandler),
		EngineFile: func(name string) (string, error) { return vadtest.EngineFile(t, name), nil }})
	if err != nil {
		return nil, err
	}
	t.Cleanup(release)
	d, err := newDetector(16000)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.(*Detector).Close() })
	return d.(*Detector), nil
}

// Where Silero is not linked in, the error says so after the setting that chose it, and is
// the bare reason when none did (the best engine available is being looked for).
func TestBuildErrorNamesTheChoice(t *testing.T) {
	if Available() {
		t.Skip("Silero is linked into this build")
	}
	const reason = "not linked into this build (build with -tags embedded: ./scripts/setup.sh does)"
	for choice, want := range map[string]string{"HANDSET_VAD": "HANDSET_VAD=silero: " + reason, "": reason} {
		if _, err := buildFromSettings(t, choice, registrytest.Settings{}); err == nil || err.Error() != want {
			t.Errorf("choice %q: error %v, want %q", choice, err, want)
		}
	}
}

// Built from its settings, Silero's detectors end speech after the silence HANDSET_VAD_END
// says and take HANDSET_VAD_THRESHOLD as their threshold.
func TestBuiltFromSettingsEndsSpeechAsSet(t *testing.T) {
	if !Available() {
		t.Skip("Silero is not linked into this build (-tags embedded)")
	}
	vadtest.CheckEndSetting(t, func(end time.Duration) vad.Detector {
		d, err := buildFromSettings(t, "HANDSET_VAD", registrytest.Settings{"HANDSET_VAD_THRESHOLD": "0.7",
			"HANDSET_VAD_START": "60ms", "HANDSET_VAD_END": end.String()})
		if err != nil {
			t.Fatal(err)
		}
		if d.cfg.Activation != 0.7 {
			t.Errorf("activation %v, want HANDSET_VAD_THRESHOLD's 0.7", d.cfg.Activation)
		}
		return d
	})
}
