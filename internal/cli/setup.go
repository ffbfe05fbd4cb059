package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
)

// setupOptions are `handset setup`'s flags.
type setupOptions struct {
	dir, runtime           string
	yes, force             bool
	enableHermes, genKey   bool
	startGateway           bool
	number, url            string
	carrier                string // --carrier: whose number --number is; empty: the project's own choice
	noCheck, network       bool
	offline                bool
	hermesHome, binaryPath string // binaryPath: how the README runs this binary
	absDir                 string // the project folder, absolute
	mode                   string // inbound, outbound or both
	enableOpenClaw         bool
	openclawConfig         string // the gateway's openclaw.json
	openclawAgent          string // the OpenClaw agent that answers calls
}

// The modes of a project: who dials whom.
const (
	modeInbound  = "inbound"
	modeOutbound = "outbound"
	modeBoth     = "both"
)

func (o setupOptions) inbound() bool  { return o.mode != modeOutbound }
func (o setupOptions) outbound() bool { return o.mode != modeInbound }

// runSetup scaffolds a ready-to-run project folder for an agent runtime, optionally
// prepares Hermes and attaches a Twilio number, then runs doctor on the result.
func runSetup(ctx context.Context, env Env, args []string) error {
	fs, _ := newFlagSet("setup", env)
	var o setupOptions
	fs.StringVar(&o.dir, "dir", "handset-phone-agent", "project `folder` to create")
	fs.StringVar(&o.runtime, "runtime", "", "agent runtime: hermes, openclaw or openai (required)")
	fs.BoolVar(&o.yes, "yes", false, "do what the flags ask without asking (changes outside the folder need it)")
	fs.BoolVar(&o.force, "force", false, "overwrite files that already exist in the folder")
	fs.StringVar(&o.mode, "mode", modeInbound, "inbound (callers ring the agent: the number is attached), outbound (the agent calls: a dialer list, its timer, the call allow-list) or both")
	fs.BoolVar(&o.enableHermes, "enable-hermes", false, "write API_SERVER_ENABLED=true into ~/.hermes/.env (backed up first), and an API_SERVER_KEY when it has none")
	fs.BoolVar(&o.enableOpenClaw, "enable-openclaw", false, "turn on the OpenClaw gateway's OpenAI-compatible endpoint and add the agent for calls, without shell or file tools, to its openclaw.json (backed up first)")
	fs.StringVar(&o.openclawConfig, "openclaw-config", "", "the gateway's configuration `file` (default OPENCLAW_CONFIG_PATH, else ~/.openclaw/openclaw.json)")
	fs.StringVar(&o.openclawAgent, "openclaw-agent", "voice", "the OpenClaw agent `id` that answers calls")
	fs.BoolVar(&o.genKey, "generate-key", false, "generate a strong API key and write it to both Hermes and the project")
	fs.BoolVar(&o.startGateway, "start-gateway", false, "run `hermes gateway start` and wait until its API answers")
	fs.StringVar(&o.number, "number", "", "the carrier's `number`: calls come from it, and inbound projects point it at this Handset")
	fs.StringVar(&o.carrier, "carrier", "", "the carrier `name` --number belongs to, one of "+strings.Join(registry.Names(registry.KindCarrier), ", ")+
		" (default HANDSET_CARRIER, else the one whose account the project sets)")
	fs.StringVar(&o.url, "url", "", "public base `URL` of this Handset (HANDSET_PUBLIC_URL)")
	fs.BoolVar(&o.offline, "offline", false, "speech on this machine (sphinx STT, flite TTS): no cloud keys; an openai runtime points at Ollama on localhost")
	fs.BoolVar(&o.noCheck, "no-check", false, "skip the doctor checks at the end")
	fs.BoolVar(&o.network, "network", false, "let the doctor checks at the end reach the network (the agent runtime, speech providers, Twilio, the public URL)")
	if err := parse(fs, args); err != nil {
		return err
	}
	switch o.runtime {
	case config.AgentHermes, config.AgentOpenClaw, config.AgentOpenAI:
	case "":
		return &usageError{msg: "--runtime is required", hint: "handset setup --runtime hermes|openclaw|openai"}
	default:
		return &usageError{msg: fmt.Sprintf("--runtime %q is not one of hermes, openclaw, openai", o.runtime)}
	}
	if (o.enableHermes || o.startGateway) && o.runtime != config.AgentHermes {
		return &usageError{msg: "--enable-hermes and --start-gateway are for --runtime hermes"}
	}
	if o.genKey && o.runtime == config.AgentOpenClaw {
		return &usageError{msg: "--generate-key writes Hermes' key; OpenClaw's token is the gateway's own",
			hint: "put the gateway's token in the project's .env as OPENCLAW_GATEWAY_TOKEN"}
	}
	switch o.mode {
	case modeInbound, modeOutbound, modeBoth:
	default:
		return &usageError{msg: fmt.Sprintf("--mode %q is not one of inbound, outbound, both", o.mode)}
	}
	if o.runtime != config.AgentOpenClaw && (o.enableOpenClaw || o.openclawConfig != "" || o.openclawAgent != "voice") {
		return &usageError{msg: "--enable-openclaw, --openclaw-config and --openclaw-agent are for --runtime openclaw"}
	}
	if !agentIDPattern.MatchString(o.openclawAgent) {
		return &usageError{msg: fmt.Sprintf("--openclaw-agent %q is not an agent id OpenClaw keeps as it is", o.openclawAgent),
			hint: "1 to 64 of a-z, 0-9, _ and -, starting with a letter or digit"}
	}
	if o.number != "" {
		n, err := carrier.NormalizeNumber(o.number)
		if err != nil {
			return &usageError{msg: fmt.Sprintf("--number %q: %v", o.number, err)}
		}
		o.number = n
	}
	if _, err := carrierOverride(o.carrier); err != nil {
		return err
	}
	if o.number != "" && o.url == "" {
		return &usageError{msg: "--number needs --url, the public URL " + setupCarrier(o).Title + " will call"}
	}
	if o.url != "" && !strings.HasPrefix(o.url, "https://") {
		return &usageError{msg: fmt.Sprintf("--url %q must be https:// (%s calls it over the internet)", o.url, setupCarrier(o).Title)}
	}
	home := environValue(env.Environ, "HOME")
	o.hermesHome = filepath.Join(home, ".hermes")
	o.binaryPath = handsetCommand(env)
	dir := o.dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(env.WorkDir, dir)
	}
	o.absDir = dir

	// What changes outside the folder is worked out first: without --yes it is only shown.
	var claw *openclawPlan
	if o.enableOpenClaw {
		var err error
		if claw, err = setupOpenClawPlan(env, o); err != nil {
			return err
		}
	}
	key := ""
	newHermesKey := false // --enable-hermes found no API_SERVER_KEY: one is made
	if o.genKey {
		key = newAPIKey()
	} else if o.enableHermes && !hermesHasKey(o.hermesHome) {
		key, newHermesKey = newAPIKey(), true
	}
	attach := o.number != "" && o.inbound()
	if outside := outsideChanges(o, claw, attach, key != ""); len(outside) > 0 && !o.yes {
		fmt.Fprintf(env.Stdout, "This changes things outside the project folder:\n  - %s\n", strings.Join(outside, "\n  - "))
		if claw != nil {
			claw.preview(env)
		}
		return &usageError{msg: "nothing was changed: changes outside the project folder need --yes", hint: "add --yes to make them"}
	}

	files := scaffold(o, key)
	if err := writeProject(env, dir, files, o.force); err != nil {
		return err
	}
	if o.enableHermes || o.genKey && o.runtime == config.AgentHermes {
		if newHermesKey {
			fmt.Fprintf(env.Stdout, "%s has no API_SERVER_KEY: setup made one, and the project's .env has the same key\n", filepath.Join(o.hermesHome, ".env"))
		}
		if err := updateHermesEnv(env, o.hermesHome, o.enableHermes, key); err != nil {
			return err
		}
	}
	if claw != nil {
		if err := claw.apply(env); err != nil {
			return err
		}
	}
	if o.startGateway {
		if err := startHermesGateway(ctx, env, dir); err != nil {
			return err
		}
	}
	if attach {
		if err := setupAttach(ctx, env, dir, o.carrier, o.number, strings.TrimRight(o.url, "/")); err != nil {
			return err
		}
	}
	projectEnv := env
	projectEnv.WorkDir = dir
	printSetupSecrets(env, projectEnv, o)
	if o.offline {
		printOfflineEngines(env, projectEnv)
	}
	hs := o.binaryPath
	fmt.Fprintf(env.Stdout, "\nNext: cd %s, fill in .env (see .env.example), then run `%s doctor` and `%s serve`.\n", shellQuote(o.dir), hs, hs)
	if o.noCheck {
		return nil
	}
	// Offline unless asked: a fresh project has no keys yet, and its placeholder and
	// vendor hosts are not worth a lookup on every setup.
	doctorArgs := []string{"--no-network"}
	if o.network {
		doctorArgs = nil
		fmt.Fprintf(env.Stdout, "\nChecking the new project (%s doctor):\n", hs)
	} else {
		fmt.Fprintf(env.Stdout, "\nChecking the new project without the network (%s doctor --no-network):\n", hs)
	}
	if err := runDoctor(ctx, projectEnv, doctorArgs); err != nil && !errors.Is(err, errReported) {
		return err
	}
	if !o.network {
		fmt.Fprintf(env.Stdout, "\nThe network checks (agent runtime, speech keys, %s, public URL) did not run: once .env is filled in, run `cd %s && %s doctor`.\n", setupCarrier(o).Title, shellQuote(o.dir), hs)
	}
	return nil // blockers are expected until .env is filled in; doctor has listed them
}

