package gateway

import (
	"log/slog"

	"github.com/handset-voice/handset/internal/bridge"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/edge"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// mountBridge serves the agent bridge (HANDSET_BRIDGE) in front of the calls' runtime,
// with its own token, and the calls' caller hash so a number a client names is keyed
// exactly as a call from it would be.
func (s *server) mountBridge() error {
	b, err := bridge.New(bridgeOptions(s.cfg, s.prov.agent, s.sec.callerHash, s.metrics, s.log))
	if err != nil {
		return err
	}
	b.Register(s.mux)
	s.bridge = b
	s.log.Info("agent bridge on", "path", "/v1/chat/completions", "runtime", s.prov.agent.Name())
	return nil
}

// bridgeOptions are the bridge's settings, on serve and on `handset bridge` alike.
func bridgeOptions(cfg *config.Config, agent voice.Agent, secret []byte, m *obs.Metrics, log *slog.Logger) bridge.Options {
	return bridge.Options{Agent: agent, Tokens: cfg.BridgeTokens(), Rate: cfg.Bridge.Rate, MaxTurns: cfg.Bridge.MaxTurns,
		Observer: m, Vouch: edge.Vouch, Logger: log, DataDir: cfg.DataDir,
		Spoken:     bridge.Spoken{First: cfg.Messages.First, Silence: cfg.Messages.Silence, Error: cfg.Messages.Error},
		CallerHash: func(n string) string { return session.CallerHash(secret, n) }}
}
