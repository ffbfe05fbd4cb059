package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/bridge"
	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/dashboard"
	"github.com/handset-voice/handset/internal/edge"
	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/tracing"
	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/web"
)

// server is the gateway: HTTP routes, the call manager, the job runner, the store, and
// the providers calls share.
type server struct {
	cfg       *config.Config
	log       *slog.Logger
	prov      providers
	st        store.Store
	sec       secrets
	node      string
	keys      session.KeyFactory
	carrier   carrier.Carrier // places calls (HANDSET_CARRIER's); nil when it has no account set
	calls     *call.Manager
	callCfg   call.Config
	runner    *jobs.Runner   // nil when this server runs no jobs (simulate)
	live      *jobs.Liveness // this node's heartbeat and the lost-call sweep; nil with no jobs
	metrics   *obs.Metrics
	mux       *http.ServeMux
	stopCalls context.CancelFunc
	onCall    func(*call.Call)  // told of every admitted call (simulate follows its call)
	lines     *store.LineWriter // every call's transcript lines, saved off the calls' goroutines
	ending    sync.WaitGroup    // calls whose end is still being recorded (admit)
	proxies   []netip.Prefix    // HANDSET_TRUSTED_PROXIES
	traces    *tracing.Exporter // each call as an OpenTelemetry trace; nil when off
	dashLive  *dashboard.Live   // the dashboard's live calls; nil when it is not served
	bridge    *bridge.Handler   // the agent bridge (HANDSET_BRIDGE); nil when it is off

	// carriers are the controls of every carrier with an account set, by name: a call's
	// transfer and callback go through its own.
	carriers map[string]carrier.Carrier
}

// serverOptions say which parts of the gateway run.
type serverOptions struct {
	jobs    bool   // claim and run jobs (outbound calls, transfers, handoffs)
	version string // this binary's, for the traces
}

func newServer(ctx context.Context, cfg *config.Config, prov providers, st store.Store, log *slog.Logger, o serverOptions) (*server, error) {
	sec, err := sharedSecrets(ctx, st, cfg)
	if err != nil {
		return nil, err
	}
	keys, err := sessionKeys(cfg)
	if err != nil {
		return nil, err
	}
	// Calls outlive the signal that starts a drain: they get their own context, ended
	// only when the drain timeout runs out.
	callCtx, stopCalls := context.WithCancel(context.WithoutCancel(ctx))
	s := &server{
		cfg: cfg, log: log, prov: prov, st: st, sec: sec, node: cfg.Node(), keys: keys,
		calls:     call.NewManager(callCtx, cfg.MaxCalls),
		callCfg:   callConfig(cfg),
		mux:       http.NewServeMux(),
		stopCalls: stopCalls,
		lines:     store.NewLineWriter(st, log),
		metrics:   obs.NewMetrics(),
	}
	// A server that cannot be made stops what it started: the calls' context and the
	// transcript writer's goroutine.
	fail := func(err error) (*server, error) {
		stopCalls()
		s.lines.Close()
		return nil, err
	}
	if s.carriers, err = configuredCarriers(cfg, log, st); err != nil {
		return fail(err)
	}
	if c, ok := registry.ChosenCarrier(cfg); ok {
		s.carrier = s.carriers[c.Name]
	}
	if o.jobs {
		if s.runner, err = s.buildRunner(); err != nil {
			return fail(err)
		}
		s.live = &jobs.Liveness{Store: st, Node: s.node, LostAfter: cfg.JobLease, Logger: log}
		sctx, cancel := context.WithTimeout(ctx, storeTimeout)
		s.live.Start(sctx) // before any call is taken: what a previous process left is ended
		cancel()
	}
	proxies, err := config.ParseTrustedProxies(cfg.TrustedProxies)
	if err != nil { // Validate refuses it first; a Config built in code may not have been
		return fail(fmt.Errorf("HANDSET_TRUSTED_PROXIES: %w", err))
	}
	s.proxies = proxies
	if err := s.mountCarriers(); err != nil {
		return fail(err)
	}
	if cfg.Browser {
		s.registerBrowser()
	}
	callAllow, err := jobs.ParseAllowList(cfg.Outbound.CallAllow)
	if err != nil {
		return fail(fmt.Errorf("HANDSET_CALL_ALLOW: %w", err))
	}
	api := web.New(web.Options{
		Token: sec.apiToken, ToolsToken: cfg.ToolsToken.Reveal(), CallAllow: callAllow,
		Store: st, Channels: s.channels(), Wake: s.wake, CanPlace: s.canPlace, Logger: log,
		CallerHash: func(n string) string { return session.CallerHash(sec.callerHash, n) },
		Liveness:   s.live,
	})
	api.Register(s.mux)
	s.mountDashboard()
	if cfg.Bridge.On {
		if err := s.mountBridge(); err != nil {
			return fail(err)
		}
	}
	// Profiles on demand, behind the same token: a regression under load can be found.
	s.mux.Handle("/debug/pprof/", api.Protect(http.HandlerFunc(pprof.Index)))
	s.mux.Handle("/debug/pprof/profile", api.Protect(http.HandlerFunc(pprof.Profile)))
	s.mux.Handle("/debug/pprof/trace", api.Protect(http.HandlerFunc(pprof.Trace)))
	s.mux.Handle("/debug/pprof/symbol", api.Protect(http.HandlerFunc(pprof.Symbol)))
	s.mux.Handle("GET /metrics", s.metrics.Handler())
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	s.mux.HandleFunc("GET /readyz", s.readyz)
	if s.traces, err = newTracing(cfg, o.version, log); err != nil {
		return fail(err)
	}
	return s, nil
}

