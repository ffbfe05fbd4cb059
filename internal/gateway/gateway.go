// Package gateway is Handset's application: a node that answers calls. It turns the
// configuration into providers (wire.go, the one place that does), opens the store, and
// serves the carriers' webhooks and media streams, the browser call page, the API and the
// health and metrics routes; it admits each call into the engine, runs the jobs (outbound
// calls, transfers, handoffs), and drains on shutdown. The command line (internal/cli)
// parses flags and prints; serve, demo, simulate and bench run a Gateway.
package gateway

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"

	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/engines"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/store"
)

// Options say which parts of a gateway run and where it listens.
type Options struct {
	Logger *slog.Logger
	// Jobs: claim and run jobs (outbound calls, transfers, handoffs) and keep this node's
	// heartbeat. A gateway that only takes the calls made to it (simulate, bench) runs none.
	Jobs bool
	// Listen is the address to listen on; empty: HANDSET_LISTEN.
	Listen string
	// OnCall, when set, is told of every admitted call (simulate follows its call).
	OnCall func(*call.Call)
	// Version is this binary's version (the traces' service.version).
	Version string
}

// Gateway is one node, open and listening, until Serve returns and Close frees it.
type Gateway struct {
	srv     *server
	ln      net.Listener
	release func()
}

// Open builds the providers, the store and the server cfg describes and opens the
// listener; nothing is served until Serve.
func Open(ctx context.Context, cfg *config.Config, o Options) (*Gateway, error) {
	log := cmp.Or(o.Logger, slog.Default())
	prov, err := buildProviders(cfg, log)
	if err != nil {
		return nil, err
	}
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		prov.release()
		return nil, err
	}
	release := func() {
		prov.release()
		_ = st.Close()
	}
	srv, err := newServer(ctx, cfg, prov, st, log, serverOptions{jobs: o.Jobs, version: o.Version})
	if err != nil {
		release()
		return nil, err
	}
	srv.onCall = o.OnCall
	ln, err := net.Listen("tcp", cmp.Or(o.Listen, cfg.Listen))
	switch {
	case err != nil && o.Listen == "":
		stopServer(srv)
		release()
		return nil, fmt.Errorf("listen on %s (HANDSET_LISTEN, or --listen): %w", cfg.Listen, err)
	case err != nil:
		stopServer(srv)
		release()
		return nil, err
	}
	return &Gateway{srv: srv, ln: ln, release: release}, nil
}

// Addr is the address the gateway listens on.
func (g *Gateway) Addr() net.Addr { return g.ln.Addr() }

// AgentName names the agent runtime calls are answered by.
func (g *Gateway) AgentName() string { return g.srv.prov.agent.Name() }

// Serve serves until ctx ends, then drains the calls and jobs (HANDSET_DRAIN_TIMEOUT) and
// shuts down; ready, when set, is told the address once it is listening.
func (g *Gateway) Serve(ctx context.Context, ready func(addr string)) error {
	return g.srv.serve(ctx, g.ln, ready)
}

// Close frees the providers and the store once Serve has returned (or was never called).
func (g *Gateway) Close() {
	_ = g.ln.Close() // already closed when Serve ran
	stopServer(g.srv)
	g.release()
}

// stopServer ends what newServer started, for a server that will not serve: the calls'
// context (waiting for the ended calls' records), the transcript writer (which must stop
// before the store closes) and the trace
// export. Serve ends the first two itself; ending them twice is harmless.
func stopServer(s *server) {
	s.stopCalls()
	s.waitEnded()
	s.lines.Close()
	s.closeTracing()
	if s.bridge != nil {
		s.bridge.Close()
	}
}

// LogStartup says what an operator should know as a gateway starts: a browser page others
// can reach, nobody able to call, and which offline engines this binary can run.
func LogStartup(log *slog.Logger, cfg *config.Config) {
	warnBrowserExposed(log, cfg)
	if msg, fix, ok := NoCallers(cfg); ok {
		log.Warn(msg, "fix", fix)
	}
	engines.Log(log, cfg)
}

// NoCallers says when a gateway cannot be called by anyone: no carrier's account is even
// begun and the browser call page is off. It returns the problem and its fix.
func NoCallers(cfg *config.Config) (msg, fix string, ok bool) {
	if cfg.Browser {
		return "", "", false
	}
	var empty, setups []string
	for _, c := range registry.All[registry.Carrier]() {
		if c.Started(cfg) {
			return "", "", false
		}
		if c.Hints.KeyVar != "" {
			empty = append(empty, c.Hints.KeyVar+" is empty")
		} else { // a carrier without a key (a SIP trunk): what would set it up
			empty = append(empty, c.AccountSettings+" not set")
		}
		setups = append(setups, c.PhoneSetup)
	}
	return "no one can call this Handset: no carrier is configured (" + strings.Join(empty, ", ") + ") and the browser call page is off (HANDSET_BROWSER is false)",
		"for phone calls " + strings.Join(setups, "; or ") + "; to call from a browser on this machine, set HANDSET_BROWSER=true", true
}

// CallerHashSecret is the key caller hashes are made with: the configured one, or the one
// the store shares between nodes (`handset test` hashes its caller as a call would be).
func CallerHashSecret(ctx context.Context, st store.Store, cfg *config.Config) ([]byte, error) {
	sec, err := sharedSecrets(ctx, st, cfg)
	return sec.callerHash, err
}

// settingError is a setting the gateway cannot use as given; the command line reports it
// as a usage mistake (exit code 2) with its hint.
type settingError struct{ msg, hint string }

func (e *settingError) Error() string { return e.msg }

// Hint says what to do about it; empty when the message says it all.
func (e *settingError) Hint() string { return e.hint }