// outsideChanges lists, one line each, what setup would change outside the project folder.
func outsideChanges(o setupOptions, claw *openclawPlan, attach, hermesKey bool) []string {
	var out []string
	hermesEnv := filepath.Join(o.hermesHome, ".env")
	if o.enableHermes {
		out = append(out, hermesEnv+": API_SERVER_ENABLED=true (backed up first)")
	}
	if hermesKey && o.runtime == config.AgentHermes {
		out = append(out, hermesEnv+": a new API_SERVER_KEY, the same as the project's HANDSET_AGENT_KEY")
	}
	if o.startGateway {
		out = append(out, "start the Hermes gateway (`hermes gateway start`)")
	}
	if claw != nil {
		out = append(out, claw.path+": "+strings.Join(claw.changes, "; ")+" (backed up first)")
	}
	if attach {
		c := setupCarrier(o)
		out = append(out, fmt.Sprintf("point the %s number %s at %s", c.Title, o.number, c.Numbers.Webhooks.VoiceURL(strings.TrimRight(o.url, "/"))))
	}
	return out
}

// hermesHasKey reports whether Hermes' dotenv file sets a non-empty API_SERVER_KEY.
func hermesHasKey(hermesHome string) bool {
	data, err := os.ReadFile(filepath.Join(hermesHome, ".env"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "export "), "=")
		if ok && strings.TrimSpace(k) == "API_SERVER_KEY" && strings.Trim(strings.TrimSpace(v), `"'`) != "" {
			return true
		}
	}
	return false
}

