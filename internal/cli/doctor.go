package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/netfail"
)

// doctorReport is `handset doctor --json`.
type doctorReport struct {
	OK         bool            `json:"ok"` // no check failed
	ConfigFile string          `json:"config_file,omitempty"`
	EnvFiles   []string        `json:"env_files"` // dotenv files read, in precedence order
	Results    []doctor.Result `json:"results"`
	Summary    doctor.Counts   `json:"summary"`
}

// doctorTransport, when set, carries every HTTP probe doctor makes itself; tests use it to
// trust their TLS fakes. Nil: a transport of doctor's own, closed when it ends.
var doctorTransport http.RoundTripper

// runDoctor is the preflight: every configured part checked at once, each bounded by
// --timeout, every problem with a one-line fix. It exits 0 when nothing failed (warnings
// allowed), 1 when a check failed, 2 on a usage error.
func runDoctor(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("doctor", env)
	asJSON := fs.Bool("json", false, "print the results as JSON")
	noNetwork := fs.Bool("no-network", false, "skip every check that talks to a server (agent runtime, speech providers, Twilio, the public URL)")
	timeout := fs.Duration("timeout", doctor.DefaultTimeout, "time `limit` for each check (they run in parallel)")
	demo := fs.Bool("demo", false, "check what `handset demo` needs (its offline engines, the agent it would pick, the port) instead of the set-up for `handset serve`")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{msg: fmt.Sprintf("unexpected argument %q", fs.Arg(0)), hint: "doctor takes only flags: run `handset doctor --help`"}
	}
	if *timeout <= 0 {
		return &usageError{msg: "--timeout must be more than 0", hint: "like --timeout 10s"}
	}

	home := environValue(env.Environ, "HOME")
	if *demo {
		return runDoctorDemo(ctx, env, g, home, *asJSON, doctor.Options{Timeout: *timeout, NoNetwork: *noNetwork})
	}
	files, hermesEnv := doctorEnvFiles(env, g, home)
	lg := *g
	lg.envFiles = files
	cfg, err := loadConfig(env, &lg, nil)
	var results []doctor.Result
	if err != nil {
		// The settings cannot be read at all: say which file and line, and stop there.
		results = loadProblems(err)
		return doctorOutput(env, *asJSON, doctorReport{EnvFiles: files, ConfigFile: g.configFile}, results, nil)
	}
	client, done := doctorClient()
	defer done()
	d := &doctorRun{
		cfg: cfg, env: env, home: home, hermesEnv: hermesEnv,
		explicitEnvFiles: len(g.envFiles) > 0,
		client:           client,
		agentHTTP:        doctorAgentClient(cfg, client),
	}
	results = doctor.Run(ctx, d.checks(), doctor.Options{Timeout: *timeout, NoNetwork: *noNetwork})
	rep := doctorReport{ConfigFile: cfg.ConfigFile(), EnvFiles: cfg.EnvFiles()}
	return doctorOutput(env, *asJSON, rep, results, secretsOf(cfg, d.hermes()))
}

// doctorClient is the HTTP client of doctor's probes; done frees its connections.
func doctorClient() (client *http.Client, done func()) {
	if doctorTransport != nil {
		return &http.Client{Transport: doctorTransport}, func() {}
	}
	own := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Transport: own}, own.CloseIdleConnections
}

// runDoctorDemo is `handset doctor --demo`: the checks of what `handset demo` needs, on the
// settings the demo would run with (the user's own; the offline engines for unset speech
// settings; the agent it would pick). It exits 0 when the demo can run.
func runDoctorDemo(ctx context.Context, env Env, g *globals, home string, asJSON bool, opts doctor.Options) error {
	cfg, agent, err := demoSettings(ctx, env, g, opts.NoNetwork)
	if err != nil {
		return doctorOutput(env, asJSON, doctorReport{EnvFiles: g.envFiles, ConfigFile: g.configFile}, loadProblems(err), nil)
	}
	client, done := doctorClient()
	defer done()
	d := &doctorRun{cfg: cfg, env: env, home: home, demo: true, client: client, agentHTTP: doctorAgentClient(cfg, client)}
	cs := append(d.configChecks(), doctor.Fixed(secAgent, "demo agent", agent))
	if cfg.Agent.Runtime != config.AgentEcho {
		cs = append(cs, d.agentChecks()...) // the runtime the demo found, checked as serve's would be
	}
	cs = append(cs, d.sttChecks()...)
	cs = append(cs, d.ttsChecks()...)
	cs = append(cs, d.vadChecks()...)
	cs = append(cs,
		doctor.Local(secStore, "data dir", func(context.Context) doctor.Result { return d.dataDir() }),
		doctor.Local(secBrowser, "listen", func(context.Context) doctor.Result { return d.listenFree() }))
	results := doctor.Run(ctx, cs, opts)
	rep := doctorReport{ConfigFile: cfg.ConfigFile(), EnvFiles: cfg.EnvFiles()}
	return doctorOutput(env, asJSON, rep, results, secretsOf(cfg, d.hermes()))
}

