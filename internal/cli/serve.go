package cli

import (
	"context"
	"fmt"
	"net"

	"github.com/handset-voice/handset/internal/config"
)

func runServe(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("serve", env)
	listen := fs.String("listen", "", "HTTP listen `address` (overrides HANDSET_LISTEN)")
	if err := parse(fs, args); err != nil {
		return err
	}
	overrides := map[string]string{}
	if *listen != "" {
		overrides["HANDSET_LISTEN"] = *listen
	}
	cfg, err := loadConfig(env, g, overrides)
	if err != nil {
		return err
	}
	if err := cfg.Validate(config.ValidateOptions{RequireAgent: true, RequireKeys: true}); err != nil {
		return err
	}
	srv, ln, release, err := openGateway(ctx, env, cfg)
	if err != nil {
		return err
	}
	defer release()
	return srv.serve(ctx, ln, env.Ready)
}

// openGateway builds the providers, the store and the server cfg describes and opens its
// listener; release frees them once the server has stopped.
func openGateway(ctx context.Context, env Env, cfg *config.Config) (*server, net.Listener, func(), error) {
	log := newLogger(env.Stderr, cfg)
	logEngines(log, cfg)
	prov, err := buildProviders(cfg, log)
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		prov.release()
		return nil, nil, nil, err
	}
	release := func() {
		prov.release()
		_ = st.Close()
	}
	srv, err := newServer(ctx, cfg, prov, st, log, serverOptions{jobs: true})
	if err != nil {
		release()
		return nil, nil, nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		release()
		return nil, nil, nil, fmt.Errorf("listen on %s (HANDSET_LISTEN, or --listen): %w", cfg.Listen, err)
	}
	return srv, ln, release, nil
}