// setupExecutable is the running binary; tests replace it.
var setupExecutable = os.Executable

// handsetCommand is how the project's README and setup's hints run this binary: plain
// `handset` when that is the one on PATH, else its absolute path.
func handsetCommand(env Env) string {
	exe, err := setupExecutable()
	if err != nil {
		return "handset"
	}
	if p := doctor.LookPath(env.Environ, "handset"); p != "" && sameFile(p, exe, "") {
		return "handset"
	}
	return shellQuote(exe)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printSetupSecrets lists the secrets the project's serve will need, as serve would see
// them (the environment and the project's .env), each plainly set or missing.
func printSetupSecrets(env, projectEnv Env, o setupOptions) {
	cfg, err := loadConfig(projectEnv, &globals{}, nil)
	if err != nil {
		return // doctor names the problem
	}
	rt := projectRuntime(o)
	type secret struct {
		names    string
		set      bool
		source   string // the variable whose origin to show
		hint     string // where a missing one comes from
		optional bool   // missing is fine
	}
	list := []secret{{rt.keyVar, cfg.Agent.Key.IsSet(), "HANDSET_AGENT_KEY", rt.keyHint, rt == offlineOllama}}
	// The speech providers' keys, each once (one OpenAI key can serve both).
	var speech []registry.About
	if p, ok := registry.Find[registry.STT](cfg.STT.Provider); ok {
		speech = append(speech, p.Info())
	}
	if p, ok := registry.Find[registry.TTS](cfg.TTS.Provider); ok {
		speech = append(speech, p.Info())
	}
	for _, p := range speech {
		key := p.Hints.KeyVar
		if key == "" || p.Hints.KeyWhere == "" || slices.ContainsFunc(list, func(s secret) bool { return s.names == key }) {
			continue
		}
		list = append(list, secret{key, cfg.Value(key) != "", key, p.Hints.KeyWhere, false})
	}
	list = append(list, secret{"TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN", cfg.Twilio.AccountSID != "" && cfg.Twilio.AuthToken.IsSet(),
		"TWILIO_AUTH_TOKEN", "only phone calls need them", true})
	for _, c := range registry.All[registry.Carrier]() {
		if names := carrierAccountNames(c); len(names) > 0 {
			list = append(list, secret{strings.Join(names, ", "), c.Configured(cfg), names[0],
				"only phone calls through " + c.Title + " need them", true})
		}
	}
	fmt.Fprintf(env.Stdout, "\nSecrets (in %s, see .env.example):\n", filepath.Join(o.dir, config.DefaultEnvFile))
	for _, s := range list {
		switch {
		case s.set:
			fmt.Fprintf(env.Stdout, "  ✓ set      %s (%s)\n", s.names, cfg.Source(s.source))
		case s.optional:
			fmt.Fprintf(env.Stdout, "  - not set  %s: %s\n", s.names, s.hint)
		default:
			fmt.Fprintf(env.Stdout, "  ✗ missing  %s: %s\n", s.names, s.hint)
		}
	}
}

// printOfflineEngines warns when this binary cannot run the offline engines the project
// is set to use.
func printOfflineEngines(env, projectEnv Env) {
	cfg, err := loadConfig(projectEnv, &globals{}, nil)
	if err != nil {
		return
	}
	if missing := offlineEnginesMissing(cfg); len(missing) > 0 {
		fmt.Fprintf(env.Stdout, "\nThis binary cannot run the offline speech engines yet:\n  %s\n", strings.Join(missing, "\n  "))
	}
}

// newAPIKey is 32 random bytes, hex: strong enough for a bearer key.
func newAPIKey() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "hs_" + hex.EncodeToString(b[:])
}