// demoSettings loads the settings as `handset demo` does and picks its agent with the demo's
// own probes (chooseDemoAgent). agent says which runtime the demo would use, and why.
func demoSettings(ctx context.Context, env Env, g *globals, noNetwork bool) (cfg *config.Config, agent doctor.Result, err error) {
	overrides := map[string]string{"HANDSET_BROWSER": "true"}
	if cfg, err = loadConfig(env, g, maps.Clone(overrides)); err != nil {
		return nil, agent, err
	}
	// As in runDemo: the offline engines stand in for speech settings nobody set.
	for name, def := range map[string]string{"HANDSET_STT": config.STTSphinx, "HANDSET_TTS": config.TTSFlite} {
		if o, _ := cfg.Origin(name); o.Kind == config.FromDefault {
			overrides[name] = def
		}
	}
	reload := func(extra map[string]string) (*config.Config, error) {
		o := maps.Clone(overrides)
		maps.Copy(o, extra)
		return loadConfig(env, g, o)
	}
	switch o, _ := cfg.Origin("HANDSET_AGENT"); {
	case o.Kind != config.FromDefault:
		cfg, err = reload(nil)
		if err == nil {
			agent = doctor.OKResult(fmt.Sprintf("%s, chosen by HANDSET_AGENT (from %s)", cfg.Agent.Runtime, o))
		}
	case noNetwork:
		cfg, err = reload(map[string]string{"HANDSET_AGENT": config.AgentEcho})
		agent = doctor.SkipResult("not probed (--no-network): the demo uses the first of Hermes, OpenClaw and Ollama that answers on this machine, else the echo agent")
	default:
		var said bytes.Buffer // what the demo would print about the runtimes it passed over
		var why string
		cfg, why, err = chooseDemoAgent(ctx, Env{Stdout: &said, Stderr: io.Discard, Environ: env.Environ, WorkDir: env.WorkDir}, reload)
		if err == nil {
			detail := cfg.Agent.Runtime + ": " + why
			if said.Len() > 0 {
				lines := strings.Split(strings.TrimSpace(said.String()), "\n")
				for i := range lines {
					lines[i] = strings.TrimSpace(lines[i])
				}
				detail += " (" + strings.Join(lines, "; ") + ")"
			}
			agent = doctor.OKResult(detail)
		}
	}
	return cfg, agent, err
}

// listenFree checks that the demo can listen where HANDSET_LISTEN says.
func (d *doctorRun) listenFree() doctor.Result {
	addr := d.cfg.Listen
	fix := "stop what listens there, or give the demo another address: handset demo --listen 127.0.0.1:8081 (or set HANDSET_LISTEN)"
	if o := d.origin("HANDSET_LISTEN"); o != "default" {
		fix = "stop what listens there, or change HANDSET_LISTEN (from " + o + "), or give the demo another address: handset demo --listen 127.0.0.1:8081"
	}
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return doctor.FailResult(addr+" is in use: another program listens there (a handset demo or serve already running?)", fix)
	case err != nil:
		return doctor.FailResult("cannot listen on "+addr+": "+netfail.RootCause(err), fix)
	}
	_ = ln.Close()
	host, port, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	if port == "0" {
		return doctor.OKResult(addr + ": the demo picks a free port and prints its address")
	}
	return doctor.OKResult(addr + " is free: the demo's page will be at http://" + net.JoinHostPort(host, port) + "/")
}

