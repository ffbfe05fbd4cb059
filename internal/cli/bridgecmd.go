package cli

import (
	"context"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/gateway"
)

// runBridge serves only the agent bridge: HANDSET_BRIDGE is implied, the runtime and the
// bridge's token are required, and no carrier or speech setting is read.
func runBridge(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("bridge", env)
	listen := fs.String("listen", "", "HTTP listen `address` (overrides HANDSET_LISTEN)")
	if err := parse(fs, args); err != nil {
		return err
	}
	overrides := map[string]string{"HANDSET_BRIDGE": "true"}
	if *listen != "" {
		overrides["HANDSET_LISTEN"] = *listen
	}
	cfg, err := loadConfig(env, g, overrides)
	if err != nil {
		return err
	}
	if err := cfg.Validate(config.ValidateOptions{RequireAgent: true, RequireAgentKey: true}); err != nil {
		warnSettings(newLogger(env.Stderr, cfg), cfg)
		return reportSettings(env.Stderr, "bridge", err, nil)
	}
	log := newLogger(env.Stderr, cfg)
	warnSettings(log, cfg)
	node, err := gateway.OpenBridge(ctx, cfg, gateway.Options{Logger: log})
	if err != nil {
		return err
	}
	defer node.Close()
	return node.Serve(ctx, env.Ready)
}
