package hermes

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// KeyVar is the variable in ~/.hermes/.env holding the key the API server was started with.
const KeyVar = "API_SERVER_KEY"

// Provider is Hermes Agent as an agent runtime (HANDSET_AGENT=hermes).
var Provider = registry.Agent{
	About: registry.About{
		Name:  providerName,
		Title: "Hermes Agent",
		Settings: []string{"HANDSET_AGENT_URL", "HANDSET_AGENT_KEY", "HANDSET_AGENT_MODEL", "HANDSET_AGENT_TRANSPORT",
			"HANDSET_AGENT_TIMEOUT", "HANDSET_SYSTEM_PROMPT", "HANDSET_SESSION_KEY", "HANDSET_SESSION_KEY_FROM"},
		Hints: registry.Hints{
			KeyVar:   "HANDSET_AGENT_KEY",
			URLVar:   "HANDSET_AGENT_URL",
			KeyFix:   "Set HANDSET_AGENT_KEY (or API_SERVER_KEY) to the API_SERVER_KEY in ~/.hermes/.env.",
			ModelFix: "Check HANDSET_AGENT_MODEL (hermes-agent by default) and HANDSET_AGENT_TRANSPORT.",
			SlowFix:  "Hermes is slow to start answering: a faster model in Hermes' own configuration, or fewer tools before the first words." + registry.LongTurnFiller,
			URLHint:  " and `hermes gateway` is running with API_SERVER_ENABLED=true",
			TestFix:  registry.Fixed("run `handset doctor`; is `hermes gateway` running with API_SERVER_ENABLED=true, and is HANDSET_AGENT_KEY (or API_SERVER_KEY) its key?"),
		},
		Checks: checks,
	},
	New:          build,
	DefaultURL:   func(registry.Settings) string { return DefaultBaseURL },
	DefaultModel: DefaultModel,
	KeyVar:       KeyVar,
}

// startupProbe bounds how long start-up waits on Hermes to say what it supports.
const startupProbe = 10 * time.Second

// minTimeout: Hermes sends a keepalive every 30 s while a tool runs; a shorter silence
// limit would fail every long tool turn.
const minTimeout = 45 * time.Second

// build connects Hermes Agent: the runs API unless HANDSET_AGENT_TRANSPORT=chat.
func build(b registry.Build) (voice.Agent, error) {
	s, log := b.Settings, cmp.Or(b.Log, slog.New(slog.DiscardHandler))
	keys, err := session.ParseKeyFactory(s.Value("HANDSET_SESSION_KEY_FROM"), s.Value("HANDSET_SESSION_KEY"))
	if err != nil {
		return nil, err
	}
	base := baseURL(s)
	a, err := New(Options{
		BaseURL:      base,
		Key:          s.Value("HANDSET_AGENT_KEY"),
		Model:        model(s),
		SystemPrompt: s.Value("HANDSET_SYSTEM_PROMPT"),
		Transport:    s.Value("HANDSET_AGENT_TRANSPORT"),
		SessionKey:   keys,
		Timeout:      max(s.Duration("HANDSET_AGENT_TIMEOUT"), minTimeout),
		HTTPClient:   b.HTTP,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	// What does this Hermes support? Without the runs API the adapter uses chat.
	ctx, cancel := context.WithTimeout(context.Background(), startupProbe)
	defer cancel()
	if _, err := a.Probe(ctx); err != nil {
		return nil, fmt.Errorf("Hermes API server at %s: %w (is `hermes gateway` running with API_SERVER_ENABLED=true, and is the key its API_SERVER_KEY?)", base, err)
	}
	log.Info("hermes", "transport", a.Transport())
	return a, nil
}

// baseURL is HANDSET_AGENT_URL, or where Hermes listens by default.
func baseURL(s registry.Settings) string { return cmp.Or(s.Value("HANDSET_AGENT_URL"), DefaultBaseURL) }

// model is HANDSET_AGENT_MODEL, or Hermes' own name for its model.
func model(s registry.Settings) string { return cmp.Or(s.Value("HANDSET_AGENT_MODEL"), DefaultModel) }
