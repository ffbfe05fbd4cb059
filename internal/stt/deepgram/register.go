package deepgram

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Provider is Deepgram in the catalogue of providers.
var Provider = registry.STT{
	About: registry.About{
		Name:  providerName,
		Title: "Deepgram",
		Settings: []string{"DEEPGRAM_API_KEY", "HANDSET_DEEPGRAM_URL", "HANDSET_DEEPGRAM_MODEL",
			"HANDSET_DEEPGRAM_LANGUAGE"},
		Hints: registry.Hints{KeyVar: "DEEPGRAM_API_KEY", URLVar: "HANDSET_DEEPGRAM_URL",
			KeyWhere: "a key from the Deepgram console",
			KeyFix:   "Set DEEPGRAM_API_KEY to a valid key from the Deepgram console (it is sent to HANDSET_DEEPGRAM_URL).",
			ModelFix: "Check HANDSET_DEEPGRAM_MODEL and HANDSET_DEEPGRAM_LANGUAGE name a model and language Deepgram offers.",
			TestFix:  registry.Fixed("check DEEPGRAM_API_KEY (and HANDSET_DEEPGRAM_URL); `handset doctor` tests the key"),
			MishearFix: func(s registry.Settings) string {
				return fmt.Sprintf("check HANDSET_DEEPGRAM_LANGUAGE (now %s) and HANDSET_DEEPGRAM_MODEL (now %s), and that the TTS voice speaks that language",
					s.Value("HANDSET_DEEPGRAM_LANGUAGE"), s.Value("HANDSET_DEEPGRAM_MODEL"))
			},
		},
		Checks: func(p registry.Probe) []doctor.Check {
			return []doctor.Check{doctor.Net(p.Section, "deepgram key", func(ctx context.Context) doctor.Result { return keyCheck(ctx, p) })}
		},
	},
	New: func(b registry.Build) (voice.Recognizer, error) {
		s := b.Settings
		r, err := New(Options{
			Key:      s.Value("DEEPGRAM_API_KEY"),
			BaseURL:  s.Value("HANDSET_DEEPGRAM_URL"),
			Model:    s.Value("HANDSET_DEEPGRAM_MODEL"),
			Language: s.Value("HANDSET_DEEPGRAM_LANGUAGE"),
			Logger:   b.Log,
		})
		if err != nil {
			return nil, fmt.Errorf("HANDSET_DEEPGRAM_URL: %w", err)
		}
		return r, nil
	},
}

// keyCheck asks Deepgram for the key's projects: the cheapest call that proves the key.
func keyCheck(ctx context.Context, p registry.Probe) doctor.Result {
	s := p.Settings
	base := strings.TrimRight(s.Value("HANDSET_DEEPGRAM_URL"), "/")
	key := s.Value("DEEPGRAM_API_KEY")
	var h map[string]string
	if key != "" {
		h = map[string]string{"Authorization": "Token " + key}
	}
	a, err := doctor.Get(ctx, p.HTTP(base+"/v1/projects"), base+"/v1/projects", h)
	switch {
	case err != nil:
		return doctor.FailResult("no answer from "+base+": "+netfail.Describe(err), "check HANDSET_DEEPGRAM_URL (now from "+s.Source("HANDSET_DEEPGRAM_URL")+") and this machine's network")
	case a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden:
		if key == "" {
			return doctor.FailResult(fmt.Sprintf("%s wants a key (HTTP %d) and DEEPGRAM_API_KEY is missing", base, a.Status), "set DEEPGRAM_API_KEY: create a key in the Deepgram console (API Keys)")
		}
		return doctor.FailResult(fmt.Sprintf("Deepgram rejects DEEPGRAM_API_KEY (HTTP %d)", a.Status),
			"create a key in the Deepgram console (API Keys) and set DEEPGRAM_API_KEY (now from "+s.Source("DEEPGRAM_API_KEY")+")")
	case a.Status == http.StatusNotFound:
		return doctor.WarnResult(base+" has no /v1/projects (a self-hosted server?): the key cannot be checked before a call", "run handset test: it streams speech to the recognizer")
	case a.Status != http.StatusOK:
		return doctor.FailResult(fmt.Sprintf("GET %s/v1/projects answered HTTP %d: %s", base, a.Status, doctor.Snippet(a.Body)), "check Deepgram's status page and HANDSET_DEEPGRAM_URL")
	}
	var projects struct {
		Projects []json.RawMessage `json:"projects"`
	}
	_ = json.Unmarshal(a.Body, &projects)
	if key == "" {
		return doctor.OKResult(base + " answers without a key")
	}
	return doctor.OKResult(fmt.Sprintf("Deepgram accepts the key (%d project(s)); model %s, language %s", len(projects.Projects), s.Value("HANDSET_DEEPGRAM_MODEL"), s.Value("HANDSET_DEEPGRAM_LANGUAGE")))
}
