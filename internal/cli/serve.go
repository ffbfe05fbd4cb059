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

// openGateway builds the providers and the server cfg describes and opens its listener;
// release frees the providers once the server has stopped.
func openGateway(ctx context.Context, env Env, cfg *config.Config) (*server, net.Listener, func(), error) {
	log := newLogger(env.Stderr, cfg)
	logEngines(log, cfg)
	prov, err := buildProviders(cfg, log)
	if err != nil {
		return nil, nil, nil, err
	}
	srv, err := newServer(ctx, cfg, prov, log)
	if err != nil {
		prov.release()
		return nil, nil, nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		prov.release()
		return nil, nil, nil, fmt.Errorf("listen on %s (HANDSET_LISTEN, or --listen): %w", cfg.Listen, err)
	}
	return srv, ln, prov.release, nil
}
