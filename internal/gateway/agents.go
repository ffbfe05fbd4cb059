package gateway

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/agent/hermes"
	agentopenai "github.com/handset-voice/handset/internal/agent/openai"
	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// StartupProbe bounds how long start-up waits on a runtime to say what it supports.
const StartupProbe = 10 * time.Second

func sessionKeys(cfg *config.Config) (session.KeyFactory, error) {
	keys, err := session.ParseKeyFactory(cfg.Session.KeyFrom, cfg.Session.Key)
	if err != nil {
		return nil, &settingError{msg: err.Error(), hint: "see docs/runtimes.md, memory per caller"}
	}
	return keys, nil
}

// buildHermes connects Hermes Agent: the runs API unless HANDSET_AGENT_TRANSPORT=chat.
func buildHermes(cfg *config.Config, client *http.Client, log *slog.Logger) (voice.Agent, error) {
	keys, err := sessionKeys(cfg)
	if err != nil {
		return nil, err
	}
	a, err := hermes.New(hermes.Options{
		BaseURL:      cfg.AgentURL(),
		Key:          cfg.Agent.Key.Reveal(),
		Model:        cfg.AgentModel(),
		SystemPrompt: cfg.Agent.SystemPrompt,
		Transport:    cfg.Agent.Transport,
		SessionKey:   keys,
		Timeout:      max(cfg.Agent.Timeout, hermesMinTimeout),
		HTTPClient:   client,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	// What does this Hermes support? Without the runs API the adapter uses chat.
	ctx, cancel := context.WithTimeout(context.Background(), StartupProbe)
	defer cancel()
	if _, err := a.Probe(ctx); err != nil {
		return nil, fmt.Errorf("Hermes API server at %s: %w (is `hermes gateway` running with API_SERVER_ENABLED=true, and is the key its API_SERVER_KEY?)", cfg.AgentURL(), err)
	}
	log.Info("hermes", "transport", a.Transport())
	return a, nil
}

// hermesMinTimeout: Hermes sends a keepalive every 30 s while a tool runs; a shorter
// silence limit would fail every long tool turn.
const hermesMinTimeout = 45 * time.Second

// buildOpenClaw connects the OpenClaw gateway. It asks the gateway which agents exist and
// refuses to guess when several do and none is named.
func buildOpenClaw(cfg *config.Config, client *http.Client, log *slog.Logger) (voice.Agent, error) {
	keys, err := sessionKeys(cfg)
	if err != nil {
		return nil, err
	}
	named := ""
	if cfg.Source("HANDSET_AGENT_MODEL") != "default" {
		named = strings.TrimPrefix(cfg.AgentModel(), "openclaw/")
	}
	wsURL, httpURL, err := openclaw.GatewayURLs(cfg.AgentURL())
	if err != nil {
		return nil, err
	}
	opts := openclaw.Options{
		URL: wsURL, Token: cfg.Agent.Key.Reveal(), SessionKey: keys,
		VoicePrompt: cfg.Agent.SystemPrompt, Timeout: cfg.Agent.Timeout, HTTPClient: client, Logger: log,
	}
	chosen, err := chooseOpenClawAgent(cfg, opts, named, log)
	if err != nil {
		return nil, err
	}
	if cfg.Agent.Transport == "http" {
		model := "openclaw"
		if chosen != "" {
			model += "/" + chosen
		}
		return agentopenai.New(agentopenai.Options{
			Name:         "openclaw",
			BaseURL:      httpURL + "/v1",
			Key:          cfg.Agent.Key.Reveal(),
			Model:        model,
			SystemPrompt: cfg.Agent.SystemPrompt,
			SystemAsUser: cfg.Agent.SystemPromptAsUser,
			// The gateway keeps the conversation in the session: send only the new turn,
			// with a note of what it missed on the line.
			KeepsConversation: true,
			HeadersFor: func(ctx context.Context, _ voice.TurnRequest) map[string]string {
				sc, _ := session.From(ctx)
				return map[string]string{"x-openclaw-session-key": openclaw.SessionKey(chosen, keys, sc)}
			},
			// While the gateway's plugins load, the endpoint answers 503: asked again, within the turn.
			HTTPClient: waitingClient(client),
			Timeout:    cfg.Agent.Timeout,
			Logger:     log,
		})
	}
	opts.Agent = chosen
	return openclaw.New(opts)
}

// chooseOpenClawAgent asks the gateway for its agents and applies the selection rule
// (SelectAgent), waiting up to StartupProbe while the gateway says it is starting. A
// gateway that is still starting, or does not answer yet, does not stop start-up: Handset
// goes on with the agent the configuration names ("" when it names none, which leaves the
// choice to the gateway: its only agent, or a refusal when it has several), each turn waits
// for a starting gateway within its own limit, and the gateway refuses an agent it does not
// have. A gateway that answers and refuses (the token, the agent) stops start-up.
func chooseOpenClawAgent(cfg *config.Config, opts openclaw.Options, named string, log *slog.Logger) (string, error) {
	probe, err := openclaw.New(opts)
	if err != nil {
		return "", err
	}
	defer probe.Close()
	ctx, cancel := context.WithTimeout(context.Background(), StartupProbe)
	defer cancel()
	agents, err := probe.ListAgents(ctx)
	if err != nil {
		sym := DiagnoseOpenClaw(cfg, err)
		detail, fix, ok := sym.Advice(cfg, err)
		switch {
		case sym == ocStarting || sym == ocUnreachable:
			chosen := openclaw.AgentID(named)
			log.Warn("the OpenClaw gateway is not ready: Handset starts without it; turns wait while it is starting, and fail while nothing answers",
				"detail", detail, "agent", cmp.Or(chosen, "the gateway's only agent"), "check", "handset doctor")
			return chosen, nil
		case ok:
			return "", fmt.Errorf("%s (%s)", detail, fix)
		}
		return "", fmt.Errorf("OpenClaw gateway at %s: %w (run handset doctor)", opts.URL, err)
	}
	chosen, err := openclaw.SelectAgent(named, agents)
	if err != nil {
		return "", err
	}
	log.Info("openclaw agent", "agent", chosen, "transport", cmp.Or(cfg.Agent.Transport, "ws"))
	return chosen, nil
}

// waitingClient is client (nil: Go's default) with OpenClaw's "still starting" answers
// asked again, keeping client's TLS set-up and timeouts.
func waitingClient(client *http.Client) *http.Client {
	if client == nil {
		return &http.Client{Transport: openclaw.WaitingTransport(nil)}
	}
	c := *client
	c.Transport = openclaw.WaitingTransport(client.Transport)
	return &c
}
