package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"

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
	err = cfg.Validate(config.ValidateOptions{RequireAgent: true, RequireSpeech: true, RequireKeys: true})
	if engines := speechEngineProblems(cfg); err != nil || len(engines) > 0 {
		// openGateway is never reached: the unknown names, often the cause, are told here.
		warnSettings(newLogger(env.Stderr, cfg), cfg)
		return reportSettings(env.Stderr, "serve", err, engines)
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
	warnSettings(log, cfg)
	warnBrowserExposed(log, cfg)
	if msg, fix, ok := noCallers(cfg); ok {
		log.Warn(msg, "fix", fix)
	}
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
	for _, e := range engines(cfg) {
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

// noCallers says when a gateway cannot be called by anyone: no carrier sends it calls and
// the browser call page is off. It returns the problem and its fix.
func noCallers(cfg *config.Config) (msg, fix string, ok bool) {
	if cfg.Browser || cfg.Twilio.AccountSID != "" || cfg.Twilio.AuthToken.IsSet() {
		return "", "", false
	}
	return "no one can call this Handset: no carrier is configured (TWILIO_AUTH_TOKEN is empty) and the browser call page is off (HANDSET_BROWSER is false)",
		"for phone calls set TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN and HANDSET_PUBLIC_URL, then run `handset attach-number`; to call from a browser on this machine, set HANDSET_BROWSER=true", true
}
