package registry_test

import (
	"testing"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/registry"
)

// The configuration is what providers read their settings through.
var _ registry.Settings = (*config.Config)(nil)

func TestRegisterRefusesATakenNameAndAnEmptyOne(t *testing.T) {
	registry.Register(registry.TTS{About: registry.About{Name: "registry-test-voice"}})
	if _, ok := registry.Find[registry.TTS]("registry-test-voice"); !ok {
		t.Fatal("a registered voice is not found")
	}
	if _, ok := registry.Find[registry.STT]("registry-test-voice"); ok {
		t.Fatal("a voice is found as a recognizer: kinds are not kept apart")
	}
	mustPanic := func(what string, p registry.Provider) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: registered without a panic", what)
			}
		}()
		registry.Register(p)
	}
	mustPanic("a second voice of the same name", registry.TTS{About: registry.About{Name: "registry-test-voice"}})
	mustPanic("a provider without a name", registry.STT{})
	// The same name in another kind is a different provider (openai is both a voice and a
	// recognizer).
	registry.Register(registry.STT{About: registry.About{Name: "registry-test-voice"}})
}
