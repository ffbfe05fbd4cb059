package gateway

import (
	"github.com/handset-voice/handset/internal/bridge"
	"github.com/handset-voice/handset/internal/session"
)

// mountBridge serves the agent bridge (HANDSET_BRIDGE) in front of the calls' runtime,
// with its own token, and the calls' caller hash so a number a client names is keyed
// exactly as a call from it would be.
func (s *server) mountBridge() error {
	b, err := bridge.New(bridge.Options{
		Agent: s.prov.agent, Token: s.cfg.Bridge.Token.Reveal(), Logger: s.log,
		CallerHash: func(n string) string { return session.CallerHash(s.sec.callerHash, n) },
	})
	if err != nil {
		return err
	}
	b.Register(s.mux)
	s.log.Info("agent bridge on", "path", "/v1/chat/completions", "runtime", s.prov.agent.Name())
	return nil
}
