package sphinx

import (
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
)

// A build that cannot load says which setting chose PocketSphinx and why: not linked in, or
// (linked in) no model where HANDSET_SPHINX_MODEL points.
func TestBuildErrorNamesTheChoice(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-model")
	_, err := Provider.New(registry.Build{Settings: registrytest.Settings{"HANDSET_SPHINX_MODEL": missing, "HANDSET_SPHINX_DECODERS": "1"},
		Choice: "HANDSET_STT_FALLBACK", Log: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.HasPrefix(err.Error(), "HANDSET_STT_FALLBACK=sphinx: ") {
		t.Fatalf("error %v, want it to start with the setting that chose the provider", err)
	}
	if Available() {
		if !strings.Contains(err.Error(), missing) {
			t.Errorf("error %v does not name the missing model folder", err)
		}
	} else if !errors.Is(err, ErrNotLinked) {
		t.Errorf("error %v, want ErrNotLinked in a build without the engines", err)
	}
}
