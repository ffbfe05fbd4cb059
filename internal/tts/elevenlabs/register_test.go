package elevenlabs_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/tts/elevenlabs"
)

// Built from its settings alone, the voice asks the server they name, with their key, for
// their voice and model, and plays the whole of what it answers.
func TestBuiltFromSettingsSpeaks(t *testing.T) {
	fake := fakeelevenlabs.New(fakeelevenlabs.Options{Key: "registry-key", Voices: []string{"voice-from-settings"}})
	srv := serve(t, fake)
	// The voice's default client: its idle connections must not outlive the test.
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	tts, err := elevenlabs.Provider.New(registry.Build{Settings: registrytest.Settings{
		"HANDSET_ELEVENLABS_URL": srv.URL, "ELEVENLABS_API_KEY": "registry-key",
		"HANDSET_ELEVENLABS_VOICE": "voice-from-settings", "HANDSET_ELEVENLABS_MODEL": "eleven_turbo_v2_5",
		"HANDSET_TTS_TIMEOUT": "5s",
	}, Choice: "HANDSET_TTS", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	const text = "Hello from the registry."
	rc, err := tts.Synthesize(ctx, text, audio.Telephone)
	if err != nil {
		t.Fatalf("Synthesize: %v", err)
	}
	got, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := fake.AudioBytes(text, audio.Telephone); len(got) != want {
		t.Errorf("%d bytes of audio, want %d", len(got), want)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Voice != "voice-from-settings" || reqs[0].Model != "eleven_turbo_v2_5" || !reqs[0].KeyPresent {
		t.Errorf("requests %+v, want one for the settings' voice and model, with a key", reqs)
	}
}
