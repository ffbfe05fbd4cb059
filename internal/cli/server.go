package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/handset-voice/handset/internal/browser"
	"github.com/handset-voice/handset/internal/call"
	"github.com/handset-voice/handset/internal/carrier/twilio"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/turn"
	"github.com/handset-voice/handset/internal/voice"
)

// server is the gateway: HTTP routes, the call manager and the providers calls share.
type server struct {
	cfg        *config.Config
	log        *slog.Logger
	prov       providers
	calls      *call.Manager
	callCfg    call.Config
	hashSecret []byte
	mux        *http.ServeMux
	stopCalls  context.CancelFunc
	onCall     func(*call.Call) // told of every admitted call (simulate follows its call)
}

func newServer(ctx context.Context, cfg *config.Config, prov providers, log *slog.Logger) (*server, error) {
	secret, err := session.LoadOrCreateSecret(cfg.Session.CallerHashSecret.Reveal(), cfg.DataDir)
	if err != nil {
		return nil, err
	}
	// Calls outlive the signal that starts a drain: they get their own context, ended
	// only when the drain timeout runs out.
	callCtx, stopCalls := context.WithCancel(context.WithoutCancel(ctx))
	s := &server{
		cfg: cfg, log: log, prov: prov, hashSecret: secret,
		calls:     call.NewManager(callCtx, cfg.MaxCalls),
		callCfg:   callConfig(cfg),
		mux:       http.NewServeMux(),
		stopCalls: stopCalls,
	}
	twilio.New(twilio.Options{
		AuthToken: cfg.Twilio.AuthToken.Reveal(),
		PublicURL: cfg.PublicURL,
		Admit:     s.admit,
		Logger:    log,
	}).Register(s.mux)
	if cfg.Browser {
		browser.New(browser.Options{Admit: s.admit, Logger: log}).Register(s.mux)
	}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	s.mux.HandleFunc("GET /readyz", s.readyz)
	return s, nil
}

func callConfig(cfg *config.Config) call.Config {
	c := call.DefaultConfig()
	c.Turn = turn.Config{
		FirstMessage:            cfg.Messages.First,
		ErrorMessage:            cfg.Messages.Error,
		LongTurnMessage:         cfg.Messages.LongTurn,
		LongTurnAfter:           cfg.Messages.LongTurnAfter,
		SilenceMessage:          cfg.Messages.Silence,
		SilenceReprompt:         cfg.Turn.SilenceReprompt,
		SilenceHangup:           cfg.Turn.SilenceHangup,
		BargeInGate:             cfg.Turn.BargeInGate,
		BargeInConfirm:          cfg.Turn.BargeInConfirm,
		BargeInMinWords:         cfg.Turn.BargeInMinWords,
		ForwardSTTWhileSpeaking: cfg.Turn.ForwardSTTWhileSpeaking,
		TailGrace:               cfg.Turn.TailGrace,
		MaxCall:                 cfg.Turn.MaxCall,
	}
	return c
}

func (s *server) readyz(w http.ResponseWriter, _ *http.Request) {
	if s.calls.Draining() {
		http.Error(w, "draining", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ready")
}

// admit starts a call on a carrier's leg.
func (s *server) admit(leg voice.Leg) (<-chan struct{}, error) {
	info := leg.Info()
	now := time.Now()
	journal, err := obs.Create(s.cfg.DataDir, string(info.CallID), now)
	if err != nil {
		return nil, err
	}
	if live, ok := leg.(interface{ Observe(obs.Event) }); ok {
		journal.Tee(live.Observe) // the browser page shows the call as it happens
	}
	sc := session.NewContext(info, s.hashSecret)
	cc := s.callCfg
	cc.CallerHash = sc.CallerHash
	c, err := s.calls.Start(cc, call.Deps{
		Leg: leg, STT: s.prov.stt, TTS: s.prov.tts, Agent: s.prov.agent, NewVAD: s.prov.newVAD,
		Clock: clock.Real{}, Journal: journal,
		Logger:      s.log.With("caller_hash", cc.CallerHash),
		CallContext: func(ctx context.Context) context.Context { return session.With(ctx, sc) },
	})
	if err != nil {
		_ = journal.Close()
		return nil, err
	}
	if s.onCall != nil {
		s.onCall(c)
	}
	s.log.Info("call started", "call", info.CallID, "carrier", info.Carrier, "direction", info.Direction)
	return c.Done(), nil
}

// serve listens until ctx ends, then drains calls and shuts down.
func (s *server) serve(ctx context.Context, ln net.Listener, ready func(string)) error {
	hs := &http.Server{Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("handset is listening", "addr", "http://"+ln.Addr().String())
	if ready != nil {
		ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		s.stopCalls()
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("draining calls", "active", s.calls.Active(), "timeout", s.cfg.DrainTimeout)
	drainCtx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	s.calls.Drain(drainCtx)
	cancel()
	s.stopCalls()
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	s.log.Info("stopped")
	return nil
}
