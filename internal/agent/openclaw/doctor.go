package openclaw

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/openaiwire"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// namedAgent is the agent HANDSET_AGENT_MODEL names, or "" when it was left at its default.
func namedAgent(s registry.Settings) string {
	if s.Source("HANDSET_AGENT_MODEL") != "default" {
		return agentModel(s)
	}
	return ""
}

// checks are the gateway's doctor checks: it lists its agents for the token, calls reach
// one, and with HANDSET_AGENT_TRANSPORT=http its OpenAI-compatible endpoint is on.
func checks(p registry.Probe) []doctor.Check {
	s := p.Settings
	wsURL, httpURL, err := GatewayURLs(gatewayURL(s))
	if err != nil {
		return []doctor.Check{doctor.Fixed(p.Section, "gateway", doctor.FailResult(err.Error(), "correct HANDSET_AGENT_URL (see config)"))}
	}
	key, named := s.Value("HANDSET_AGENT_KEY"), namedAgent(s)
	var roster doctor.Shared[[]AgentInfo]
	list := func(ctx context.Context) ([]AgentInfo, error) {
		return roster.Get(ctx, func(ctx context.Context) ([]AgentInfo, error) {
			c, err := New(Options{URL: wsURL, Token: key, HTTPClient: p.HTTP(gatewayURL(s))})
			if err != nil {
				return nil, err
			}
			defer c.Close()
			// A gateway that is starting is asked again until just before the check's
			// own limit, so the check can still say so.
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) > 2*time.Second {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, dl.Add(-time.Second))
				defer cancel()
			}
			return c.ListAgents(ctx)
		})
	}
	// failure says what the shared diagnosis knows about err, or general.
	failure := func(err error, general doctor.Result) doctor.Result {
		sym := SymptomOf(s, err)
		detail, fix, ok := sym.Advice(s, err)
		switch {
		case !ok:
			return general
		case sym == SymptomStarting:
			return doctor.WarnResult(detail, fix)
		}
		return doctor.FailResult(detail, fix)
	}
	cs := []doctor.Check{
		doctor.Net(p.Section, "gateway", func(ctx context.Context) doctor.Result {
			agents, err := list(ctx)
			if err != nil {
				return failure(err, doctor.FailResult("the gateway at "+wsURL+" did not list its agents: "+err.Error(),
					"check the gateway's logs; `handset agents` shows the same exchange"))
			}
			ids := make([]string, len(agents))
			for i, a := range agents {
				ids[i] = a.ID
			}
			if key == "" {
				return doctor.WarnResult(fmt.Sprintf("%s let Handset in without a token (gateway.auth.mode none): anything that reaches it can use its %d agent(s): %s", wsURL, len(agents), doctor.FirstFew(ids, 8)),
					"unless that is deliberate, give the gateway a token (gateway.auth.token in ~/.openclaw/openclaw.json) and set "+KeyVar+" (or HANDSET_AGENT_KEY) to it")
			}
			return doctor.OKResult(fmt.Sprintf("%s accepts the token; %d agent(s): %s", wsURL, len(agents), doctor.FirstFew(ids, 8)))
		}),
		doctor.Net(p.Section, "agent", func(ctx context.Context) doctor.Result {
			agents, err := list(ctx)
			if err != nil {
				return doctor.SkipResult("not checked (see gateway)")
			}
			chosen, err := SelectAgent(named, agents)
			if err != nil {
				return failure(err, doctor.FailResult("calls cannot reach an agent: "+err.Error(), "set HANDSET_AGENT_MODEL=openclaw/<agent> to one of them"))
			}
			if named == "" && SharedAgents[chosen] {
				return doctor.WarnResult(fmt.Sprintf("calls reach %q, the gateway's only agent, which usually has every tool and your own memory", chosen),
					"give phone callers an agent of their own and name it: HANDSET_AGENT_MODEL=openclaw/<agent> (or HANDSET_AGENT_MODEL=openclaw/"+chosen+" to choose this one deliberately)")
			}
			how := "HANDSET_AGENT_MODEL from " + s.Source("HANDSET_AGENT_MODEL")
			if named == "" {
				how = "the gateway's only agent"
			}
			return doctor.OKResult(fmt.Sprintf("calls reach %q (%s)", chosen, how))
		}),
	}
	if s.Value("HANDSET_AGENT_TRANSPORT") == "http" {
		base := httpURL + "/v1"
		cs = append(cs, doctor.Net(p.Section, "http endpoint", func(ctx context.Context) doctor.Result {
			a, err := doctor.Get(ctx, p.HTTP(base+"/models"), base+"/models", doctor.Bearer(key))
			switch {
			case err != nil:
				return doctor.FailResult("no answer from "+base+": "+netfail.Describe(err), "start the gateway (openclaw gateway) and check HANDSET_AGENT_URL")
			case a.Status == http.StatusNotFound, a.Status == http.StatusUnauthorized, a.Status == http.StatusForbidden,
				a.Status == http.StatusServiceUnavailable:
				return failure(&voice.ProviderError{Provider: providerName, Op: "GET /v1/models", Status: a.Status}, doctor.FailResult("", ""))
			case a.Status != http.StatusOK:
				return doctor.FailResult(fmt.Sprintf("GET %s/models answered HTTP %d: %s", base, a.Status, doctor.Snippet(a.Body)), "check the gateway's logs")
			}
			ids, _ := openaiwire.ModelList(a.Body)
			if agents, err := list(ctx); err == nil {
				if chosen, err := SelectAgent(named, agents); err == nil && !slices.Contains(ids, "openclaw/"+chosen) {
					return doctor.WarnResult(fmt.Sprintf("enabled, but it does not list openclaw/%s (it lists %s)", chosen, doctor.FirstFew(ids, 6)),
						"check the agent's id with `handset agents`")
				}
			}
			return doctor.OKResult("enabled at " + base)
		}))
	}
	return cs
}
