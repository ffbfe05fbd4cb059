package cli

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/carrier/twilio"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/voice"
)

// Sections of doctor's report, in the order they print.
const (
	secConfig  = "config"
	secAgent   = "agent"
	secSTT     = "stt"
	secTTS     = "tts"
	secVAD     = "vad"
	secEngines = "engines"
	secStore   = "store"
	secCarrier = "carrier"
	secPublic  = "public_url"
)

// Results, briefly.
func resOK(detail string) doctor.Result { return doctor.Result{Status: doctor.OK, Detail: detail} }
func resSkip(detail string) doctor.Result {
	return doctor.Result{Status: doctor.Skip, Detail: detail}
}
func resWarn(detail, fix string) doctor.Result {
	return doctor.Result{Status: doctor.Warn, Detail: detail, Fix: fix}
}
func resFail(detail, fix string) doctor.Result {
	return doctor.Result{Status: doctor.Fail, Detail: detail, Fix: fix}
}

// localCheck only reads this machine; netCheck talks to a server (skipped by --no-network).
func localCheck(sec, name string, run func(context.Context) doctor.Result) doctor.Check {
	return doctor.Check{Section: sec, Name: name, Run: run}
}

func netCheck(sec, name string, run func(context.Context) doctor.Result) doctor.Check {
	return doctor.Check{Section: sec, Name: name, Network: true, Run: run}
}

func fixedCheck(sec, name string, r doctor.Result) doctor.Check {
	return localCheck(sec, name, func(context.Context) doctor.Result { return r })
}

// checks lists every check the configuration calls for, section by section.
func (d *doctorRun) checks() []doctor.Check {
	var cs []doctor.Check
	for _, part := range []func() []doctor.Check{
		d.configChecks, d.agentChecks, d.sttChecks, d.ttsChecks, d.vadChecks,
		d.engineChecks, d.storeChecks, d.carrierChecks, d.publicChecks,
	} {
		cs = append(cs, part()...)
	}
	return cs
}

// origin says where a setting came from, for details: "environment", "env file .env:3".
func (d *doctorRun) origin(env string) string { return d.cfg.Source(env) }

// ---- configuration ----

func (d *doctorRun) configChecks() []doctor.Check {
	cfg := d.cfg
	var files []string
	if f := cfg.ConfigFile(); f != "" {
		files = append(files, "config file "+f)
	}
	if ef := cfg.EnvFiles(); len(ef) > 0 {
		files = append(files, "env files "+strings.Join(ef, ", "))
	}
	filesDetail := "no config file or .env: settings come from the environment and defaults"
	if len(files) > 0 {
		filesDetail = strings.Join(files, "; ")
	}
	cs := []doctor.Check{fixedCheck(secConfig, "files", resOK(filesDetail))}

	err := cfg.Validate(config.ValidateOptions{RequireAgent: true, RequireKeys: true})
	var ve *config.ValidationError
	switch {
	case errors.As(err, &ve):
		for _, fe := range ve.Errors {
			cs = append(cs, fixedCheck(secConfig, fe.Env, resFail(fe.Error(), fieldFix(fe))))
		}
	case err != nil:
		cs = append(cs, fixedCheck(secConfig, "settings", resFail(err.Error(), "see docs/configuration.md")))
	default:
		cs = append(cs, fixedCheck(secConfig, "settings", resOK("every setting is valid for handset serve")))
	}
	cs = append(cs, fixedCheck(secConfig, "secrets", resOK(d.secretsDetail())))
	if d.hermesEnv != "" && !d.explicitEnvFiles {
		if r, ok := d.hermesOnlyForDoctor(); ok {
			cs = append(cs, fixedCheck(secConfig, "~/.hermes/.env", r))
		}
	}
	return cs
}

// fieldFix turns a validation problem into its fix: the part of the reason after the colon
// ("is required with HANDSET_AGENT=hermes: set it, or API_SERVER_KEY, to ..."), or a
// request to change the value.
func fieldFix(fe config.FieldError) string {
	if _, after, ok := strings.Cut(fe.Reason, ": "); ok {
		return fe.Env + " (" + fe.YAML + "): " + after
	}
	where := ""
	if o := fe.Origin.String(); o != "default" {
		where = " in " + o
	}
	return "change " + fe.Env + " (" + fe.YAML + ")" + where + ": it " + fe.Reason
}

// secretsDetail says, for each secret this configuration uses, "set" or "missing" and where
// it came from; never a value.
func (d *doctorRun) secretsDetail() string {
	cfg := d.cfg
	type secret struct {
		env string
		s   config.Secret
	}
	var list []secret
	switch cfg.Agent.Runtime {
	case config.AgentHermes, config.AgentOpenClaw, config.AgentOpenAI, config.AgentWebhook:
		list = append(list, secret{"HANDSET_AGENT_KEY", cfg.Agent.Key})
	}
	if cfg.STT.Provider == config.STTDeepgram {
		list = append(list, secret{"DEEPGRAM_API_KEY", cfg.STT.Deepgram.Key})
	}
	if cfg.STT.Provider == config.STTOpenAI || cfg.TTS.Provider == config.TTSOpenAI {
		list = append(list, secret{"OPENAI_API_KEY", cfg.OpenAI.Key})
	}
	if cfg.TTS.Provider == config.TTSElevenLabs {
		list = append(list, secret{"ELEVENLABS_API_KEY", cfg.TTS.ElevenLabs.Key})
	}
	if twilioConfigured(cfg) {
		list = append(list, secret{"TWILIO_AUTH_TOKEN", cfg.Twilio.AuthToken})
	}
	if cfg.DatabaseURL.IsSet() {
		list = append(list, secret{"HANDSET_DATABASE_URL", cfg.DatabaseURL})
	}
	if len(list) == 0 {
		return "this configuration uses no keys"
	}
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = s.env + " " + s.s.Status()
		if s.s.IsSet() {
			parts[i] += " (" + d.origin(s.env) + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// hermesOnlyForDoctor warns about settings only ~/.hermes/.env supplies: doctor reads that
// file, `handset serve` does not.
func (d *doctorRun) hermesOnlyForDoctor() (doctor.Result, bool) {
	var from []string
	for _, s := range config.Settings() {
		o, _ := d.cfg.Origin(s.Env)
		if o.Kind == config.FromEnvFile && o.Path == d.hermesEnv {
			name := s.Env
			if o.Via != "" {
				name += " (via " + o.Via + ")"
			}
			from = append(from, name)
		}
	}
	if len(from) == 0 {
		return doctor.Result{}, false
	}
	cmd := "handset serve"
	for _, f := range d.cfg.EnvFiles() { // the project's .env first, so it keeps winning
		cmd += " --env-file " + f
	}
	return resWarn(strings.Join(from, ", ")+" come(s) from "+d.hermesEnv+", which doctor reads but handset serve does not",
		"start serve with it too: "+cmd+" (or copy the value into the project's .env)"), true
}

// ---- agent runtime ----

func (d *doctorRun) agentChecks() []doctor.Check {
	cfg := d.cfg
	switch cfg.Agent.Runtime {
	case "":
		return []doctor.Check{fixedCheck(secAgent, "runtime", resSkip("HANDSET_AGENT is not set (see config)"))}
	case config.AgentEcho:
		return []doctor.Check{fixedCheck(secAgent, "runtime", resOK("the built-in echo agent repeats what the caller says: nothing to reach"))}
	case config.AgentHermes:
		return d.hermesChecks()
	case config.AgentOpenClaw:
		return d.openClawChecks()
	case config.AgentOpenAI:
		return d.openAIAgentChecks()
	case config.AgentWebhook:
		return []doctor.Check{netCheck(secAgent, "webhook", d.webhookReachable)}
	}
	return []doctor.Check{fixedCheck(secAgent, "runtime", resSkip("HANDSET_AGENT="+cfg.Agent.Runtime+" is not a runtime (see config)"))}
}

// httpAnswer is what a probe got back.
type httpAnswer struct {
	status int
	body   []byte
	header http.Header
}

// get sends GET url with the headers and reads up to 1 MiB of the answer.
func (d *doctorRun) get(ctx context.Context, rawURL string, header map[string]string) (httpAnswer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return httpAnswer{}, err
	}
	req.Header.Set("User-Agent", "handset-doctor")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return httpAnswer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return httpAnswer{}, err
	}
	return httpAnswer{status: resp.StatusCode, body: body, header: resp.Header}, nil
}

