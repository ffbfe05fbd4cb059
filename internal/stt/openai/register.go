package openai

import (
	"fmt"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/openaiwire"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Provider is OpenAI transcription, or a server that imitates it, in the catalogue.
var Provider = registry.STT{
	About: registry.About{
		Name:     name,
		Title:    "the OpenAI-compatible transcription server",
		Settings: []string{"HANDSET_OPENAI_URL", "OPENAI_API_KEY", "HANDSET_OPENAI_STT_MODEL"},
		Hints: registry.Hints{KeyVar: "OPENAI_API_KEY", URLVar: "HANDSET_OPENAI_URL",
			KeyWhere: "a key the speech server at HANDSET_OPENAI_URL accepts",
			KeyFix:   "Set OPENAI_API_KEY to a key the server at HANDSET_OPENAI_URL accepts.",
			ModelFix: "Check HANDSET_OPENAI_STT_MODEL names a model the server at HANDSET_OPENAI_URL serves.",
			TestFix:  registry.Fixed("check HANDSET_OPENAI_URL, OPENAI_API_KEY and the model setting of the speech server"),
			MishearFix: func(s registry.Settings) string {
				return fmt.Sprintf("check HANDSET_OPENAI_STT_MODEL (now %s) on the speech server, and that the TTS voice speaks the caller's language", s.Value("HANDSET_OPENAI_STT_MODEL"))
			},
		},
		Checks: func(p registry.Probe) []doctor.Check {
			return openaiwire.SpeechChecks(p, "HANDSET_OPENAI_STT_MODEL")
		},
	},
	New: func(b registry.Build) (voice.Recognizer, error) {
		s := b.Settings
		r, err := New(Options{
			BaseURL: s.Value("HANDSET_OPENAI_URL"),
			Key:     s.Value("OPENAI_API_KEY"),
			Model:   s.Value("HANDSET_OPENAI_STT_MODEL"),
			Logger:  b.Log,
		})
		if err != nil {
			return nil, fmt.Errorf("%s=openai: %w", b.Choice, err)
		}
		return r, nil
	},
}
