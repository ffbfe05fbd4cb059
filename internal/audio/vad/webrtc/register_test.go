package webrtc

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
)

// Built from its settings, the engine's detectors end speech after the silence
// HANDSET_VAD_END says.
func TestBuiltFromSettingsEndsSpeechAsSet(t *testing.T) {
	vadtest.CheckEndSetting(t, func(end time.Duration) vad.Detector {
		newDetector, release, err := Provider.New(registry.Build{
			Settings:   registrytest.Settings{"HANDSET_VAD_START": "60ms", "HANDSET_VAD_END": end.String()},
			Choice:     "HANDSET_VAD",
			Log:        slog.New(slog.DiscardHandler),
			EngineFile: func(name string) (string, error) { return vadtest.EngineFile(t, name), nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		d, err := newDetector(16000)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.(*Detector).Close() })
		return d
	})
}

// Without its file the engine does not load: the error names the setting that chose it, and
// is the bare reason when none did (the best engine available is being looked for).
func TestBuildErrorNamesTheChoice(t *testing.T) {
	missing := errors.New("fvad.wasm not found in the test's folder")
	for choice, want := range map[string]string{"HANDSET_VAD": "HANDSET_VAD=webrtc: " + missing.Error(), "": missing.Error()} {
		_, _, err := Provider.New(registry.Build{Settings: registrytest.Settings{}, Choice: choice, Log: slog.New(slog.DiscardHandler),
			EngineFile: func(string) (string, error) { return "", missing }})
		if err == nil || err.Error() != want || !errors.Is(err, missing) {
			t.Errorf("choice %q: error %v, want %q", choice, err, want)
		}
	}
}
