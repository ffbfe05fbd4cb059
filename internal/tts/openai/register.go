package openai

import (
	"fmt"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/openaiwire"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Provider is OpenAI speech, or a server that imitates it, in the catalogue.
var Provider = registry.TTS{
	About: registry.About{
		Name:  name,
		Title: "the OpenAI-compatible speech server",
		Settings: []string{"HANDSET_OPENAI_URL", "OPENAI_API_KEY", "HANDSET_OPENAI_TTS_MODEL",
			"HANDSET_OPENAI_TTS_VOICE", "HANDSET_TTS_TIMEOUT"},
		Hints: registry.Hints{KeyVar: "OPENAI_API_KEY", URLVar: "HANDSET_OPENAI_URL",
			KeyWhere: "a key the speech server at HANDSET_OPENAI_URL accepts",
			KeyFix:   "Set OPENAI_API_KEY to a key the server at HANDSET_OPENAI_URL accepts.",
			ModelFix: "Check HANDSET_OPENAI_TTS_MODEL and HANDSET_OPENAI_TTS_VOICE name a model and voice the server at HANDSET_OPENAI_URL has.",
			SlowFix:  "Use a faster speech model (HANDSET_OPENAI_TTS_MODEL), or a server closer to this host.",
			TestFix:  registry.Fixed("check HANDSET_OPENAI_URL, OPENAI_API_KEY and the model setting of the speech server"),
		},
		Checks: func(p registry.Probe) []doctor.Check {
			return openaiwire.SpeechChecks(p, "HANDSET_OPENAI_TTS_MODEL")
		},
	},
	New: func(b registry.Build) (voice.Synthesizer, error) {
		s := b.Settings
		t, err := New(Options{
			BaseURL:       s.Value("HANDSET_OPENAI_URL"),
			Key:           s.Value("OPENAI_API_KEY"),
			Model:         s.Value("HANDSET_OPENAI_TTS_MODEL"),
			Voice:         s.Value("HANDSET_OPENAI_TTS_VOICE"),
			HeaderTimeout: s.Duration("HANDSET_TTS_TIMEOUT"),
			Logger:        b.Log,
		})
		if err != nil {
			return nil, fmt.Errorf("%s=openai: %w", b.Choice, err)
		}
		return t, nil
	},
}
