package deepgram_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/registry/registrytest"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/stt/deepgram"
	"github.com/handset-voice/handset/internal/voice"
)

func build(settings registrytest.Settings) (voice.Recognizer, error) {
	return deepgram.Provider.New(registry.Build{Settings: settings, Choice: "HANDSET_STT",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// Built from its settings alone, the recognizer reaches the server they name with their
// key, model and language, and hears what is said.
func TestBuiltFromSettingsTranscribes(t *testing.T) {
	fake := fakedeepgram.New(fakedeepgram.Options{Key: testKey, Transcripts: []string{"hello from the registry"}})
	ts := httptest.NewServer(fake)
	t.Cleanup(func() { ts.Close(); fake.Close() })

	rec, err := build(registrytest.Settings{"HANDSET_DEEPGRAM_URL": ts.URL, "DEEPGRAM_API_KEY": testKey,
		"HANDSET_DEEPGRAM_MODEL": "nova-2-phonecall", "HANDSET_DEEPGRAM_LANGUAGE": "en-GB"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t)
	st, err := rec.Stream(ctx, audio.Telephone, voice.StreamOptions{})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	for _, part := range [][]byte{speech(time.Second), silence(time.Second)} {
		if err := st.Write(part); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	got := collect(ctx, t, st, finals(1))
	if last := got[len(got)-1]; last.Text != "hello from the registry" {
		t.Errorf("final transcript %q, want the fake's script line", last.Text)
	}
	stats := fake.Stats()
	if len(stats) == 0 {
		t.Fatal("the fake saw no connection")
	}
	q := stats[0].Query
	if q.Get("model") != "nova-2-phonecall" || q.Get("language") != "en-GB" {
		t.Errorf("model %q, language %q: not the settings'", q.Get("model"), q.Get("language"))
	}
}

func TestBuildErrorNamesTheURLSetting(t *testing.T) {
	_, err := build(registrytest.Settings{"HANDSET_DEEPGRAM_URL": "ftp://example.com"})
	if err == nil || !strings.HasPrefix(err.Error(), "HANDSET_DEEPGRAM_URL: ") {
		t.Errorf("error %v, want it to start with the setting", err)
	}
}