// unreachable describes why a server did not answer: refused, unknown host, TLS, timeout.
func unreachable(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused: nothing listens there"
	case errors.As(err, &dnsErr):
		return "the host name does not resolve (" + dnsErr.Name + ")"
	case errors.As(err, &certErr), errors.As(err, &unknownCA), errors.As(err, &hostErr):
		return "its TLS certificate is not valid: " + rootCause(err)
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	}
	return rootCause(err)
}

// isTLSProblem reports whether err is a certificate problem (a server answered, badly).
func isTLSProblem(err error) bool {
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	return errors.As(err, &certErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr)
}

// rootCause is the innermost message of a url.Error chain, which repeats the URL otherwise.
func rootCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// bodySnippet is a short, single-line excerpt of a body, for details.
func bodySnippet(b []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// modelList reads an OpenAI-style model list ({"data":[{"id"}]}).
func modelList(body []byte) ([]string, bool) {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil || list.Data == nil {
		return nil, false
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, true
}

// firstFew joins up to n items: "a, b, c and 4 more".
func firstFew(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

func bearerHeader(key string) map[string]string {
	if key == "" {
		return nil
	}
	return map[string]string{"Authorization": "Bearer " + key}
}

// isLoopback reports whether rawURL points at this machine.
func isLoopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	return isLoopbackHost(u.Hostname()) || u.Hostname() == "0.0.0.0"
}

// ---- Hermes ----

// hermesHome is what ~/.hermes says about the API server.
type hermesHome struct {
	dir        string            // ~/.hermes; "" when it does not exist
	envPath    string            // ~/.hermes/.env; "" when it does not exist
	env        map[string]string // its variables
	configPath string            // ~/.hermes/config.yaml; "" when it does not exist
	enabledBy  string            // what enables the API server; "" when nothing does
	problem    string            // a file that could not be read
}

// readHermesHome reads ~/.hermes/.env and ~/.hermes/config.yaml the way Hermes decides
// whether to start its API server: API_SERVER_ENABLED=true or API_SERVER_KEY set, or
// platforms.api_server.enabled (or api_server.enabled) in config.yaml.
func readHermesHome(home string) hermesHome {
	var h hermesHome
	if home == "" {
		return h
	}
	dir := filepath.Join(home, ".hermes")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return h
	}
	h.dir = dir
	if data, err := os.ReadFile(filepath.Join(dir, ".env")); err == nil {
		h.envPath = filepath.Join(dir, ".env")
		entries, err := config.ParseDotenv(h.envPath, data)
		if err != nil {
			h.problem = err.Error()
		}
		h.env = map[string]string{}
		for _, e := range entries {
			h.env[e.Key] = strings.TrimSpace(e.Value)
		}
	}
	switch v := strings.ToLower(h.env["API_SERVER_ENABLED"]); {
	case v == "true" || v == "1" || v == "yes":
		h.enabledBy = "API_SERVER_ENABLED=true in " + h.envPath
	case h.env[config.HermesKeyVar] != "":
		h.enabledBy = "API_SERVER_KEY in " + h.envPath
	}
	if data, err := os.ReadFile(filepath.Join(dir, "config.yaml")); err == nil {
		h.configPath = filepath.Join(dir, "config.yaml")
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			h.problem = h.configPath + ": " + err.Error()
		}
		if h.enabledBy == "" && (yamlTrue(doc, "platforms", "api_server", "enabled") || yamlTrue(doc, "api_server", "enabled")) {
			h.enabledBy = "api_server enabled in " + h.configPath
		}
	}
	return h
}

// yamlTrue reports whether the value at path is true (or "true").
func yamlTrue(doc map[string]any, path ...string) bool {
	var cur any = doc
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		cur = m[k]
	}
	switch v := cur.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

