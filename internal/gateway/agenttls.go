package gateway

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/handset-voice/handset/internal/agent/httpagent"
	"github.com/handset-voice/handset/internal/config"
)

// AgentTLS is the TLS configuration of every connection to the agent runtime: each
// adapter's HTTP requests and the OpenClaw WebSocket, in serve, test, agents and doctor
// alike. It trusts the system's certificate authorities plus those of
// HANDSET_AGENT_CA_FILE, or, with HANDSET_AGENT_TLS_INSECURE, checks nothing.
func AgentTLS(cfg *config.Config) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Agent.TLSInsecure}
	if path := cfg.Agent.CAFile; path != "" {
		certs, err := config.ReadCAFile(path)
		if err != nil {
			return nil, &settingError{msg: fmt.Sprintf("HANDSET_AGENT_CA_FILE (agent.ca_file): %q %v", path, err)}
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool() // no system store: the file's authorities alone
		}
		for _, c := range certs {
			pool.AddCert(c)
		}
		conf.RootCAs = pool
	}
	return conf, nil
}

// AgentClient is the HTTP client of the agent runtime's connections (see AgentTLS). It
// has no overall timeout: the adapters time silence themselves, and a turn that runs tools
// may take minutes.
func AgentClient(cfg *config.Config) (*http.Client, error) {
	conf, err := AgentTLS(cfg)
	if err != nil {
		return nil, err
	}
	t := httpagent.Transport()
	t.TLSClientConfig = conf
	return &http.Client{Transport: t}, nil
}

// InsecureAgentWarning is what serve logs at start, and doctor shows, while
// HANDSET_AGENT_TLS_INSECURE is on.
const InsecureAgentWarning = "HANDSET_AGENT_TLS_INSECURE=true: the agent runtime's certificate is not checked, " +
	"so anyone on the path to it can read and answer every turn. Development only: for a private CA set " +
	"HANDSET_AGENT_CA_FILE to its certificate and remove HANDSET_AGENT_TLS_INSECURE"

// warnInsecureAgent logs InsecureAgentWarning when it applies.
func warnInsecureAgent(log *slog.Logger, cfg *config.Config) {
	if cfg.Agent.TLSInsecure && cfg.Agent.Runtime != config.AgentEcho && cfg.Agent.Runtime != "" {
		log.Warn(InsecureAgentWarning)
	}
}
