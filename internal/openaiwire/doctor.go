package openaiwire

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/registry"
)

// SpeechChecks are doctor's checks of the OpenAI account (or compatible server) the speech
// providers share, HANDSET_OPENAI_URL and OPENAI_API_KEY: that the key is accepted, and that
// the model modelEnv names is listed. Both read one GET /models.
func SpeechChecks(p registry.Probe, modelEnv string) []doctor.Check {
	s := p.Settings
	base := strings.TrimRight(s.Value("HANDSET_OPENAI_URL"), "/")
	model := s.Value(modelEnv)
	var models doctor.Shared[doctor.Answer]
	getModels := func(ctx context.Context) (doctor.Answer, error) {
		return models.Get(ctx, func(ctx context.Context) (doctor.Answer, error) {
			var h map[string]string
			if key := s.Value("OPENAI_API_KEY"); key != "" {
				h = map[string]string{"Authorization": "Bearer " + key}
			}
			return doctor.Get(ctx, p.HTTP(base+"/models"), base+"/models", h)
		})
	}
	return []doctor.Check{
		doctor.Net(p.Section, "openai key", func(ctx context.Context) doctor.Result {
			a, err := getModels(ctx)
			switch {
			case err != nil:
				return doctor.FailResult("no answer from "+base+": "+netfail.Describe(err), "check HANDSET_OPENAI_URL (now from "+s.Source("HANDSET_OPENAI_URL")+")")
			case a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden:
				return doctor.FailResult(fmt.Sprintf("%s rejects OPENAI_API_KEY (HTTP %d)", base, a.Status),
					"set OPENAI_API_KEY to a valid key (now "+keyStatus(s.Value("OPENAI_API_KEY"))+", from "+s.Source("OPENAI_API_KEY")+")")
			case a.Status == http.StatusNotFound:
				return doctor.WarnResult(base+" has no /models: the key cannot be checked before a call", "run handset test")
			case a.Status != http.StatusOK:
				return doctor.FailResult(fmt.Sprintf("GET %s/models answered HTTP %d: %s", base, a.Status, doctor.Snippet(a.Body)), "check HANDSET_OPENAI_URL")
			}
			return doctor.OKResult(base + " accepts the key")
		}),
		doctor.Net(p.Section, "openai model", func(ctx context.Context) doctor.Result {
			a, err := getModels(ctx)
			if err != nil || a.Status != http.StatusOK {
				return doctor.SkipResult("not checked (see openai key)")
			}
			ids, ok := ModelList(a.Body)
			if !ok || !slices.Contains(ids, model) {
				return doctor.WarnResult(fmt.Sprintf("%q is not among the models %s lists (%s)", model, base, doctor.FirstFew(ids, 5)),
					"set "+modelEnv+" to one it serves, unless it takes models it does not list")
			}
			return doctor.OKResult(model + " is listed")
		}),
	}
}

// keyStatus is how doctor shows a key without showing it.
func keyStatus(key string) string {
	if key != "" {
		return "set"
	}
	return "missing"
}

// ModelList reads an OpenAI-style model list ({"data":[{"id"}]}).
func ModelList(body []byte) ([]string, bool) {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil || list.Data == nil {
		return nil, false
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, true
}
