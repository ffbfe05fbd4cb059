package silero

import (
	"log/slog"
	"testing"
	"time"

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
	lag := func(end time.Duration) time.Duration {
		d, err := buildFromSettings(t, "HANDSET_VAD", registrytest.Settings{"HANDSET_VAD_THRESHOLD": "0.7",
			"HANDSET_VAD_START": "60ms", "HANDSET_VAD_END": end.String()})
		if err != nil {
			t.Fatal(err)
		}
		if d.cfg.Activation != 0.7 {
			t.Errorf("activation %v, want HANDSET_VAD_THRESHOLD's 0.7", d.cfg.Activation)
		}
		l, ok := vadtest.EndLag(t, d)
		if !ok {
			t.Fatalf("HANDSET_VAD_END=%v: the detector did not hear the utterance start and end", end)
		}
		return l
	}
	short, long := lag(300*time.Millisecond), lag(900*time.Millisecond)
	if diff := long - short; diff < 500*time.Millisecond || diff > 700*time.Millisecond {
		t.Errorf("speech ended %v after the utterance with HANDSET_VAD_END=300ms and %v with 900ms: want 600ms between them", short, long)
	}
}
