package webrtc

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
)

// endLagBuilt builds the engine from settings with HANDSET_VAD_END set to end, and measures
// how long after speech its detector says the speech ended.
func endLagBuilt(t *testing.T, end time.Duration) time.Duration {
	t.Helper()
	newDetector, release, err := Provider.New(registry.Build{
		Settings:   registrytest.Settings{"HANDSET_VAD_START": "60ms", "HANDSET_VAD_END": end.String()},
		Choice:     "HANDSET_VAD",
		Log:        slog.New(slog.DiscardHandler),
		EngineFile: func(name string) (string, error) { return vadtest.EngineFile(t, name), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	d, err := newDetector(16000)
	if err != nil {
		t.Fatal(err)
	}
	defer d.(*Detector).Close()
	lag, ok := vadtest.EndLag(t, d)
	if !ok {
		t.Fatalf("HANDSET_VAD_END=%v: the detector did not hear the utterance start and end", end)
	}
	return lag
}

// Built from its settings, the engine's detectors end speech after the silence
// HANDSET_VAD_END says.
func TestBuiltFromSettingsEndsSpeechAsSet(t *testing.T) {
	short, long := endLagBuilt(t, 300*time.Millisecond), endLagBuilt(t, 900*time.Millisecond)
	if diff := long - short; diff < 500*time.Millisecond || diff > 700*time.Millisecond {
		t.Errorf("speech ended %v after the utterance with HANDSET_VAD_END=300ms and %v with 900ms: want 600ms between them", short, long)
	}
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
