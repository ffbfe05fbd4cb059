package gateway

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
	"github.com/handset-voice/handset/internal/engines"
)

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
	// .cache/engines at the module root, where scripts/engines.sh puts the files; without
	// them it is a missing peer.
	dir := filepath.Dir(vadtest.EngineFile(t, engines.FVADFile))

	newVAD, closeVAD, err := buildVAD(vadConfig(t, "webrtc", dir), log)
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

	_, _, err = buildVAD(vadConfig(t, "silero", dir), log)
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
