package espeak

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
	"github.com/handset-voice/handset/internal/testpeer"
)

func buildFromSettings(voiceName string) (*Synthesizer, error) {
	s, err := Provider.New(registry.Build{Settings: registrytest.Settings{"HANDSET_ESPEAK_VOICE": voiceName},
		Choice: "HANDSET_TTS_FALLBACK", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return s.(*Synthesizer), nil
}

// A voice espeak-ng could take for an option is refused, naming the setting that chose it.
func TestBuildErrorNamesTheChoice(t *testing.T) {
	if _, err := buildFromSettings("-w/tmp/x"); err == nil || !strings.HasPrefix(err.Error(), "HANDSET_TTS_FALLBACK=espeak: ") {
		t.Errorf("error %v, want it to start with the setting that chose the provider", err)
	}
}

// Built from its settings, espeak-ng speaks with the voice they name.
func TestBuiltFromSettingsSpeaks(t *testing.T) {
	testpeer.Program(t, DefaultBinary, testpeer.Espeak)
	s, err := buildFromSettings("en-gb")
	if err != nil {
		t.Fatal(err)
	}
	if s.voice != "en-gb" {
		t.Errorf("voice %q, want the setting's en-gb", s.voice)
	}
	rc, err := s.Synthesize(t.Context(), "Hello from the registry.", audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, err := io.ReadAll(rc); err != nil || audio.Telephone.Duration(len(b)) < 500*time.Millisecond {
		t.Errorf("%v of speech, %v: want a sentence's worth", audio.Telephone.Duration(len(b)), err)
	}
}
