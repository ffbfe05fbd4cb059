package cli

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

// startupProbe bounds how long start-up waits on a runtime to say what it supports.
const startupProbe = 10 * time.Second

func sessionKeys(cfg *config.Config) (session.KeyFactory, error) {
	keys, err := session.ParseKeyFactory(cfg.Session.KeyFrom, cfg.Session.Key)
	if err != nil {
		return nil, &usageError{msg: err.Error(), hint: "see docs/runtimes.md, memory per caller"}
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
	ctx, cancel := context.WithTimeout(context.Background(), startupProbe)
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
	wsURL := strings.Replace(strings.Replace(cfg.AgentURL(), "https://", "wss://", 1), "http://", "ws://", 1)
	opts := openclaw.Options{
		URL: wsURL, Token: cfg.Agent.Key.Reveal(), SessionKey: keys,
		VoicePrompt: cfg.Agent.SystemPrompt, Timeout: cfg.Agent.Timeout, HTTPClient: client, Logger: log,
	}
	probe, err := openclaw.New(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), startupProbe)
	agents, err := probe.ListAgents(ctx)
	cancel()
	if err != nil {
		_ = probe.Close()
		return nil, fmt.Errorf("OpenClaw gateway at %s: %w (is it running? is OPENCLAW_GATEWAY_TOKEN its token?)", wsURL, err)
	}
	chosen, err := openclaw.SelectAgent(named, agents)
	if err != nil {
		_ = probe.Close()
		return nil, err
	}
	log.Info("openclaw agent", "agent", chosen, "transport", cmp.Or(cfg.Agent.Transport, "ws"))
	if cfg.Agent.Transport == "http" {
		_ = probe.Close()
		return agentopenai.New(agentopenai.Options{
			Name:         "openclaw",
			BaseURL:      strings.TrimSuffix(cfg.AgentURL(), "/") + "/v1",
			Key:          cfg.Agent.Key.Reveal(),
			Model:        "openclaw/" + chosen,
			SystemPrompt: cfg.Agent.SystemPrompt,
			SystemAsUser: cfg.Agent.SystemPromptAsUser,
			// The gateway keeps the conversation in the session: send only the new turn.
			LatestTurnOnly: true,
			HeadersFor: func(ctx context.Context, _ voice.TurnRequest) map[string]string {
				sc, _ := session.From(ctx)
				return map[string]string{"x-openclaw-session-key": openclaw.SessionKey(chosen, keys, sc)}
			},
			Timeout:    cfg.Agent.Timeout,
			HTTPClient: client,
			Logger:     log,
		})
	}
	_ = probe.Close()
	opts.Agent = chosen
	return openclaw.New(opts)
}