// projectFile is one file setup writes.
type projectFile struct {
	name    string
	content string
	mode    os.FileMode
}

// writeProject writes the files, refusing to overwrite any without force (checked for all
// before any is written, so a refusal leaves the folder as it was).
func writeProject(env Env, dir string, files []projectFile, force bool) error {
	if !force {
		var exist []string
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(dir, f.name)); err == nil {
				exist = append(exist, f.name)
			}
		}
		if len(exist) > 0 {
			return &usageError{msg: fmt.Sprintf("%s already has %s", dir, strings.Join(exist, ", ")),
				hint: "use --force to overwrite them, or --dir for another folder"}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.content), f.mode); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		if err := os.Chmod(filepath.Join(dir, f.name), f.mode); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
		fmt.Fprintf(env.Stdout, "wrote %s\n", filepath.Join(dir, f.name))
	}
	return nil
}

// updateHermesEnv sets API_SERVER_ENABLED=true and/or API_SERVER_KEY in Hermes' dotenv
// file, keeping every other line, after copying it to a timestamped backup.
func updateHermesEnv(env Env, hermesHome string, enable bool, key string) error {
	path := filepath.Join(hermesHome, ".env")
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("setup: %w", err)
	}
	set := map[string]string{}
	if enable {
		set["API_SERVER_ENABLED"] = "true"
	}
	if key != "" {
		set["API_SERVER_KEY"] = key
	}
	var lines []string
	if len(old) > 0 {
		lines = strings.Split(strings.TrimRight(string(old), "\n"), "\n")
	}
	for i, l := range lines {
		k, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "export "), "=")
		if v, want := set[strings.TrimSpace(k)]; ok && want {
			lines[i] = strings.TrimSpace(k) + "=" + v
			delete(set, strings.TrimSpace(k))
		}
	}
	for _, k := range []string{"API_SERVER_ENABLED", "API_SERVER_KEY"} {
		if v, ok := set[k]; ok {
			lines = append(lines, k+"="+v)
		}
	}
	if err := os.MkdirAll(hermesHome, 0o700); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if old != nil {
		backup := path + ".bak-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.WriteFile(backup, old, 0o600); err != nil {
			return fmt.Errorf("setup: backing up %s: %w", path, err)
		}
		fmt.Fprintf(env.Stdout, "backed up %s to %s\n", path, backup)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	what := []string{}
	if enable {
		what = append(what, "API_SERVER_ENABLED=true")
	}
	if key != "" {
		what = append(what, "API_SERVER_KEY (the same key as the project's HANDSET_AGENT_KEY)")
	}
	fmt.Fprintf(env.Stdout, "updated %s: %s; restart the Hermes gateway to apply it\n", path, strings.Join(what, ", "))
	return nil
}

