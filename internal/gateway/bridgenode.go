package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/handset-voice/handset/internal/bridge"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/edge"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/voice"
)

// BridgeNode serves only the agent bridge (`handset bridge`): the runtime, and the store
// for no more than the caller-hash secret, so a number is keyed as a call from it would be
// on every node. No carrier, speech provider or job runs.
type BridgeNode struct {
	cfg     *config.Config
	log     *slog.Logger
	agent   voice.Agent
	mux     *http.ServeMux
	ln      net.Listener
	release func()
}

// OpenBridge builds the runtime and the bridge cfg describes and opens the listener;
// nothing is served until Serve.
func OpenBridge(ctx context.Context, cfg *config.Config, o Options) (*BridgeNode, error) {
	log := cmp.Or(o.Logger, slog.Default())
	agent, err := BuildAgent(cfg, log)
	if err != nil {
		return nil, err
	}
	st, err := OpenStore(ctx, cfg)
	if err != nil {
		providers{agent: agent}.release()
		return nil, err
	}
	release := func() {
		providers{agent: agent}.release()
		_ = st.Close()
	}
	secret, err := CallerHashSecret(ctx, st, cfg)
	if err != nil {
		release()
		return nil, err
	}
	metrics := obs.NewMetrics()
	b, err := bridge.New(bridgeOptions(cfg, agent, secret, metrics, log))
	if err != nil {
		release()
		return nil, err
	}
	n := &BridgeNode{cfg: cfg, log: log, agent: agent, mux: http.NewServeMux(),
		release: func() { b.Close(); release() }}
	b.Register(n.mux)
	n.mux.Handle("GET /metrics", metrics.Handler())
	n.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	n.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ready") })
	if n.ln, err = net.Listen("tcp", cmp.Or(o.Listen, cfg.Listen)); err != nil {
		release()
		return nil, fmt.Errorf("listen on %s (HANDSET_LISTEN, or --listen): %w", cmp.Or(o.Listen, cfg.Listen), err)
	}
	return n, nil
}

// Addr is the address the bridge listens on.
func (n *BridgeNode) Addr() net.Addr { return n.ln.Addr() }

// Serve serves until ctx ends, then lets the turns in progress finish for up to
// HANDSET_DRAIN_TIMEOUT; ready, when set, is told the address once it is listening.
func (n *BridgeNode) Serve(ctx context.Context, ready func(addr string)) error {
	limiter := edge.NewLimiter(edge.DefaultPerAddress, nil, n.log)
	hs := edge.Server(n.mux, edge.DefaultTimeouts(), limiter, n.log)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(limiter.Listener(n.ln)) }()
	n.log.Info("handset bridge is listening", "addr", "http://"+n.ln.Addr().String(),
		"path", "/v1/chat/completions", "runtime", n.agent.Name())
	if ready != nil {
		ready(n.ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), n.cfg.DrainTimeout)
	defer cancel()
	if err := hs.Shutdown(drain); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	_ = hs.Close() // turns still running past the drain end now
	return nil
}

// Close frees the runtime and the store once Serve has returned (or was never called).
func (n *BridgeNode) Close() {
	_ = n.ln.Close()
	n.release()
}