func (d *doctorRun) hermesChecks() []doctor.Check {
	cfg := d.cfg
	base := strings.TrimRight(cfg.AgentURL(), "/")
	key := cfg.Agent.Key.Reveal()
	var models onceValue[httpAnswer]
	getModels := func(ctx context.Context) (httpAnswer, error) {
		return models.get(ctx, func(ctx context.Context) (httpAnswer, error) {
			return d.get(ctx, base+"/models", bearerHeader(key))
		})
	}
	keyFix := "set HANDSET_AGENT_KEY (now from " + d.origin("HANDSET_AGENT_KEY") + ") to the API_SERVER_KEY in ~/.hermes/.env, the key the Hermes gateway was started with"
	return []doctor.Check{
		netCheck(secAgent, "api server", func(ctx context.Context) doctor.Result {
			a, err := d.get(ctx, base+"/health", nil)
			if err != nil {
				fix := "start it: hermes gateway start (and check HANDSET_AGENT_URL, now " + base + ", from " + d.origin("HANDSET_AGENT_URL") + ")"
				if h := d.hermes(); h.dir != "" && h.enabledBy == "" && isLoopback(base) {
					fix = "enable Hermes' API server: handset setup --enable-hermes, then hermes gateway restart"
				}
				return resFail("no Hermes API server at "+base+": "+unreachable(err), fix)
			}
			var health struct{ Status, Platform, Version string }
			if a.status != http.StatusOK || json.Unmarshal(a.body, &health) != nil || health.Status != "ok" {
				return resFail(fmt.Sprintf("something else answers at %s/health (HTTP %d)", base, a.status),
					"point HANDSET_AGENT_URL at Hermes' API server with /v1, like "+config.DefaultHermesURL+" (API_SERVER_PORT, default 8642)")
			}
			return resOK(fmt.Sprintf("Hermes %s (%s) answers at %s", cmp.Or(health.Version, "of unknown version"), cmp.Or(health.Platform, "hermes"), base))
		}),
		netCheck(secAgent, "key", func(ctx context.Context) doctor.Result {
			if key == "" {
				return resSkip("no key to check (see config)")
			}
			a, err := getModels(ctx)
			switch {
			case err != nil:
				return resSkip("not checked: the API server did not answer (see api server)")
			case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
				return resFail(fmt.Sprintf("Hermes rejects the key (HTTP %d): it does not match its API_SERVER_KEY", a.status), keyFix)
			case a.status != http.StatusOK:
				return resFail(fmt.Sprintf("GET %s/models answered HTTP %d: %s", base, a.status, bodySnippet(a.body)),
					"check HANDSET_AGENT_URL: it must end in /v1, like "+config.DefaultHermesURL)
			}
			return resOK("accepted (" + d.origin("HANDSET_AGENT_KEY") + ")")
		}),
		netCheck(secAgent, "model", func(ctx context.Context) doctor.Result {
			if key == "" {
				return resSkip("no key to list models with (see config)")
			}
			a, err := getModels(ctx)
			if err != nil || a.status != http.StatusOK {
				return resSkip("not checked (see key)")
			}
			ids, ok := modelList(a.body)
			want := cfg.AgentModel()
			switch {
			case !ok:
				return resWarn("the model list is not in OpenAI's shape: "+bodySnippet(a.body), "check that HANDSET_AGENT_URL is Hermes' API server")
			case !slices.Contains(ids, want):
				return resFail(fmt.Sprintf("Hermes serves %s, not %q (HANDSET_AGENT_MODEL from %s)", firstFew(ids, 5), want, d.origin("HANDSET_AGENT_MODEL")),
					"set HANDSET_AGENT_MODEL to one of "+firstFew(ids, 5)+" (Hermes names it with API_SERVER_MODEL_NAME)")
			}
			return resOK(want + " is served")
		}),
		netCheck(secAgent, "capabilities", func(ctx context.Context) doctor.Result {
			if key == "" {
				return resSkip("no key (see config)")
			}
			a, err := hermes.New(hermes.Options{BaseURL: base, Key: key, Model: cfg.AgentModel(), Transport: cfg.Agent.Transport, HTTPClient: d.client})
			if err != nil {
				return resFail(err.Error(), "see config: HANDSET_AGENT_URL and HANDSET_AGENT_TRANSPORT")
			}
			c, err := a.Probe(ctx)
			switch {
			case voice.KindOf(err) == voice.KindAuth:
				return resSkip("not checked (see key)")
			case err != nil:
				return resWarn("could not read /v1/capabilities: "+err.Error(), "check Hermes' logs; turns fall back to chat completions when the runs API is not advertised")
			case cfg.Agent.Transport == hermes.TransportChat:
				return resOK("transport chat (HANDSET_AGENT_TRANSPORT); the runs API is " + map[bool]string{true: "available", false: "not advertised"}[c.RunsUsable()])
			case !c.Known:
				return resWarn("this Hermes has no /v1/capabilities: turns use chat completions, which cannot stop a run when the caller interrupts",
					"upgrade Hermes (hermes update) to one with the runs API")
			case !c.RunsUsable():
				return resWarn("the runs API (submit, events, stop) is not advertised: turns use chat completions, which cannot stop a run when the caller interrupts",
					"upgrade Hermes (hermes update) to one with run_stop")
			}
			return resOK("runs API with stop: an interrupted turn is stopped on Hermes' side")
		}),
		localCheck(secAgent, "api server enabled", func(context.Context) doctor.Result { return d.hermesEnabled(base) }),
		netCheck(secAgent, "gateway status", func(ctx context.Context) doctor.Result { return d.hermesGatewayStatus(ctx, base) }),
	}
}

// hermesEnabled checks ~/.hermes: is the API server switched on, with a key Hermes accepts
// and the one Handset sends?
func (d *doctorRun) hermesEnabled(base string) doctor.Result {
	if !isLoopback(base) {
		return resSkip("Hermes runs at " + base + ": its ~/.hermes is on that machine")
	}
	h := d.hermes()
	switch {
	case h.dir == "":
		return resSkip("no ~/.hermes on this machine (HOME " + cmp.Or(d.home, "unset") + ")")
	case h.problem != "":
		return resFail("cannot read Hermes' settings: "+h.problem, "correct the file and line named here")
	case h.enabledBy == "":
		return resWarn("nothing in ~/.hermes/.env or ~/.hermes/config.yaml enables Hermes' API server (API_SERVER_ENABLED=true)",
			"handset setup --enable-hermes (it writes API_SERVER_ENABLED=true and a key into ~/.hermes/.env), then hermes gateway restart")
	}
	hk := h.env[config.HermesKeyVar]
	switch {
	case hk != "" && len(hk) < 16:
		return resFail("API_SERVER_KEY in "+h.envPath+" is shorter than 16 characters: Hermes refuses to start its API server with it",
			"handset setup --enable-hermes --generate-key, then hermes gateway restart")
	case hk != "" && d.cfg.Agent.Key.IsSet() && hk != d.cfg.Agent.Key.Reveal():
		return resWarn("HANDSET_AGENT_KEY (from "+d.origin("HANDSET_AGENT_KEY")+") differs from API_SERVER_KEY in "+h.envPath,
			"use the same key in both, or restart Hermes if it runs with another one")
	}
	return resOK(h.enabledBy)
}

// hermesGatewayStatus runs `hermes gateway status` when the CLI is on PATH.
func (d *doctorRun) hermesGatewayStatus(ctx context.Context, base string) doctor.Result {
	if !isLoopback(base) {
		return resSkip("Hermes runs at " + base + ", not on this machine")
	}
	bin := lookPathIn(d.env.Environ, "hermes")
	if bin == "" {
		return resSkip("the hermes CLI is not on PATH")
	}
	cmd := exec.CommandContext(ctx, bin, "gateway", "status")
	cmd.Env = d.env.Environ
	cmd.Dir = d.env.WorkDir
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	first := firstOutputLine(out)
	if ctx.Err() != nil {
		return resFail("hermes gateway status did not finish in time", "run it yourself: hermes gateway status")
	}
	if err != nil {
		return resWarn("hermes gateway status: "+cmp.Or(first, err.Error()), "start the gateway: hermes gateway start")
	}
	return resOK(cmp.Or(first, "running"))
}

// firstOutputLine is the first non-empty line of out, at most 160 characters.
func firstOutputLine(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 160 {
				l = l[:160] + "…"
			}
			return strings.ToValidUTF8(l, "?")
		}
	}
	return ""
}