// doctorOutput redacts and prints the results, and turns a failure into exit code 1.
func doctorOutput(env Env, asJSON bool, rep doctorReport, results []doctor.Result, secrets []string) error {
	for i := range results {
		results[i].Detail = redactSecrets(results[i].Detail, secrets)
		results[i].Fix = redactSecrets(results[i].Fix, secrets)
	}
	rep.Results, rep.Summary, rep.OK = results, doctor.Count(results), !doctor.Failed(results)
	if rep.EnvFiles == nil {
		rep.EnvFiles = []string{}
	}
	if asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		doctor.Print(env.Stdout, results, useColor(env))
	}
	if !rep.OK {
		return errReported
	}
	return nil
}

// doctorEnvFiles are the dotenv files doctor reads: the --env-file files, or the project's
// .env when there is one, then ~/.hermes/.env when it exists (an earlier file wins, and the
// environment beats them all). It also returns the Hermes file's path when it is read.
func doctorEnvFiles(env Env, g *globals, home string) (files []string, hermesEnv string) {
	files = slices.Clone([]string(g.envFiles))
	if len(files) == 0 {
		p := filepath.Join(cmpOrDot(env.WorkDir), config.DefaultEnvFile)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			files = append(files, p)
		}
	}
	if home == "" {
		return files, ""
	}
	p := filepath.Join(home, ".hermes", ".env")
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		return files, ""
	}
	for _, f := range files {
		if sameFile(f, p, env.WorkDir) {
			return files, p
		}
	}
	return append(files, p), p
}

func cmpOrDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// sameFile reports whether name (relative to dir) and path are one file.
func sameFile(name, path, dir string) bool {
	if !filepath.IsAbs(name) {
		name = filepath.Join(cmpOrDot(dir), name)
	}
	a, err1 := os.Stat(name)
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// loadProblems turns the error of config.Load into one failed check per problem.
func loadProblems(err error) []doctor.Result {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]doctor.Result, 0, len(errs))
	for _, e := range errs {
		fix := "correct the file and line named here; docs/configuration.md describes every setting"
		var fe *config.FileError
		if errors.As(e, &fe) && fe.Msg == "no such file" {
			fix = "create " + fe.Path + ", or drop the flag that names it"
		}
		out = append(out, doctor.Result{Section: "config", Name: "load", Status: doctor.Fail,
			Detail: "the settings cannot be read: " + e.Error(), Fix: fix})
	}
	return out
}

// secretsOf lists every secret value doctor knows, so no output can carry one.
func secretsOf(cfg *config.Config, h hermesHome) []string {
	var out []string
	for _, s := range config.Settings() { // every secret, a carrier's declared ones too
		if v := cfg.Value(s.Env); s.Secret() && v != "" {
			out = append(out, v)
		}
	}
	if k := h.Env[config.HermesKeyVar]; k != "" {
		out = append(out, k)
	}
	return out
}

// redactSecrets replaces every secret (of 4 characters or more) in s.
func redactSecrets(s string, secrets []string) string {
	for _, v := range secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// useColor: colours only on a terminal, and never with NO_COLOR set or TERM=dumb.
func useColor(env Env) bool {
	if environValue(env.Environ, "NO_COLOR") != "" || environValue(env.Environ, "TERM") == "dumb" {
		return false
	}
	f, ok := env.Stdout.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// environValue is the last value of key in an os.Environ-style list.
func environValue(environ []string, key string) string {
	v := ""
	for _, kv := range environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// doctorRun holds what the checks share.
type doctorRun struct {
	cfg              *config.Config
	env              Env
	home             string // HOME from the command's environment
	hermesEnv        string // ~/.hermes/.env when doctor added it to the dotenv files
	explicitEnvFiles bool   // --env-file was given
	demo             bool   // --demo: the checks are of what `handset demo` needs
	client           *http.Client
	agentHTTP        *http.Client // the agent runtime's probes: its TLS settings (see clientFor)

	hermesOnce onceValue[hermesHome]
}

// onceValue computes a value once, for the checks that share one probe. The zero value is
// ready to use.
type onceValue[T any] struct{ doctor.Shared[T] }

func (o *onceValue[T]) get(ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	return o.Get(ctx, f)
}

// hermes reads ~/.hermes once.
func (d *doctorRun) hermes() hermesHome {
	h, _ := d.hermesOnce.get(context.Background(), func(context.Context) (hermesHome, error) {
		return readHermesHome(d.home), nil
	})
	return h
}
