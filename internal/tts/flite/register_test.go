package flite

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
)

func buildFromSettings(voice8k, voice16k string) (*Synthesizer, error) {
	s, err := Provider.New(registry.Build{Settings: registrytest.Settings{"HANDSET_FLITE_VOICE": voice8k, "HANDSET_FLITE_WIDEBAND_VOICE": voice16k},
		Choice: "HANDSET_TTS_FALLBACK", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return s.(*Synthesizer), nil
}

// Built from its settings, Flite speaks with the voices they name where it is linked in;
// elsewhere, and for a voice it does not have, the error names the setting that chose it.
func TestBuiltFromSettings(t *testing.T) {
	if _, err := buildFromSettings("no-such-voice", "slt"); err == nil || !strings.HasPrefix(err.Error(), "HANDSET_TTS_FALLBACK=flite: ") {
		t.Errorf("error %v, want it to start with the setting that chose the provider", err)
	}
	s, err := buildFromSettings("rms", "awb")
	if !Available() {
		if !errors.Is(err, ErrNotLinked) || !strings.HasPrefix(err.Error(), "HANDSET_TTS_FALLBACK=flite: ") {
			t.Errorf("error %v, want ErrNotLinked after the setting that chose the provider", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.v8k.id() != "rms" || s.v16k.id() != "awb" {
		t.Errorf("voices %s and %s, want the settings' rms and awb", s.v8k.id(), s.v16k.id())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rc, err := s.Synthesize(ctx, "Hello from the registry.", audio.Telephone)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, err := io.ReadAll(rc); err != nil || audio.Telephone.Duration(len(b)) < 500*time.Millisecond {
		t.Errorf("%v of speech, %v: want a sentence's worth", audio.Telephone.Duration(len(b)), err)
	}
}
