package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/engines"
	"github.com/handset-voice/handset/internal/gateway"
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
	err = cfg.Validate(config.ValidateOptions{RequireAgent: true, RequireSpeech: true, RequireKeys: true})
	if engines := speechEngineProblems(cfg); err != nil || len(engines) > 0 {
		// openGateway is never reached: the unknown names, often the cause, are told here.
		warnSettings(newLogger(env.Stderr, cfg), cfg)
		return reportSettings(env.Stderr, "serve", err, engines)
	}
	gw, err := openGateway(ctx, env, cfg)
	if err != nil {
		return err
	}
	defer gw.Close()
	return gw.Serve(ctx, env.Ready)
}

// openGateway says at start what the settings leave to fix, then opens the gateway cfg
// describes: its providers, store, jobs and listener.
func openGateway(ctx context.Context, env Env, cfg *config.Config) (*gateway.Gateway, error) {
	log := newLogger(env.Stderr, cfg)
	warnSettings(log, cfg)
	gateway.LogStartup(log, cfg)
	return gateway.Open(ctx, cfg, gateway.Options{Logger: log, Jobs: true, Version: buildVersion()})
}

// warnSettings logs each name cfg's sources hold that is not a setting, with the closest one.
func warnSettings(log *slog.Logger, cfg *config.Config) {
	for _, w := range cfg.Warnings() {
		log.Warn(w.Message(), "from", w.Origin.String())
	}
}

// speechEngineProblems lists each offline engine the speech settings select that cannot run
// here, as a line naming the setting, so serve reports them with the other problems rather
// than one a start.
func speechEngineProblems(cfg *config.Config) []string {
	var out []string
	for _, e := range engines.List(cfg) {
		switch {
		case e.Problem == "":
		case e.Role == "stt" && e.Name == cfg.STT.Provider:
			out = append(out, fmt.Sprintf("HANDSET_STT (stt.provider): %q cannot run here: %s", e.Name, e.Problem))
		case e.Role == "tts" && e.Name == cfg.TTS.Provider:
			out = append(out, fmt.Sprintf("HANDSET_TTS (tts.provider): %q cannot run here: %s", e.Name, e.Problem))
		}
	}
	return out
}

// reportSettings prints every problem Validate found and each engine problem, one a line,
// with where to go next, and returns errReported: exit code 1, the code of every
// configuration problem.
func reportSettings(w io.Writer, cmd string, err error, engines []string) error {
	var ve *config.ValidationError
	if err != nil && !errors.As(err, &ve) {
		return err
	}
	var lines []string
	unset := false
	if ve != nil {
		for _, fe := range ve.Errors {
			lines = append(lines, fe.Error())
			switch fe.Env {
			case "HANDSET_AGENT", "HANDSET_STT", "HANDSET_TTS":
				unset = unset || strings.HasPrefix(fe.Reason, "is required")
			}
		}
	}
	lines = append(lines, engines...)
	what := fmt.Sprintf("%d settings", len(lines))
	if len(lines) == 1 {
		what = "1 setting"
	}
	fmt.Fprintf(w, "handset %s: cannot start: %s to fix:\n", cmd, what)
	for _, l := range lines {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if unset {
		fmt.Fprintln(w, "hint: to try Handset first, with no keys and no settings, run `handset demo` (offline speech, a call from the browser)")
	}
	fmt.Fprintln(w, "hint: `handset doctor` checks the settings and the services they name; docs/configuration.md describes each setting")
	return errReported
}