// lookPathIn finds an executable in the PATH of environ (not the process's own).
func lookPathIn(environ []string, name string) string {
	for _, dir := range filepath.SplitList(environValue(environ, "PATH")) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// ---- OpenClaw ----

// openClawNamed is the agent HANDSET_AGENT_MODEL names, or "" when it was left at its default.
func (d *doctorRun) openClawNamed() string {
	if o, _ := d.cfg.Origin("HANDSET_AGENT_MODEL"); o.Kind != config.FromDefault {
		return d.cfg.AgentModel()
	}
	return ""
}

func (d *doctorRun) openClawChecks() []doctor.Check {
	cfg := d.cfg
	wsURL := strings.Replace(strings.Replace(cfg.AgentURL(), "https://", "wss://", 1), "http://", "ws://", 1)
	named := d.openClawNamed()
	var roster onceValue[[]openclaw.AgentInfo]
	list := func(ctx context.Context) ([]openclaw.AgentInfo, error) {
		return roster.get(ctx, func(ctx context.Context) ([]openclaw.AgentInfo, error) {
			c, err := openclaw.New(openclaw.Options{URL: wsURL, Token: cfg.Agent.Key.Reveal()})
			if err != nil {
				return nil, err
			}
			defer c.Close()
			return c.ListAgents(ctx)
		})
	}
	tokenFix := "set " + config.OpenClawKeyVar + " (or HANDSET_AGENT_KEY) to the gateway's token (gateway.auth.token in ~/.openclaw/openclaw.json)"
	cs := []doctor.Check{
		netCheck(secAgent, "gateway", func(ctx context.Context) doctor.Result {
			agents, err := list(ctx)
			var pe *voice.ProviderError
			switch {
			case err == nil:
				ids := make([]string, len(agents))
				for i, a := range agents {
					ids[i] = a.ID
				}
				return resOK(fmt.Sprintf("%s accepts the token; %d agent(s): %s", wsURL, len(agents), firstFew(ids, 8)))
			case voice.KindOf(err) == voice.KindAuth:
				return resFail("the gateway at "+wsURL+" refuses the token: "+err.Error(), tokenFix)
			case errors.As(err, &pe) && pe.Op == "connect":
				return resFail("no OpenClaw gateway at "+wsURL+": "+unreachable(err),
					"start it (openclaw gateway) and check HANDSET_AGENT_URL (now "+cfg.AgentURL()+", from "+d.origin("HANDSET_AGENT_URL")+")")
			}
			return resFail("the gateway at "+wsURL+" did not list its agents: "+err.Error(), "check the gateway's logs; `handset agents` shows the same exchange")
		}),
		netCheck(secAgent, "agent", func(ctx context.Context) doctor.Result {
			agents, err := list(ctx)
			if err != nil {
				return resSkip("not checked (see gateway)")
			}
			chosen, err := openclaw.SelectAgent(named, agents)
			if err != nil {
				fix := err.Error()
				if !strings.Contains(fix, "HANDSET_AGENT_MODEL") {
					fix += ": set HANDSET_AGENT_MODEL=openclaw/<agent> to one of them"
				}
				return resFail("calls cannot reach an agent", fix)
			}
			if named == "" && sharedAgents[chosen] {
				return resWarn(fmt.Sprintf("calls reach %q, the gateway's only agent, which usually has every tool and your own memory", chosen),
					"give phone callers an agent of their own and name it: HANDSET_AGENT_MODEL=openclaw/<agent> (or HANDSET_AGENT_MODEL=openclaw/"+chosen+" to choose this one deliberately)")
			}
			how := "HANDSET_AGENT_MODEL from " + d.origin("HANDSET_AGENT_MODEL")
			if named == "" {
				how = "the gateway's only agent"
			}
			return resOK(fmt.Sprintf("calls reach %q (%s)", chosen, how))
		}),
	}
	if cfg.Agent.Transport == "http" {
		base := strings.TrimRight(cfg.AgentURL(), "/") + "/v1"
		cs = append(cs, netCheck(secAgent, "http endpoint", func(ctx context.Context) doctor.Result {
			a, err := d.get(ctx, base+"/models", bearerHeader(cfg.Agent.Key.Reveal()))
			switch {
			case err != nil:
				return resFail("no answer from "+base+": "+unreachable(err), "start the gateway (openclaw gateway) and check HANDSET_AGENT_URL")
			case a.status == http.StatusNotFound:
				return resFail("the gateway's OpenAI-compatible endpoint is off (GET /v1/models: 404)",
					"set gateway.http.endpoints.chatCompletions.enabled: true in ~/.openclaw/openclaw.json, or use HANDSET_AGENT_TRANSPORT=ws")
			case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
				return resFail(fmt.Sprintf("the endpoint refuses the token (HTTP %d)", a.status), tokenFix)
			case a.status != http.StatusOK:
				return resFail(fmt.Sprintf("GET %s/models answered HTTP %d: %s", base, a.status, bodySnippet(a.body)), "check the gateway's logs")
			}
			ids, _ := modelList(a.body)
			if agents, err := list(ctx); err == nil {
				if chosen, err := openclaw.SelectAgent(named, agents); err == nil && !slices.Contains(ids, "openclaw/"+chosen) {
					return resWarn(fmt.Sprintf("enabled, but it does not list openclaw/%s (it lists %s)", chosen, firstFew(ids, 6)),
						"check the agent's id with `handset agents`")
				}
			}
			return resOK("enabled at " + base)
		}))
	}
	return cs
}

// ---- OpenAI-compatible runtime and webhook ----

func (d *doctorRun) openAIAgentChecks() []doctor.Check {
	cfg := d.cfg
	base := strings.TrimRight(cfg.AgentURL(), "/")
	var models onceValue[httpAnswer]
	getModels := func(ctx context.Context) (httpAnswer, error) {
		return models.get(ctx, func(ctx context.Context) (httpAnswer, error) {
			return d.get(ctx, base+"/models", bearerHeader(cfg.Agent.Key.Reveal()))
		})
	}
	keyName := "HANDSET_AGENT_KEY"
	if o, _ := cfg.Origin("HANDSET_AGENT_KEY"); o.Via != "" {
		keyName = o.Via
	}
	return []doctor.Check{
		netCheck(secAgent, "api", func(ctx context.Context) doctor.Result {
			a, err := getModels(ctx)
			switch {
			case err != nil:
				return resFail("no answer from "+base+": "+unreachable(err),
					"start the server or correct HANDSET_AGENT_URL (now from "+d.origin("HANDSET_AGENT_URL")+")")
			case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
				return resFail(fmt.Sprintf("%s rejects the key (HTTP %d)", base, a.status),
					"set "+keyName+" to a key that server accepts (now "+cfg.Agent.Key.Status()+", from "+d.origin("HANDSET_AGENT_KEY")+")")
			case a.status == http.StatusNotFound:
				return resWarn(base+" has no /models: the key and model cannot be checked before a call", "run handset test for one real turn")
			case a.status != http.StatusOK:
				return resFail(fmt.Sprintf("GET %s/models answered HTTP %d: %s", base, a.status, bodySnippet(a.body)),
					"check HANDSET_AGENT_URL: it is the API root, like https://api.openai.com/v1")
			}
			return resOK(base + " accepts the key")
		}),
		netCheck(secAgent, "model", func(ctx context.Context) doctor.Result {
			a, err := getModels(ctx)
			if err != nil || a.status != http.StatusOK {
				return resSkip("not checked (see api)")
			}
			ids, ok := modelList(a.body)
			want := cfg.AgentModel()
			switch {
			case !ok:
				return resWarn("the model list is not in OpenAI's shape: "+bodySnippet(a.body), "run handset test for one real turn")
			case !slices.Contains(ids, want):
				return resWarn(fmt.Sprintf("%q is not among the models %s lists (%s)", want, base, firstFew(ids, 5)),
					"set HANDSET_AGENT_MODEL to one of them, unless the server takes models it does not list")
			}
			return resOK(want + " is listed")
		}),
	}
}

// webhookReachable checks that the webhook's server answers, without POSTing a turn.
func (d *doctorRun) webhookReachable(ctx context.Context) doctor.Result {
	u := d.cfg.AgentURL()
	a, err := d.get(ctx, u, nil)
	switch {
	case err != nil:
		return resFail("no answer from "+u+": "+unreachable(err), "start your webhook server, or correct HANDSET_AGENT_URL")
	case a.status >= 500:
		return resWarn(fmt.Sprintf("%s answers HTTP %d to a GET", u, a.status), "check the webhook server's logs; turns are POSTed (handset test sends one)")
	}
	return resOK(fmt.Sprintf("%s answers (HTTP %d to a GET; turns are POSTed, which doctor does not do)", u, a.status))
}

// ---- speech to text ----

func (d *doctorRun) sttChecks() []doctor.Check {
	cfg := d.cfg
	switch cfg.STT.Provider {
	case "":
		return []doctor.Check{fixedCheck(secSTT, "provider", resFail("HANDSET_STT is not set: handset serve needs speech recognition",
			"set HANDSET_STT=deepgram and DEEPGRAM_API_KEY (or sphinx for the offline engine)"))}
	case config.STTDeepgram:
		return []doctor.Check{netCheck(secSTT, "deepgram key", d.deepgramKey)}
	case config.STTOpenAI:
		return d.openAISpeechChecks(secSTT, "HANDSET_OPENAI_STT_MODEL", cfg.STT.OpenAIModel)
	case config.STTSphinx:
		return []doctor.Check{localCheck(secSTT, "sphinx", func(context.Context) doctor.Result { return d.engineReady("sphinx", "HANDSET_STT") })}
	}
	return []doctor.Check{fixedCheck(secSTT, "provider", resSkip("HANDSET_STT="+cfg.STT.Provider+" is not a provider (see config)"))}
}

func (d *doctorRun) deepgramKey(ctx context.Context) doctor.Result {
	cfg := d.cfg
	base := strings.TrimRight(cfg.STT.Deepgram.URL, "/")
	key := cfg.STT.Deepgram.Key.Reveal()
	var h map[string]string
	if key != "" {
		h = map[string]string{"Authorization": "Token " + key}
	}
	a, err := d.get(ctx, base+"/v1/projects", h)
	switch {
	case err != nil:
		return resFail("no answer from "+base+": "+unreachable(err), "check HANDSET_DEEPGRAM_URL (now from "+d.origin("HANDSET_DEEPGRAM_URL")+") and this machine's network")
	case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
		if key == "" {
			return resFail(fmt.Sprintf("%s wants a key (HTTP %d) and DEEPGRAM_API_KEY is missing", base, a.status), "set DEEPGRAM_API_KEY: create a key in the Deepgram console (API Keys)")
		}
		return resFail(fmt.Sprintf("Deepgram rejects DEEPGRAM_API_KEY (HTTP %d)", a.status),
			"create a key in the Deepgram console (API Keys) and set DEEPGRAM_API_KEY (now from "+d.origin("DEEPGRAM_API_KEY")+")")
	case a.status == http.StatusNotFound:
		return resWarn(base+" has no /v1/projects (a self-hosted server?): the key cannot be checked before a call", "run handset test: it streams speech to the recognizer")
	case a.status != http.StatusOK:
		return resFail(fmt.Sprintf("GET %s/v1/projects answered HTTP %d: %s", base, a.status, bodySnippet(a.body)), "check Deepgram's status page and HANDSET_DEEPGRAM_URL")
	}
	var p struct {
		Projects []json.RawMessage `json:"projects"`
	}
	_ = json.Unmarshal(a.body, &p)
	if key == "" {
		return resOK(base + " answers without a key")
	}
	return resOK(fmt.Sprintf("Deepgram accepts the key (%d project(s)); model %s, language %s", len(p.Projects), cfg.STT.Deepgram.Model, cfg.STT.Deepgram.Language))
}

// openAISpeechChecks check the OpenAI account (or compatible server) the speech providers
// use: the key, and that the model is listed.
func (d *doctorRun) openAISpeechChecks(sec, modelEnv, model string) []doctor.Check {
	cfg := d.cfg
	base := strings.TrimRight(cfg.OpenAI.URL, "/")
	var models onceValue[httpAnswer]
	getModels := func(ctx context.Context) (httpAnswer, error) {
		return models.get(ctx, func(ctx context.Context) (httpAnswer, error) {
			return d.get(ctx, base+"/models", bearerHeader(cfg.OpenAI.Key.Reveal()))
		})
	}
	return []doctor.Check{
		netCheck(sec, "openai key", func(ctx context.Context) doctor.Result {
			a, err := getModels(ctx)
			switch {
			case err != nil:
				return resFail("no answer from "+base+": "+unreachable(err), "check HANDSET_OPENAI_URL (now from "+d.origin("HANDSET_OPENAI_URL")+")")
			case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
				return resFail(fmt.Sprintf("%s rejects OPENAI_API_KEY (HTTP %d)", base, a.status),
					"set OPENAI_API_KEY to a valid key (now "+cfg.OpenAI.Key.Status()+", from "+d.origin("OPENAI_API_KEY")+")")
			case a.status == http.StatusNotFound:
				return resWarn(base+" has no /models: the key cannot be checked before a call", "run handset test")
			case a.status != http.StatusOK:
				return resFail(fmt.Sprintf("GET %s/models answered HTTP %d: %s", base, a.status, bodySnippet(a.body)), "check HANDSET_OPENAI_URL")
			}
			return resOK(base + " accepts the key")
		}),
		netCheck(sec, "openai model", func(ctx context.Context) doctor.Result {
			a, err := getModels(ctx)
			if err != nil || a.status != http.StatusOK {
				return resSkip("not checked (see openai key)")
			}
			ids, ok := modelList(a.body)
			if !ok || !slices.Contains(ids, model) {
				return resWarn(fmt.Sprintf("%q is not among the models %s lists (%s)", model, base, firstFew(ids, 5)),
					"set "+modelEnv+" to one it serves, unless it takes models it does not list")
			}
			return resOK(model + " is listed")
		}),
	}
}

// ---- text to speech ----

func (d *doctorRun) ttsChecks() []doctor.Check {
	cfg := d.cfg
	switch cfg.TTS.Provider {
	case "":
		return []doctor.Check{fixedCheck(secTTS, "provider", resFail("HANDSET_TTS is not set: handset serve needs a voice",
			"set HANDSET_TTS=elevenlabs and ELEVENLABS_API_KEY (or flite for the offline engine)"))}
	case config.TTSElevenLabs:
		return d.elevenLabsChecks()
	case config.TTSOpenAI:
		return d.openAISpeechChecks(secTTS, "HANDSET_OPENAI_TTS_MODEL", cfg.TTS.OpenAI.Model)
	case config.TTSFlite, config.TTSEspeak:
		name := cfg.TTS.Provider
		return []doctor.Check{localCheck(secTTS, name, func(context.Context) doctor.Result { return d.engineReady(name, "HANDSET_TTS") })}
	}
	return []doctor.Check{fixedCheck(secTTS, "provider", resSkip("HANDSET_TTS="+cfg.TTS.Provider+" is not a provider (see config)"))}
}

func (d *doctorRun) elevenLabsChecks() []doctor.Check {
	cfg := d.cfg
	base := strings.TrimRight(cfg.TTS.ElevenLabs.URL, "/")
	voiceID := cfg.TTS.ElevenLabs.Voice
	key := cfg.TTS.ElevenLabs.Key.Reveal()
	var voiceAnswer onceValue[httpAnswer]
	get := func(ctx context.Context) (httpAnswer, error) {
		return voiceAnswer.get(ctx, func(ctx context.Context) (httpAnswer, error) {
			var h map[string]string
			if key != "" {
				h = map[string]string{"xi-api-key": key}
			}
			return d.get(ctx, base+"/v1/voices/"+url.PathEscape(voiceID), h)
		})
	}
	// ElevenLabs answers a missing voice with 404 or, in older API versions, 400 voice_not_found.
	voiceMissing := func(a httpAnswer) bool {
		return a.status == http.StatusNotFound ||
			(a.status == http.StatusBadRequest && (bytes.Contains(a.body, []byte("voice_not_found")) || bytes.Contains(a.body, []byte("voice_does_not_exist"))))
	}
	// A key scoped without voices_read is refused on this route though it can speak.
	scoped := func(a httpAnswer) bool {
		return a.status == http.StatusUnauthorized && bytes.Contains(a.body, []byte("missing_permissions"))
	}
	return []doctor.Check{
		netCheck(secTTS, "elevenlabs key", func(ctx context.Context) doctor.Result {
			a, err := get(ctx)
			switch {
			case err != nil:
				return resFail("no answer from "+base+": "+unreachable(err), "check HANDSET_ELEVENLABS_URL (now from "+d.origin("HANDSET_ELEVENLABS_URL")+") and this machine's network")
			case scoped(a):
				return resWarn("the key may not read voices (it lacks the voices_read permission), so the voice was not checked",
					"give the key voices_read in the ElevenLabs settings, or confirm speech with handset test")
			case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
				if key == "" {
					return resFail(fmt.Sprintf("%s wants a key (HTTP %d) and ELEVENLABS_API_KEY is missing", base, a.status), "set ELEVENLABS_API_KEY: create one in the ElevenLabs settings (API Keys)")
				}
				return resFail(fmt.Sprintf("ElevenLabs rejects ELEVENLABS_API_KEY (HTTP %d)", a.status),
					"create a key in the ElevenLabs settings (API Keys) and set ELEVENLABS_API_KEY (now from "+d.origin("ELEVENLABS_API_KEY")+")")
			case a.status == http.StatusOK || voiceMissing(a):
				return resOK("ElevenLabs accepts the key")
			}
			return resFail(fmt.Sprintf("GET %s/v1/voices/%s answered HTTP %d: %s", base, voiceID, a.status, bodySnippet(a.body)), "check HANDSET_ELEVENLABS_URL and ElevenLabs' status page")
		}),
		netCheck(secTTS, "elevenlabs voice", func(ctx context.Context) doctor.Result {
			a, err := get(ctx)
			switch {
			case err != nil || scoped(a):
				return resSkip("not checked (see elevenlabs key)")
			case voiceMissing(a):
				return resFail(fmt.Sprintf("there is no voice %q in this ElevenLabs account (HANDSET_ELEVENLABS_VOICE from %s)", voiceID, d.origin("HANDSET_ELEVENLABS_VOICE")),
					"set HANDSET_ELEVENLABS_VOICE to a voice id from My Voices in ElevenLabs (add library voices there first)")
			case a.status != http.StatusOK:
				return resSkip("not checked (see elevenlabs key)")
			}
			var v struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(a.body, &v)
			return resOK(fmt.Sprintf("voice %s (%s), model %s", voiceID, cmp.Or(v.Name, "unnamed"), cfg.TTS.ElevenLabs.Model))
		}),
	}
}

// ---- embedded engines and VAD ----

// engineReady checks the offline engine name, which setting selects.
func (d *doctorRun) engineReady(name, setting string) doctor.Result {
	for _, e := range engines(d.cfg) {
		if e.Name != name {
			continue
		}
		switch {
		case !e.Linked && name == "espeak":
			return resFail("espeak-ng is not installed ("+setting+"="+name+")", "apt-get install espeak-ng, or choose another "+setting)
		case !e.Linked:
			return resFail(name+" is not in this binary ("+setting+"="+name+"; built without -tags embedded)", setupHint)
		case e.Problem != "":
			return resFail(name+" is linked, but its files are missing", e.Problem)
		}
		switch name {
		case "sphinx":
			return resOK("PocketSphinx ready (model " + d.cfg.STT.Sphinx.Model + "); offline and demo quality: a cloud STT hears callers better")
		case "flite":
			return resOK("Flite ready (voices " + d.cfg.TTS.FliteVoice + " for calls, " + d.cfg.TTS.FliteWidebandVoice + " for browsers)")
		}
		return resOK(name + " ready")
	}
	return resFail("no engine named "+name, "choose another "+setting)
}

func (d *doctorRun) vadChecks() []doctor.Check {
	return []doctor.Check{localCheck(secVAD, "engine", d.vadEngine)}
}

// vadEngine checks that the configured VAD, or the best available one, loads and makes a
// detector, as serve would.
func (d *doctorRun) vadEngine(context.Context) doctor.Result {
	cfg := d.cfg
	try := func(name string) error {
		switch name {
		case config.VADSilero:
			f, err := sileroVAD(cfg)
			if err != nil {
				return err
			}
			return detectorWorks(f, nil)
		case config.VADWebRTC:
			f, closeFn, err := webrtcVAD(cfg)
			if err != nil {
				return err
			}
			return detectorWorks(f, closeFn)
		}
		return nil
	}
	switch choice := cfg.VAD.Engine; choice {
	case config.VADEnergy:
		return resOK("energy (HANDSET_VAD): simple, and weak in noise")
	case config.VADSilero, config.VADWebRTC:
		if err := try(choice); err != nil {
			return resFail("HANDSET_VAD="+choice+" cannot load: "+err.Error(), "run ./scripts/engines.sh (or ./scripts/setup.sh), or set HANDSET_ENGINES_DIR, or choose another HANDSET_VAD")
		}
		return resOK(choice + " (HANDSET_VAD)")
	case "":
		serr := try(config.VADSilero)
		if serr == nil {
			return resOK("silero (the best available)")
		}
		werr := try(config.VADWebRTC)
		if werr == nil {
			return resOK("webrtc (silero unavailable: " + serr.Error() + ")")
		}
		return resWarn("only the energy VAD is available, and it is weak in noise (silero: "+serr.Error()+"; webrtc: "+werr.Error()+")",
			"run ./scripts/engines.sh for the WebRTC VAD (./scripts/setup.sh also builds Silero in), or set HANDSET_VAD=energy to accept it")
	}
	return resSkip("HANDSET_VAD=" + cfg.VAD.Engine + " is not an engine (see config)")
}

// detectorWorks makes one 8 kHz detector and releases everything.
func detectorWorks(newVAD func(int) (vad.Detector, error), closeFn func()) error {
	if closeFn != nil {
		defer closeFn()
	}
	det, err := newVAD(8000)
	if err != nil {
		return err
	}
	if c, ok := det.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	return nil
}

func (d *doctorRun) engineChecks() []doctor.Check {
	used := map[string]string{}
	switch d.cfg.STT.Provider {
	case config.STTSphinx:
		used["sphinx"] = secSTT
	}
	switch d.cfg.TTS.Provider {
	case config.TTSFlite, config.TTSEspeak:
		used[d.cfg.TTS.Provider] = secTTS
	}
	var cs []doctor.Check
	for _, e := range engines(d.cfg) {
		name := e.Name + " (" + e.Role + ")"
		state := strings.TrimPrefix(e.String(), name+": ")
		var r doctor.Result
		switch {
		case e.Linked && e.Problem == "":
			r = resOK(state)
		case used[e.Name] != "":
			r = resSkip(state + " (in use: see " + used[e.Name] + ")")
		default:
			r = resSkip(state + " (not used by this configuration)")
		}
		cs = append(cs, fixedCheck(secEngines, name, r))
	}
	return cs
}

// ---- store ----

func (d *doctorRun) storeChecks() []doctor.Check {
	cs := []doctor.Check{localCheck(secStore, "data dir", func(context.Context) doctor.Result { return d.dataDir() })}
	if d.cfg.DatabaseURL.IsSet() {
		cs = append(cs, fixedCheck(secStore, "database", resWarn(
			"HANDSET_DATABASE_URL is set ("+d.origin("HANDSET_DATABASE_URL")+"), but this version keeps only call journals, on disk in HANDSET_DATA_DIR",
			"unset HANDSET_DATABASE_URL until a version with the PostgreSQL store; nothing is written there now")))
	}
	return cs
}

// dataDir checks that HANDSET_DATA_DIR exists and is writable, or can be created.
func (d *doctorRun) dataDir() doctor.Result {
	dir := d.cfg.DataDir
	shown := dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(cmpOrDot(d.env.WorkDir), dir)
	}
	fix := "set HANDSET_DATA_DIR (now " + shown + ", from " + d.origin("HANDSET_DATA_DIR") + ") to a folder this user can write, or fix its permissions"
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return resFail(shown+" is a file, not a folder", fix)
	case err == nil:
		if err := probeWrite(dir); err != nil {
			return resFail("cannot write in "+shown+": "+err.Error(), fix)
		}
		return resOK(shown + " is writable (call journals go in " + filepath.Join(shown, "calls") + ")")
	case !errors.Is(err, os.ErrNotExist):
		return resFail("cannot use "+shown+": "+err.Error(), fix)
	}
	// Not there yet: serve creates it, if the nearest existing parent lets it.
	parent := filepath.Dir(dir)
	for {
		pst, err := os.Stat(parent)
		switch {
		case err == nil && !pst.IsDir():
			return resFail(shown+" cannot be created: "+parent+" is a file", fix)
		case err == nil:
			if err := probeWrite(parent); err != nil {
				return resFail(shown+" does not exist and cannot be created in "+parent+": "+err.Error(), fix)
			}
			return resOK(shown + " does not exist yet; handset serve creates it")
		case !errors.Is(err, os.ErrNotExist):
			return resFail(shown+" cannot be created: "+err.Error(), fix)
		}
		next := filepath.Dir(parent)
		if next == parent {
			return resFail(shown+" cannot be created: no parent folder exists", fix)
		}
		parent = next
	}
}

