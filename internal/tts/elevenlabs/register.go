package elevenlabs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Provider is ElevenLabs in the catalogue of providers.
var Provider = registry.TTS{
	About: registry.About{
		Name:  name,
		Title: "ElevenLabs",
		Settings: []string{"ELEVENLABS_API_KEY", "HANDSET_ELEVENLABS_URL", "HANDSET_ELEVENLABS_VOICE",
			"HANDSET_ELEVENLABS_MODEL", "HANDSET_TTS_TIMEOUT"},
		Hints: registry.Hints{KeyVar: "ELEVENLABS_API_KEY", URLVar: "HANDSET_ELEVENLABS_URL",
			KeyWhere: "a key from the ElevenLabs settings",
			KeyFix:   "Set ELEVENLABS_API_KEY to a valid key from your ElevenLabs profile (it is sent to HANDSET_ELEVENLABS_URL).",
			ModelFix: "Check HANDSET_ELEVENLABS_VOICE and HANDSET_ELEVENLABS_MODEL name a voice and model your account has.",
			SlowFix:  "Use a faster voice model (HANDSET_ELEVENLABS_MODEL=eleven_flash_v2_5), or run Handset closer to ElevenLabs.",
			TestFix:  registry.Fixed("check ELEVENLABS_API_KEY and HANDSET_ELEVENLABS_VOICE; `handset doctor` tests both"),
		},
		Checks: checks,
	},
	New: func(b registry.Build) (voice.Synthesizer, error) {
		s := b.Settings
		return New(Options{
			Key:           s.Value("ELEVENLABS_API_KEY"),
			BaseURL:       s.Value("HANDSET_ELEVENLABS_URL"),
			Voice:         s.Value("HANDSET_ELEVENLABS_VOICE"),
			Model:         s.Value("HANDSET_ELEVENLABS_MODEL"),
			HeaderTimeout: s.Duration("HANDSET_TTS_TIMEOUT"),
			Logger:        b.Log,
		}), nil
	},
}

// checks are doctor's: the key, and the voice, both from one GET of the voice.
func checks(p registry.Probe) []doctor.Check {
	s := p.Settings
	base := strings.TrimRight(s.Value("HANDSET_ELEVENLABS_URL"), "/")
	voiceID := s.Value("HANDSET_ELEVENLABS_VOICE")
	key := s.Value("ELEVENLABS_API_KEY")
	var voiceAnswer doctor.Shared[doctor.Answer]
	get := func(ctx context.Context) (doctor.Answer, error) {
		return voiceAnswer.Get(ctx, func(ctx context.Context) (doctor.Answer, error) {
			var h map[string]string
			if key != "" {
				h = map[string]string{"xi-api-key": key}
			}
			u := base + "/v1/voices/" + url.PathEscape(voiceID)
			return doctor.Get(ctx, p.HTTP(u), u, h)
		})
	}
	// ElevenLabs answers a missing voice with 404 or, in older API versions, 400 voice_not_found.
	voiceMissing := func(a doctor.Answer) bool {
		return a.Status == http.StatusNotFound ||
			(a.Status == http.StatusBadRequest && (bytes.Contains(a.Body, []byte("voice_not_found")) || bytes.Contains(a.Body, []byte("voice_does_not_exist"))))
	}
	// A key scoped without voices_read is refused on this route though it can speak.
	scoped := func(a doctor.Answer) bool {
		return a.Status == http.StatusUnauthorized && bytes.Contains(a.Body, []byte("missing_permissions"))
	}
	return []doctor.Check{
		doctor.Net(p.Section, "elevenlabs key", func(ctx context.Context) doctor.Result {
			a, err := get(ctx)
			switch {
			case err != nil:
				return doctor.FailResult("no answer from "+base+": "+netfail.Describe(err), "check HANDSET_ELEVENLABS_URL (now from "+s.Source("HANDSET_ELEVENLABS_URL")+") and this machine's network")
			case scoped(a):
				return doctor.WarnResult("the key may not read voices (it lacks the voices_read permission), so the voice was not checked",
					"give the key voices_read in the ElevenLabs settings, or confirm speech with handset test")
			case a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden:
				if key == "" {
					return doctor.FailResult(fmt.Sprintf("%s wants a key (HTTP %d) and ELEVENLABS_API_KEY is missing", base, a.Status), "set ELEVENLABS_API_KEY: create one in the ElevenLabs settings (API Keys)")
				}
				return doctor.FailResult(fmt.Sprintf("ElevenLabs rejects ELEVENLABS_API_KEY (HTTP %d)", a.Status),
					"create a key in the ElevenLabs settings (API Keys) and set ELEVENLABS_API_KEY (now from "+s.Source("ELEVENLABS_API_KEY")+")")
			case a.Status == http.StatusOK || voiceMissing(a):
				return doctor.OKResult("ElevenLabs accepts the key")
			}
			return doctor.FailResult(fmt.Sprintf("GET %s/v1/voices/%s answered HTTP %d: %s", base, voiceID, a.Status, doctor.Snippet(a.Body)), "check HANDSET_ELEVENLABS_URL and ElevenLabs' status page")
		}),
		doctor.Net(p.Section, "elevenlabs voice", func(ctx context.Context) doctor.Result {
			a, err := get(ctx)
			switch {
			case err != nil || scoped(a):
				return doctor.SkipResult("not checked (see elevenlabs key)")
			case voiceMissing(a):
				return doctor.FailResult(fmt.Sprintf("there is no voice %q in this ElevenLabs account (HANDSET_ELEVENLABS_VOICE from %s)", voiceID, s.Source("HANDSET_ELEVENLABS_VOICE")),
					"set HANDSET_ELEVENLABS_VOICE to a voice id from My Voices in ElevenLabs (add library voices there first)")
			case a.Status != http.StatusOK:
				return doctor.SkipResult("not checked (see elevenlabs key)")
			}
			var v struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(a.Body, &v)
			return doctor.OKResult(fmt.Sprintf("voice %s (%s), model %s", voiceID, cmp.Or(v.Name, "unnamed"), s.Value("HANDSET_ELEVENLABS_MODEL")))
		}),
	}
}