// gatewayWait bounds how long setup waits for a started Hermes gateway to answer.
var gatewayWait = 60 * time.Second

// startHermesGateway runs `hermes gateway start` and waits for the API server's /health.
func startHermesGateway(ctx context.Context, env Env, dir string) error {
	bin := doctor.LookPath(env.Environ, "hermes")
	if bin == "" {
		return errors.New("--start-gateway: the hermes command is not on PATH: install Hermes Agent first")
	}
	cmd := exec.CommandContext(ctx, bin, "gateway", "start")
	cmd.Env = env.Environ
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("--start-gateway: `hermes gateway start` failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	projectEnv := env
	projectEnv.WorkDir = dir
	cfg, err := loadConfig(projectEnv, &globals{}, nil)
	if err != nil {
		return err
	}
	health := strings.TrimSuffix(strings.TrimSuffix(cfg.AgentURL(), "/"), "/v1") + "/health"
	deadline := time.Now().Add(gatewayWait)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, health, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				fmt.Fprintf(env.Stdout, "the Hermes gateway answers at %s\n", health)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("--start-gateway: the gateway started but %s did not answer within %s: is API_SERVER_ENABLED=true in ~/.hermes/.env?", health, gatewayWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// setupAttach points the number at publicURL, with the project's credentials, through
// carrierName (empty: the carrier the project's settings choose).
func setupAttach(ctx context.Context, env Env, dir, carrierName, number, publicURL string) error {
	projectEnv := env
	projectEnv.WorkDir = dir
	overrides, err := carrierOverride(carrierName)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(projectEnv, &globals{}, overrides)
	if err != nil {
		return err
	}
	c := chosenCarrier(cfg)
	return runAttachNumber(ctx, projectEnv, []string{number, "--carrier", c.Name, "--url", c.Numbers.Webhooks.VoiceURL(publicURL)})
}

// setupCarrier is the carrier setup's messages speak of before the project's settings
// exist: --carrier's, else the catalogue's first.
func setupCarrier(o setupOptions) registry.Carrier {
	if c, ok := registry.Find[registry.Carrier](o.carrier); ok {
		return c
	}
	return firstCarrier()
}
