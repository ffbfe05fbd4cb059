package openai_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
	"github.com/handset-voice/handset/internal/sim/fakeopenaispeech"
	"github.com/handset-voice/handset/internal/stt/openai"
)

func build(settings registrytest.Settings, choice string) (*openai.Recognizer, error) {
	r, err := openai.Provider.New(registry.Build{Settings: settings, Choice: choice, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return r.(*openai.Recognizer), nil
}

// Built from its settings alone, the recognizer sends the model they name, with their key,
// to the server they name.
func TestBuiltFromSettingsTranscribes(t *testing.T) {
	fake, err := fakeopenaispeech.Start(fakeopenaispeech.Options{Key: testKey, Transcripts: []string{"from the registry"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	// The recognizer's default client: its idle connections must not outlive the test.
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	r, err := build(registrytest.Settings{"HANDSET_OPENAI_URL": fake.URL(), "OPENAI_API_KEY": testKey,
		"HANDSET_OPENAI_STT_MODEL": "whisper-large-v3"}, "HANDSET_STT")
	if err != nil {
		t.Fatal(err)
	}
	text, err := r.Transcribe(testContext(t), audio.Telephone, speech(audio.Telephone, time.Second))
	if err != nil || text != "from the registry" {
		t.Fatalf("Transcribe: %q, %v", text, err)
	}
	if ups := fake.Uploads(); len(ups) != 1 || ups[0].Model != "whisper-large-v3" || !ups[0].KeyPresent {
		t.Errorf("uploads %+v, want one of the settings' model with a key", ups)
	}
}

func TestBuildErrorNamesTheChoice(t *testing.T) {
	_, err := build(registrytest.Settings{"HANDSET_OPENAI_URL": "ftp://example.com/v1"}, "HANDSET_STT_FALLBACK")
	if err == nil || !strings.HasPrefix(err.Error(), "HANDSET_STT_FALLBACK=openai: ") {
		t.Errorf("error %v, want it to start with the setting that chose the provider", err)
	}
}