// probeWrite creates and removes a small file in dir.
func probeWrite(dir string) error {
	f, err := os.CreateTemp(dir, ".handset-doctor-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return pe.Err
		}
		return err
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// ---- carrier ----

func twilioConfigured(cfg *config.Config) bool {
	return cfg.Twilio.AccountSID != "" || cfg.Twilio.AuthToken.IsSet()
}

// voiceWebhook is the URL a number's voice webhook must hold: HANDSET_PUBLIC_URL + /twilio/voice.
func voiceWebhook(public string) string { return strings.TrimRight(public, "/") + twilioVoicePath }

func (d *doctorRun) carrierChecks() []doctor.Check {
	cfg := d.cfg
	if !twilioConfigured(cfg) {
		return []doctor.Check{fixedCheck(secCarrier, "twilio", resSkip("Twilio is not configured: browser calls only"))}
	}
	if cfg.Twilio.AccountSID == "" || !cfg.Twilio.AuthToken.IsSet() {
		return []doctor.Check{fixedCheck(secCarrier, "twilio", resSkip("Twilio credentials are incomplete (see config)"))}
	}
	var account onceValue[twilio.Account]
	getAccount := func(ctx context.Context) (twilio.Account, error) {
		return account.get(ctx, func(ctx context.Context) (twilio.Account, error) {
			rest, err := twilioREST(cfg)
			if err != nil {
				return twilio.Account{}, err
			}
			return rest.Account(ctx)
		})
	}
	var number onceValue[twilio.Number]
	getNumber := func(ctx context.Context) (twilio.Number, error) {
		return number.get(ctx, func(ctx context.Context) (twilio.Number, error) {
			rest, err := twilioREST(cfg)
			if err != nil {
				return twilio.Number{}, err
			}
			return rest.FindNumber(ctx, cfg.PhoneNumber)
		})
	}
	num := cfg.PhoneNumber
	// attach-number points the number at HANDSET_PUBLIC_URL + /twilio/voice by default.
	attach := "handset attach-number " + cmp.Or(num, "NUMBER")
	return []doctor.Check{
		netCheck(secCarrier, "twilio credentials", func(ctx context.Context) doctor.Result {
			acct, err := getAccount(ctx)
			var pe *voice.ProviderError
			isPE := errors.As(err, &pe)
			kind := voice.KindOf(err)
			switch {
			case kind == voice.KindAuth:
				return resFail(fmt.Sprintf("Twilio rejects the auth token (TWILIO_AUTH_TOKEN, from %s) for account %s (TWILIO_ACCOUNT_SID, from %s)",
					d.origin("TWILIO_AUTH_TOKEN"), cfg.Twilio.AccountSID, d.origin("TWILIO_ACCOUNT_SID")),
					"copy the Account SID and Auth Token of the same account from "+twilioConsole+"; after rotating the token, use the new primary one")
			case err != nil && !isPE:
				return resFail(err.Error(), "correct the Twilio settings named here")
			case err != nil && (kind == voice.KindTransient || kind == voice.KindTimeout) && pe.Status == 0:
				return resFail("cannot reach Twilio at "+cfg.Twilio.APIURL+": "+err.Error(), "check this machine's network, https://status.twilio.com and HANDSET_TWILIO_API_URL")
			case err != nil:
				return resFail("Twilio answered: "+err.Error(), "check https://status.twilio.com, the account in the Twilio console, and HANDSET_TWILIO_API_URL")
			case acct.Status != "" && acct.Status != "active":
				return resFail(fmt.Sprintf("Twilio account %s is %s", acct.SID, acct.Status), "reactivate the account in the Twilio console, or use another one")
			case strings.EqualFold(acct.Type, "Trial"):
				return resWarn(fmt.Sprintf("%s (%s) is a trial account: calls start with Twilio's trial notice and can only reach verified numbers", acct.FriendlyName, acct.SID),
					"upgrade the account in the Twilio console")
			}
			return resOK(fmt.Sprintf("%s (%s, %s)", cmp.Or(acct.FriendlyName, acct.SID), acct.SID, cmp.Or(acct.Status, "status unknown")))
		}),
		netCheck(secCarrier, "phone number", func(ctx context.Context) doctor.Result {
			if num == "" {
				return resWarn("HANDSET_PHONE_NUMBER is not set: doctor cannot check which number rings Handset, and outbound calls have no caller id",
					"set HANDSET_PHONE_NUMBER to your Twilio number in E.164 form, like +14155550100")
			}
			if _, err := getAccount(ctx); err != nil {
				return resSkip("not checked (see twilio credentials)")
			}
			n, err := getNumber(ctx)
			switch {
			case errors.Is(err, twilio.ErrNumberNotFound):
				return resFail(err.Error()+" (HANDSET_PHONE_NUMBER from "+d.origin("HANDSET_PHONE_NUMBER")+")",
					"set HANDSET_PHONE_NUMBER to one of the account's numbers, or buy or port this number into the account")
			case err != nil:
				return resFail("cannot look the number up: "+err.Error(), "check the Twilio settings and this machine's network")
			}
			return resOK(fmt.Sprintf("%s (%s) is on the account", n.PhoneNumber, n.SID))
		}),
		netCheck(secCarrier, "voice webhook", func(ctx context.Context) doctor.Result {
			if num == "" {
				return resSkip("no HANDSET_PHONE_NUMBER to check")
			}
			n, err := getNumber(ctx)
			if err != nil {
				return resSkip("not checked (see phone number)")
			}
			public := strings.TrimRight(cfg.PublicURL, "/")
			want := voiceWebhook(public)
			switch {
			case n.VoiceApplicationSID != "":
				return resFail(fmt.Sprintf("calls to %s go to the TwiML app %s, which overrides the number's voice URL", n.PhoneNumber, n.VoiceApplicationSID),
					attach+" (it points the number at Handset and clears the app)")
			case public == "":
				return resWarn(fmt.Sprintf("calls to %s go to %s; HANDSET_PUBLIC_URL is not set, so doctor cannot tell whether that is Handset", n.PhoneNumber, cmp.Or(n.VoiceURL, "nowhere (no voice URL)")),
					"set HANDSET_PUBLIC_URL, then "+attach)
			case n.VoiceURL == "":
				return resFail(fmt.Sprintf("%s has no voice webhook: its calls never reach Handset", n.PhoneNumber), attach)
			case !sameWebhookURL(n.VoiceURL, want):
				return resFail(fmt.Sprintf("calls to %s go to %s, not %s", n.PhoneNumber, n.VoiceURL, want), attach)
			case n.VoiceMethod != "" && !strings.EqualFold(n.VoiceMethod, http.MethodPost):
				return resFail(fmt.Sprintf("Twilio calls the webhook with %s; Handset answers POST", n.VoiceMethod), attach)
			}
			return resOK(fmt.Sprintf("calls to %s go to %s", n.PhoneNumber, want))
		}),
	}
}

// ---- public URL ----

func (d *doctorRun) publicChecks() []doctor.Check {
	cfg := d.cfg
	twilioOn := twilioConfigured(cfg)
	public := strings.TrimRight(cfg.PublicURL, "/")
	if public == "" {
		if twilioOn {
			return []doctor.Check{fixedCheck(secPublic, "address", resFail("HANDSET_PUBLIC_URL is not set: Twilio needs an address to reach Handset, and webhook signatures are checked against it",
				"set HANDSET_PUBLIC_URL to the https address of your tunnel or domain, like https://voice.example.com"))}
		}
		return []doctor.Check{fixedCheck(secPublic, "address", resSkip("not set: browser calls on this machine only"))}
	}
	u, err := url.Parse(public)
	var addr doctor.Result
	switch {
	case err != nil:
		addr = resFail("HANDSET_PUBLIC_URL does not parse: "+err.Error(), "set it like https://voice.example.com")
	case u.Scheme != "https" && twilioOn:
		addr = resFail(public+" is not https: Twilio's media streams need wss://, which Handset derives from it",
			"put Handset behind TLS (a tunnel such as cloudflared or ngrok, or a reverse proxy) and set HANDSET_PUBLIC_URL to its https:// address")
	case twilioOn && (isLoopbackHost(u.Hostname()) || isPrivateHost(u.Hostname())):
		addr = resWarn(public+" is not an internet address ("+u.Hostname()+" is this machine or a private network): Twilio cannot reach it, so real calls fail",
			"set HANDSET_PUBLIC_URL to the public https address of your tunnel or domain (fine as it is against a local fake)")
	case u.Scheme != "https" && !isLoopback(public):
		addr = resWarn(public+" is not https: browsers only allow the microphone on https pages (or localhost)",
			"serve Handset over TLS and set HANDSET_PUBLIC_URL to its https:// address")
	default:
		addr = resOK(public + " (" + d.origin("HANDSET_PUBLIC_URL") + ")")
	}
	listen := cfg.Listen
	return []doctor.Check{
		fixedCheck(secPublic, "address", addr),
		netCheck(secPublic, "reachable", func(ctx context.Context) doctor.Result {
			a, err := d.get(ctx, public+"/healthz", nil)
			switch {
			case err != nil && isTLSProblem(err):
				return resFail(public+" answers, but "+unreachable(err), "give the tunnel or proxy a valid certificate for its host name")
			case err != nil:
				return resWarn(public+" is not reachable: "+unreachable(err)+": start handset serve and your tunnel",
					"start handset serve (it listens on "+listen+") and the tunnel or proxy that forwards "+public+" to it, then run doctor again")
			case a.status != http.StatusOK || strings.TrimSpace(string(a.body)) != "ok":
				return resFail(fmt.Sprintf("something else answers at %s/healthz (HTTP %d: %s)", public, a.status, bodySnippet(a.body)),
					"point the tunnel or proxy for "+public+" at handset serve on "+listen)
			}
			return resOK("Handset answers at " + public + "/healthz")
		}),
	}
}
