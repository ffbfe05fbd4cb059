package openai

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/openaiwire"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// DefaultModel is the model asked for when HANDSET_AGENT_MODEL is empty.
const DefaultModel = "gpt-4o-mini"

// Provider is any OpenAI-compatible chat completions server as an agent runtime
// (HANDSET_AGENT=openai).
var Provider = registry.Agent{
	About: registry.About{
		Name:  DefaultName,
		Title: "the OpenAI-compatible endpoint",
		Settings: []string{"HANDSET_AGENT_URL", "HANDSET_OPENAI_URL", "HANDSET_AGENT_KEY", "HANDSET_AGENT_MODEL",
			"HANDSET_AGENT_TIMEOUT", "HANDSET_SYSTEM_PROMPT", "HANDSET_SYSTEM_PROMPT_AS_USER"},
		Hints: registry.Hints{
			KeyVar:   "HANDSET_AGENT_KEY",
			URLVar:   "HANDSET_AGENT_URL",
			KeyFix:   "Set HANDSET_AGENT_KEY (or OPENAI_API_KEY) to a key the server at HANDSET_AGENT_URL accepts.",
			ModelFix: "Check HANDSET_AGENT_MODEL names a model the server at HANDSET_AGENT_URL serves.",
			SlowFix:  "Use a faster model (HANDSET_AGENT_MODEL) or a server closer to this host." + registry.LongTurnFiller,
		},
		Checks: checks,
	},
	New: build,
	// The OpenAI root the speech providers use too; its key is borrowed only while the
	// agent talks to it (see KeyVar).
	DefaultURL:   func(s registry.Settings) string { return s.Value("HANDSET_OPENAI_URL") },
	DefaultModel: DefaultModel,
	KeyVar:       "OPENAI_API_KEY",
}

// baseURL is HANDSET_AGENT_URL, or the OpenAI root HANDSET_OPENAI_URL.
func baseURL(s registry.Settings) string {
	return cmp.Or(s.Value("HANDSET_AGENT_URL"), s.Value("HANDSET_OPENAI_URL"))
}

// model is HANDSET_AGENT_MODEL, or DefaultModel.
func model(s registry.Settings) string { return cmp.Or(s.Value("HANDSET_AGENT_MODEL"), DefaultModel) }

func build(b registry.Build) (voice.Agent, error) {
	s := b.Settings
	return New(Options{
		Name:         DefaultName,
		BaseURL:      baseURL(s),
		Key:          s.Value("HANDSET_AGENT_KEY"),
		Model:        model(s),
		SystemPrompt: s.Value("HANDSET_SYSTEM_PROMPT"),
		SystemAsUser: s.Bool("HANDSET_SYSTEM_PROMPT_AS_USER"),
		Timeout:      s.Duration("HANDSET_AGENT_TIMEOUT"),
		HTTPClient:   b.HTTP,
		Logger:       b.Log,
	})
}

// checks ask the server for its models, with the key: that answers whether it is there,
// takes the key, and has the model.
func checks(p registry.Probe) []doctor.Check {
	s := p.Settings
	base := strings.TrimRight(baseURL(s), "/")
	var models doctor.Shared[doctor.Answer]
	getModels := func(ctx context.Context) (doctor.Answer, error) {
		return models.Get(ctx, func(ctx context.Context) (doctor.Answer, error) {
			return doctor.Get(ctx, p.HTTP(base+"/models"), base+"/models", doctor.Bearer(s.Value("HANDSET_AGENT_KEY")))
		})
	}
	// The key may have come from another variable (OPENAI_API_KEY): the fix names that one.
	keyName := "HANDSET_AGENT_KEY"
	if _, via, ok := strings.Cut(s.Source("HANDSET_AGENT_KEY"), " via "); ok {
		keyName = via
	}
	keyStatus := "missing"
	if s.Value("HANDSET_AGENT_KEY") != "" {
		keyStatus = "set"
	}
	return []doctor.Check{
		doctor.Net(p.Section, "api", func(ctx context.Context) doctor.Result {
			a, err := getModels(ctx)
			switch {
			case err != nil:
				return doctor.FailResult("no answer from "+base+": "+netfail.Describe(err),
					"start the server or correct HANDSET_AGENT_URL (now from "+s.Source("HANDSET_AGENT_URL")+")")
			case a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden:
				return doctor.FailResult(fmt.Sprintf("%s rejects the key (HTTP %d)", base, a.Status),
					"set "+keyName+" to a key that server accepts (now "+keyStatus+", from "+s.Source("HANDSET_AGENT_KEY")+")")
			case a.Status == http.StatusNotFound:
				return doctor.WarnResult(base+" has no /models: the key and model cannot be checked before a call", "run handset test for one real turn")
			case a.Status != http.StatusOK:
				return doctor.FailResult(fmt.Sprintf("GET %s/models answered HTTP %d: %s", base, a.Status, doctor.Snippet(a.Body)),
					"check HANDSET_AGENT_URL: it is the API root, like https://api.openai.com/v1")
			}
			return doctor.OKResult(base + " accepts the key")
		}),
		doctor.Net(p.Section, "model", func(ctx context.Context) doctor.Result {
			a, err := getModels(ctx)
			if err != nil || a.Status != http.StatusOK {
				return doctor.SkipResult("not checked (see api)")
			}
			ids, ok := openaiwire.ModelList(a.Body)
			want := model(s)
			switch {
			case !ok:
				return doctor.WarnResult("the model list is not in OpenAI's shape: "+doctor.Snippet(a.Body), "run handset test for one real turn")
			case !slices.Contains(ids, want):
				return doctor.WarnResult(fmt.Sprintf("%q is not among the models %s lists (%s)", want, base, doctor.FirstFew(ids, 5)),
					"set HANDSET_AGENT_MODEL to one of them, unless the server takes models it does not list")
			}
			return doctor.OKResult(want + " is listed")
		}),
	}
}