func callConfig(cfg *config.Config) call.Config {
	c := call.DefaultConfig()
	c.Turn = turn.Config{
		FirstMessage:            cfg.Messages.First,
		ErrorMessage:            cfg.Messages.Error,
		LongTurnMessage:         cfg.LongTurnMessage(),
		LongTurnAfter:           cfg.Messages.LongTurnAfter,
		SilenceMessage:          cfg.Messages.Silence,
		SilenceReprompt:         cfg.Turn.SilenceReprompt,
		SilenceHangup:           cfg.Turn.SilenceHangup,
		STTErrorMessage:         cfg.Messages.STTError,
		BargeInGate:             cfg.Turn.BargeInGate,
		BargeInConfirm:          cfg.Turn.BargeInConfirm,
		BargeInMinWords:         cfg.Turn.BargeInMinWords,
		ForwardSTTWhileSpeaking: cfg.Turn.ForwardSTTWhileSpeaking,
		TailGrace:               cfg.Turn.TailGrace,
		MaxCall:                 cfg.Turn.MaxCall,
	}
	c.EchoOff = cfg.Turn.Echo == config.EchoOff
	c.EchoMaxDelay = cfg.Turn.EchoMaxDelay
	c.AgentTurnTimeout = cfg.Agent.TurnTimeout
	c.HistoryLimit = cfg.Agent.HistoryLimit
	c.TTSTimeout = cfg.TTS.Timeout
	return c
}

func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.calls.Draining() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// wake tells this node's runner a job was queued.
func (s *server) wake() {
	if s.runner != nil {
		s.runner.Wake()
	}
}

// raiseOpenFileLimit lifts the open-file limit as far as it goes and says what it is:
// every connection and call holds descriptors.
func (s *server) raiseOpenFileLimit() {
	limit, err := edge.RaiseOpenFileLimit()
	if err != nil {
		s.log.Warn("could not raise the open-file limit", "err", err)
	}
	if limit == 0 {
		return
	}
	s.log.Info("open-file limit", "limit", limit)
	if need := uint64(8*s.cfg.MaxCalls + 512); limit < need {
		s.log.Warn("the open-file limit is low for HANDSET_MAX_CALLS: raise the hard limit (systemd LimitNOFILE=, ulimit -Hn, docker --ulimit nofile=)",
			"limit", limit, "max_calls", s.cfg.MaxCalls, "suggested", need)
	}
}

// goodbyeWithin bounds how long, once HANDSET_DRAIN_TIMEOUT has run out, the calls left
// may take to say HANDSET_DRAIN_MESSAGE before they are hung up.
const goodbyeWithin = 10 * time.Second

