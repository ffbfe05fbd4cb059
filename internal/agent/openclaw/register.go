package openclaw

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	agentopenai "github.com/handset-voice/handset/internal/agent/openai"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// How Handset finds a gateway when the settings say nothing: its address on this machine,
// the agent it usually has, and the variable OpenClaw keeps its token in.
const (
	DefaultAgentURL = "http://127.0.0.1:18789"
	DefaultModel    = "openclaw/main"
	KeyVar          = "OPENCLAW_GATEWAY_TOKEN"
)

// SharedAgents are ids that usually name an agent with everything enabled; a phone line
// to one of them should be a deliberate choice.
var SharedAgents = map[string]bool{"main": true, "default": true, "master": true, "admin": true}

// Provider is the OpenClaw gateway as an agent runtime (HANDSET_AGENT=openclaw).
var Provider = registry.Agent{
	About: registry.About{
		Name:  providerName,
		Title: "the OpenClaw gateway",
		Settings: []string{"HANDSET_AGENT_URL", "HANDSET_AGENT_KEY", "HANDSET_AGENT_MODEL", "HANDSET_AGENT_TRANSPORT",
			"HANDSET_AGENT_TIMEOUT", "HANDSET_SYSTEM_PROMPT", "HANDSET_SYSTEM_PROMPT_AS_USER",
			"HANDSET_SESSION_KEY", "HANDSET_SESSION_KEY_FROM"},
		Hints: registry.Hints{
			KeyVar:   "HANDSET_AGENT_KEY",
			URLVar:   "HANDSET_AGENT_URL",
			KeyFix:   "Set HANDSET_AGENT_KEY (or OPENCLAW_GATEWAY_TOKEN) to the gateway's token.",
			ModelFix: "Check HANDSET_AGENT_MODEL is openclaw/<agent id> for an agent the gateway has.",
			SlowFix:  "The OpenClaw agent is slow to start answering: a faster model for that agent, or fewer tools before the first words." + registry.LongTurnFiller,
			URLHint:  " and the gateway is running",
			TestFix: func(s registry.Settings, err error) string {
				return Fix(s, err, "run `handset doctor` and `handset agents`; is the gateway running, and is OPENCLAW_GATEWAY_TOKEN its token?")
			},
		},
		Checks: checks,
	},
	New:          build,
	DefaultURL:   func(registry.Settings) string { return DefaultAgentURL },
	DefaultModel: DefaultModel,
	KeyVar:       KeyVar,
}

// StartupProbe bounds how long start-up waits on the gateway to list its agents.
const StartupProbe = 10 * time.Second

// gatewayURL is HANDSET_AGENT_URL, or the gateway on this machine.
func gatewayURL(s registry.Settings) string {
	return cmp.Or(s.Value("HANDSET_AGENT_URL"), DefaultAgentURL)
}

// agentModel is HANDSET_AGENT_MODEL, or the agent a gateway usually has.
func agentModel(s registry.Settings) string {
	return cmp.Or(s.Value("HANDSET_AGENT_MODEL"), DefaultModel)
}

// build connects the OpenClaw gateway. It asks the gateway which agents exist and refuses
// to guess when several do and none is named.
func build(b registry.Build) (voice.Agent, error) {
	s, log := b.Settings, cmp.Or(b.Log, slog.New(slog.DiscardHandler))
	keys, err := session.ParseKeyFactory(s.Value("HANDSET_SESSION_KEY_FROM"), s.Value("HANDSET_SESSION_KEY"))
	if err != nil {
		return nil, err
	}
	named := ""
	if s.Source("HANDSET_AGENT_MODEL") != "default" {
		named = strings.TrimPrefix(agentModel(s), "openclaw/")
	}
	wsURL, httpURL, err := GatewayURLs(gatewayURL(s))
	if err != nil {
		return nil, err
	}
	key, prompt, timeout := s.Value("HANDSET_AGENT_KEY"), s.Value("HANDSET_SYSTEM_PROMPT"), s.Duration("HANDSET_AGENT_TIMEOUT")
	opts := Options{
		URL: wsURL, Token: key, SessionKey: keys,
		VoicePrompt: prompt, Timeout: timeout, HTTPClient: b.HTTP, Logger: log,
	}
	chosen, err := chooseAgent(s, opts, named, log)
	if err != nil {
		return nil, err
	}
	if s.Value("HANDSET_AGENT_TRANSPORT") == "http" {
		model := "openclaw"
		if chosen != "" {
			model += "/" + chosen
		}
		return agentopenai.New(agentopenai.Options{
			Name:         "openclaw",
			BaseURL:      httpURL + "/v1",
			Key:          key,
			Model:        model,
			SystemPrompt: prompt,
			SystemAsUser: s.Bool("HANDSET_SYSTEM_PROMPT_AS_USER"),
			// The gateway keeps the conversation in the session: send only the new turn,
			// with a note of what it missed on the line.
			KeepsConversation: true,
			HeadersFor: func(ctx context.Context, _ voice.TurnRequest) map[string]string {
				sc, _ := session.From(ctx)
				return map[string]string{"x-openclaw-session-key": SessionKey(chosen, keys, sc)}
			},
			// While the gateway's plugins load, the endpoint answers 503: asked again, within the turn.
			HTTPClient: waitingClient(b.HTTP),
			Timeout:    timeout,
			Logger:     log,
		})
	}
	opts.Agent = chosen
	return New(opts)
}

// chooseAgent asks the gateway for its agents and applies the selection rule
// (SelectAgent), waiting up to StartupProbe while the gateway says it is starting. A
// gateway that is still starting, or does not answer yet, does not stop start-up: Handset
// goes on with the agent the configuration names ("" when it names none, which leaves the
// choice to the gateway: its only agent, or a refusal when it has several), each turn waits
// for a starting gateway within its own limit, and the gateway refuses an agent it does not
// have. A gateway that answers and refuses (the token, the agent) stops start-up.
func chooseAgent(s registry.Settings, opts Options, named string, log *slog.Logger) (string, error) {
	probe, err := New(opts)
	if err != nil {
		return "", err
	}
	defer probe.Close()
	ctx, cancel := context.WithTimeout(context.Background(), StartupProbe)
	defer cancel()
	agents, err := probe.ListAgents(ctx)
	if err != nil {
		sym := SymptomOf(s, err)
		detail, fix, ok := sym.Advice(s, err)
		switch {
		case sym == SymptomStarting || sym == SymptomUnreachable:
			chosen := AgentID(named)
			log.Warn("the OpenClaw gateway is not ready: Handset starts without it; turns wait while it is starting, and fail while nothing answers",
				"detail", detail, "agent", cmp.Or(chosen, "the gateway's only agent"), "check", "handset doctor")
			return chosen, nil
		case ok:
			return "", fmt.Errorf("%s (%s)", detail, fix)
		}
		return "", fmt.Errorf("OpenClaw gateway at %s: %w (run handset doctor)", opts.URL, err)
	}
	chosen, err := SelectAgent(named, agents)
	if err != nil {
		return "", err
	}
	log.Info("openclaw agent", "agent", chosen, "transport", cmp.Or(s.Value("HANDSET_AGENT_TRANSPORT"), "ws"))
	return chosen, nil
}

// waitingClient is client (nil: Go's default) with OpenClaw's "still starting" answers
// asked again, keeping client's TLS set-up and timeouts.
func waitingClient(client *http.Client) *http.Client {
	if client == nil {
		return &http.Client{Transport: WaitingTransport(nil)}
	}
	c := *client
	c.Transport = WaitingTransport(client.Transport)
	return &c
}
