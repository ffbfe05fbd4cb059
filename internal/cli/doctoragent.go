package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/gateway"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/voice"
)

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
	resp, err := d.clientFor(rawURL).Do(req)
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

// unreachable, rootCause and isTLSProblem read why a server did not answer, as the
// gateway's start-up advice does.
var (
	unreachable  = netfail.Describe
	rootCause    = netfail.RootCause
	isTLSProblem = netfail.IsCertificate
)

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
			a, err := hermes.New(hermes.Options{BaseURL: base, Key: key, Model: cfg.AgentModel(), Transport: cfg.Agent.Transport, HTTPClient: d.clientFor(base)})
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
	wsURL, httpURL, err := openclaw.GatewayURLs(cfg.AgentURL())
	if err != nil {
		return []doctor.Check{fixedCheck(secAgent, "gateway", resFail(err.Error(), "correct HANDSET_AGENT_URL (see config)"))}
	}
	named := d.openClawNamed()
	var roster onceValue[[]openclaw.AgentInfo]
	list := func(ctx context.Context) ([]openclaw.AgentInfo, error) {
		return roster.get(ctx, func(ctx context.Context) ([]openclaw.AgentInfo, error) {
			c, err := openclaw.New(openclaw.Options{URL: wsURL, Token: cfg.Agent.Key.Reveal(), HTTPClient: d.clientFor(cfg.AgentURL())})
			if err != nil {
				return nil, err
			}
			defer c.Close()
			// A gateway that is starting is asked again until just before the check's
			// own limit, so the check can still say so.
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) > 2*time.Second {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, dl.Add(-time.Second))
				defer cancel()
			}
			return c.ListAgents(ctx)
		})
	}
	// failure says what the shared diagnosis knows about err, or general.
	failure := func(err error, general doctor.Result) doctor.Result {
		sym := gateway.DiagnoseOpenClaw(cfg, err)
		detail, fix, ok := sym.Advice(cfg, err)
		switch {
		case !ok:
			return general
		case sym.Starting():
			return resWarn(detail, fix)
		}
		return resFail(detail, fix)
	}
	cs := []doctor.Check{
		netCheck(secAgent, "gateway", func(ctx context.Context) doctor.Result {
			agents, err := list(ctx)
			if err != nil {
				return failure(err, resFail("the gateway at "+wsURL+" did not list its agents: "+err.Error(),
					"check the gateway's logs; `handset agents` shows the same exchange"))
			}
			ids := make([]string, len(agents))
			for i, a := range agents {
				ids[i] = a.ID
			}
			if !cfg.Agent.Key.IsSet() {
				return resWarn(fmt.Sprintf("%s let Handset in without a token (gateway.auth.mode none): anything that reaches it can use its %d agent(s): %s", wsURL, len(agents), firstFew(ids, 8)),
					"unless that is deliberate, give the gateway a token (gateway.auth.token in ~/.openclaw/openclaw.json) and set "+config.OpenClawKeyVar+" (or HANDSET_AGENT_KEY) to it")
			}
			return resOK(fmt.Sprintf("%s accepts the token; %d agent(s): %s", wsURL, len(agents), firstFew(ids, 8)))
		}),
		netCheck(secAgent, "agent", func(ctx context.Context) doctor.Result {
			agents, err := list(ctx)
			if err != nil {
				return resSkip("not checked (see gateway)")
			}
			chosen, err := openclaw.SelectAgent(named, agents)
			if err != nil {
				return failure(err, resFail("calls cannot reach an agent: "+err.Error(), "set HANDSET_AGENT_MODEL=openclaw/<agent> to one of them"))
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
		base := httpURL + "/v1"
		cs = append(cs, netCheck(secAgent, "http endpoint", func(ctx context.Context) doctor.Result {
			a, err := d.get(ctx, base+"/models", bearerHeader(cfg.Agent.Key.Reveal()))
			switch {
			case err != nil:
				return resFail("no answer from "+base+": "+unreachable(err), "start the gateway (openclaw gateway) and check HANDSET_AGENT_URL")
			case a.status == http.StatusNotFound, a.status == http.StatusUnauthorized, a.status == http.StatusForbidden,
				a.status == http.StatusServiceUnavailable:
				return failure(&voice.ProviderError{Provider: "openclaw", Op: "GET /v1/models", Status: a.status}, resFail("", ""))
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
