package cli

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/audio/vad/silero"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/config"
)

// repoEngines is the directory holding the engine files (.cache/engines at the module
// root, where scripts/engines.sh puts them); without them it is a missing peer.
func repoEngines(t *testing.T) string {
	t.Helper()
	return filepath.Dir(vadtest.EngineFile(t, fvadFile))
}

func vadConfig(t *testing.T, engine, dir string) *config.Config {
	t.Helper()
	cfg, err := config.Load(config.LoadOptions{WorkDir: t.TempDir(), Environ: []string{
		"HANDSET_VAD=" + engine, "HANDSET_ENGINES_DIR=" + dir,
	}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestVADSelection(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	engines := repoEngines(t)

	newVAD, closeVAD, err := buildVAD(vadConfig(t, "webrtc", engines), log)
	if err != nil {
		t.Fatal(err)
	}
	d, err := newVAD(8000)
	if err != nil || d.SampleRate() != 8000 {
		t.Fatalf("webrtc detector: %v", err)
	}
	if c, ok := d.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	closeVAD()

	_, _, err = buildVAD(vadConfig(t, "webrtc", t.TempDir()), log)
	if err == nil || !strings.Contains(err.Error(), "fvad.wasm not found") || !strings.Contains(err.Error(), "scripts/engines.sh") {
		t.Errorf("missing wasm: err %v, want one naming the file and the fix", err)
	}

	_, _, err = buildVAD(vadConfig(t, "silero", engines), log)
	if silero.Available() != (err == nil) {
		t.Errorf("silero linked %v, buildVAD err %v", silero.Available(), err)
	}
	if !silero.Available() && !strings.Contains(err.Error(), "-tags embedded") {
		t.Errorf("without the tag the error should say how to get Silero: %v", err)
	}

	// Nothing found anywhere: the best available is the energy detector, and it works.
	newVAD, closeVAD, err = buildVAD(vadConfig(t, "", t.TempDir()), log)
	if err != nil {
		t.Fatal(err)
	}
	defer closeVAD()
	if d, err := newVAD(8000); err != nil {
		t.Fatal(err)
	} else if _, ok := d.(*vad.Energy); !ok {
		t.Errorf("fallback detector is %T, want the energy VAD", d)
	}
}