// serve listens until ctx ends, then drains calls and jobs and shuts down.
func (s *server) serve(ctx context.Context, ln net.Listener, ready func(string)) error {
	s.raiseOpenFileLimit()
	stopListening, err := s.listenCarriers()
	if err != nil {
		s.stopCalls()
		s.lines.Close()
		return err
	}
	defer stopListening() // after the drain below: calls in progress keep their carrier
	limiter := edge.NewLimiter(edge.DefaultPerAddress, s.proxies, s.log)
	hs := edge.Server(s.mux, edge.DefaultTimeouts(), limiter, s.log)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(limiter.Listener(ln)) }()
	// The heartbeat goes on through the drain: a draining node still holds its calls.
	liveCtx, stopLive := context.WithCancel(context.WithoutCancel(ctx))
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		if s.live != nil {
			s.live.Run(liveCtx)
		}
	}()
	defer func() { stopLive(); <-liveDone }()
	jobsDone := make(chan struct{})
	go func() {
		defer close(jobsDone)
		if s.runner != nil {
			s.runner.Run(ctx, s.cfg.DrainTimeout)
		}
	}()
	pruneCtx, stopPruning := context.WithCancel(ctx)
	pruned := make(chan struct{})
	go func() { defer close(pruned); s.pruneCarrierCalls(pruneCtx) }()
	swept := make(chan struct{})
	go func() { defer close(swept); s.sweepRecordings(pruneCtx) }()
	defer func() { stopPruning(); <-swept }()
	defer func() { stopPruning(); <-pruned }()
	s.log.Info("handset is listening", "addr", "http://"+ln.Addr().String(), "node", s.node)
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		s.stopCalls()
		<-jobsDone
		s.waitEnded()
		s.lines.Close()
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("draining calls", "active", s.calls.Active(), "timeout", s.cfg.DrainTimeout)
	drainCtx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	s.calls.Drain(drainCtx, call.Goodbye{Text: s.cfg.Messages.Drain, Within: goodbyeWithin})
	cancel()
	s.stopCalls()
	<-jobsDone // waits on calls the drain just ended, or on its own drain timeout
	s.waitEnded()
	s.lines.Close()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		// Calls are over; what is left is a request that will not finish, or a client's
		// spare connection that never sent one (Go counts those as busy for 5 s).
		s.log.Warn("closing connections that did not finish", "err", err)
		_ = hs.Close()
	}
	s.log.Info("stopped")
	return nil
}

// configuredCarriers are the controls of calls of every carrier whose account the settings
// give, by name; empty when none has one (browser calls only).
func configuredCarriers(cfg *config.Config, log *slog.Logger, st store.Store) (map[string]carrier.Carrier, error) {
	out := map[string]carrier.Carrier{}
	for _, c := range registry.All[registry.Carrier]() {
		if !c.Configured(cfg) {
			continue
		}
		b := buildOf(cfg, "", log)
		b.Memory = memoriesOf(st)
		control, err := c.New(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Title, err)
		}
		out[c.Name] = control
	}
	return out, nil
}

// listenCarriers starts the listeners of every configured carrier that has its own (a SIP
// trunk's ports); stop closes them all. A listener that cannot start closes those started.
func (s *server) listenCarriers() (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, f := range stops {
			f()
		}
	}
	for _, c := range registry.All[registry.Carrier]() {
		if c.Listen == nil || !c.Configured(s.cfg) {
			continue
		}
		f, err := c.Listen(s.inboundFor(c.Name), s.cfg)
		if err != nil {
			stop()
			return nil, fmt.Errorf("%s: %w", c.Title, err)
		}
		stops = append(stops, f)
	}
	return stop, nil
}

// inboundFor is what the gateway gives carrier name to serve its calls.
func (s *server) inboundFor(name string) carrier.Inbound {
	return carrier.Inbound{
		PublicURL:      s.cfg.PublicURL,
		TrustedProxies: s.proxies,
		Memory:         memoriesOf(s.st)(name),
		Draining:       s.calls.Draining,
		Admit:          s.admit,
		OnProgress:     s.onProgress,
		Logger:         s.log,
	}
}

// mountCarriers serves every carrier's webhooks and media streams, configured or not (its
// routes refuse what they cannot verify), each with its own name on the calls it remembers.
func (s *server) mountCarriers() error {
	for _, c := range registry.All[registry.Carrier]() {
		if err := c.Mount(s.mux, s.inboundFor(c.Name), s.cfg); err != nil {
			return fmt.Errorf("%s: %w", c.Title, err)
		}
	}
	return nil
}
