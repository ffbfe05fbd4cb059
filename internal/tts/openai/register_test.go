package openai_test

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
	"github.com/handset-voice/handset/internal/sim/fakeopenaispeech"
	"github.com/handset-voice/handset/internal/tts/openai"
)

func build(settings registrytest.Settings, choice string) (*openai.Synthesizer, error) {
	s, err := openai.Provider.New(registry.Build{Settings: settings, Choice: choice, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return s.(*openai.Synthesizer), nil
}

// Built from its settings alone, the voice asks the server they name, with their key, for
// their model and voice.
func TestBuiltFromSettingsSpeaks(t *testing.T) {
	fake, err := fakeopenaispeech.Start(fakeopenaispeech.Options{Key: testKey, Models: []string{"kokoro"}, Voices: []string{"af_heart"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	// The voice's default client: its idle connections must not outlive the test.
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	s, err := build(registrytest.Settings{"HANDSET_OPENAI_URL": fake.URL(), "OPENAI_API_KEY": testKey,
		"HANDSET_OPENAI_TTS_MODEL": "kokoro", "HANDSET_OPENAI_TTS_VOICE": "af_heart", "HANDSET_TTS_TIMEOUT": "5s"}, "HANDSET_TTS")
	if err != nil {
		t.Fatal(err)
	}
	const text = "Hello from the registry."
	if got, want := len(synth(t, s, text, audio.Telephone)), audio.Telephone.Bytes(fake.AudioDuration(text)); got != want {
		t.Errorf("%d bytes of audio, want %d", got, want)
	}
	if sp := fake.Speeches(); len(sp) != 1 || sp[0].Model != "kokoro" || sp[0].Voice != "af_heart" || !sp[0].KeyPresent {
		t.Errorf("requests %+v, want one for the settings' model and voice, with a key", sp)
	}
}

func TestBuildErrorNamesTheChoice(t *testing.T) {
	_, err := build(registrytest.Settings{"HANDSET_OPENAI_URL": "ws://example.com/v1"}, "HANDSET_TTS_FALLBACK")
	if err == nil || !strings.HasPrefix(err.Error(), "HANDSET_TTS_FALLBACK=openai: ") {
		t.Errorf("error %v, want it to start with the setting that chose the provider", err)
	}
}
