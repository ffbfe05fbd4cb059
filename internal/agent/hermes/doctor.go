package hermes

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/openaiwire"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// checks are Hermes' doctor checks: its API server, the key, the model, the runs API, and
// on this machine ~/.hermes and `hermes gateway status`.
func checks(p registry.Probe) []doctor.Check {
	s := p.Settings
	base := strings.TrimRight(baseURL(s), "/")
	key := s.Value("HANDSET_AGENT_KEY")
	home := sync.OnceValue(func() Home { return ReadHome(p.Home, p.Dotenv) })
	var models doctor.Shared[doctor.Answer]
	getModels := func(ctx context.Context) (doctor.Answer, error) {
		return models.Get(ctx, func(ctx context.Context) (doctor.Answer, error) {
			return doctor.Get(ctx, p.HTTP(base+"/models"), base+"/models", doctor.Bearer(key))
		})
	}
	keyFix := "set HANDSET_AGENT_KEY (now from " + s.Source("HANDSET_AGENT_KEY") + ") to the API_SERVER_KEY in ~/.hermes/.env, the key the Hermes gateway was started with"
	return []doctor.Check{
		doctor.Net(p.Section, "api server", func(ctx context.Context) doctor.Result {
			a, err := doctor.Get(ctx, p.HTTP(base+"/health"), base+"/health", nil)
			if err != nil {
				fix := "start it: hermes gateway start (and check HANDSET_AGENT_URL, now " + base + ", from " + s.Source("HANDSET_AGENT_URL") + ")"
				if h := home(); h.Dir != "" && h.EnabledBy == "" && doctor.IsLoopback(base) {
					fix = "enable Hermes' API server: handset setup --enable-hermes, then hermes gateway restart"
				}
				return doctor.FailResult("no Hermes API server at "+base+": "+netfail.Describe(err), fix)
			}
			var health struct{ Status, Platform, Version string }
			if a.Status != http.StatusOK || json.Unmarshal(a.Body, &health) != nil || health.Status != "ok" {
				return doctor.FailResult(fmt.Sprintf("something else answers at %s/health (HTTP %d)", base, a.Status),
					"point HANDSET_AGENT_URL at Hermes' API server with /v1, like "+DefaultBaseURL+" (API_SERVER_PORT, default 8642)")
			}
			return doctor.OKResult(fmt.Sprintf("Hermes %s (%s) answers at %s", cmp.Or(health.Version, "of unknown version"), cmp.Or(health.Platform, "hermes"), base))
		}),
		doctor.Net(p.Section, "key", func(ctx context.Context) doctor.Result {
			if key == "" {
				return doctor.SkipResult("no key to check (see config)")
			}
			a, err := getModels(ctx)
			switch {
			case err != nil:
				return doctor.SkipResult("not checked: the API server did not answer (see api server)")
			case a.Status == http.StatusUnauthorized || a.Status == http.StatusForbidden:
				return doctor.FailResult(fmt.Sprintf("Hermes rejects the key (HTTP %d): it does not match its API_SERVER_KEY", a.Status), keyFix)
			case a.Status != http.StatusOK:
				return doctor.FailResult(fmt.Sprintf("GET %s/models answered HTTP %d: %s", base, a.Status, doctor.Snippet(a.Body)),
					"check HANDSET_AGENT_URL: it must end in /v1, like "+DefaultBaseURL)
			}
			return doctor.OKResult("accepted (" + s.Source("HANDSET_AGENT_KEY") + ")")
		}),
		doctor.Net(p.Section, "model", func(ctx context.Context) doctor.Result {
			if key == "" {
				return doctor.SkipResult("no key to list models with (see config)")
			}
			a, err := getModels(ctx)
			if err != nil || a.Status != http.StatusOK {
				return doctor.SkipResult("not checked (see key)")
			}
			ids, ok := openaiwire.ModelList(a.Body)
			want := model(s)
			switch {
			case !ok:
				return doctor.WarnResult("the model list is not in OpenAI's shape: "+doctor.Snippet(a.Body), "check that HANDSET_AGENT_URL is Hermes' API server")
			case !slices.Contains(ids, want):
				return doctor.FailResult(fmt.Sprintf("Hermes serves %s, not %q (HANDSET_AGENT_MODEL from %s)", doctor.FirstFew(ids, 5), want, s.Source("HANDSET_AGENT_MODEL")),
					"set HANDSET_AGENT_MODEL to one of "+doctor.FirstFew(ids, 5)+" (Hermes names it with API_SERVER_MODEL_NAME)")
			}
			return doctor.OKResult(want + " is served")
		}),
		doctor.Net(p.Section, "capabilities", func(ctx context.Context) doctor.Result {
			if key == "" {
				return doctor.SkipResult("no key (see config)")
			}
			transport := s.Value("HANDSET_AGENT_TRANSPORT")
			a, err := New(Options{BaseURL: base, Key: key, Model: model(s), Transport: transport, HTTPClient: p.HTTP(base)})
			if err != nil {
				return doctor.FailResult(err.Error(), "see config: HANDSET_AGENT_URL and HANDSET_AGENT_TRANSPORT")
			}
			c, err := a.Probe(ctx)
			switch {
			case voice.KindOf(err) == voice.KindAuth:
				return doctor.SkipResult("not checked (see key)")
			case err != nil:
				return doctor.WarnResult("could not read /v1/capabilities: "+err.Error(), "check Hermes' logs; turns fall back to chat completions when the runs API is not advertised")
			case transport == TransportChat:
				return doctor.OKResult("transport chat (HANDSET_AGENT_TRANSPORT); the runs API is " + map[bool]string{true: "available", false: "not advertised"}[c.RunsUsable()])
			case !c.Known:
				return doctor.WarnResult("this Hermes has no /v1/capabilities: turns use chat completions, which cannot stop a run when the caller interrupts",
					"upgrade Hermes (hermes update) to one with the runs API")
			case !c.RunsUsable():
				return doctor.WarnResult("the runs API (submit, events, stop) is not advertised: turns use chat completions, which cannot stop a run when the caller interrupts",
					"upgrade Hermes (hermes update) to one with run_stop")
			}
			return doctor.OKResult("runs API with stop: an interrupted turn is stopped on Hermes' side")
		}),
		doctor.Local(p.Section, "api server enabled", func(context.Context) doctor.Result { return enabled(p, base, home()) }),
		doctor.Net(p.Section, "gateway status", func(ctx context.Context) doctor.Result { return gatewayStatus(ctx, p, base) }),
	}
}

// enabled checks ~/.hermes: is the API server switched on, with a key Hermes accepts and
// the one Handset sends?
func enabled(p registry.Probe, base string, h Home) doctor.Result {
	if !doctor.IsLoopback(base) {
		return doctor.SkipResult("Hermes runs at " + base + ": its ~/.hermes is on that machine")
	}
	switch {
	case h.Dir == "":
		return doctor.SkipResult("no ~/.hermes on this machine (HOME " + cmp.Or(p.Home, "unset") + ")")
	case h.Problem != "":
		return doctor.FailResult("cannot read Hermes' settings: "+h.Problem, "correct the file and line named here")
	case h.EnabledBy == "":
		return doctor.WarnResult("nothing in ~/.hermes/.env or ~/.hermes/config.yaml enables Hermes' API server (API_SERVER_ENABLED=true)",
			"handset setup --enable-hermes (it writes API_SERVER_ENABLED=true and a key into ~/.hermes/.env), then hermes gateway restart")
	}
	hk, ours := h.Env[KeyVar], p.Settings.Value("HANDSET_AGENT_KEY")
	switch {
	case hk != "" && len(hk) < 16:
		return doctor.FailResult("API_SERVER_KEY in "+h.EnvPath+" is shorter than 16 characters: Hermes refuses to start its API server with it",
			"handset setup --enable-hermes --generate-key, then hermes gateway restart")
	case hk != "" && ours != "" && hk != ours:
		return doctor.WarnResult("HANDSET_AGENT_KEY (from "+p.Settings.Source("HANDSET_AGENT_KEY")+") differs from API_SERVER_KEY in "+h.EnvPath,
			"use the same key in both, or restart Hermes if it runs with another one")
	}
	return doctor.OKResult(h.EnabledBy)
}

// gatewayStatus runs `hermes gateway status` when the CLI is on the command's PATH.
func gatewayStatus(ctx context.Context, p registry.Probe, base string) doctor.Result {
	if !doctor.IsLoopback(base) {
		return doctor.SkipResult("Hermes runs at " + base + ", not on this machine")
	}
	bin := doctor.LookPath(p.Environ, "hermes")
	if bin == "" {
		return doctor.SkipResult("the hermes CLI is not on PATH")
	}
	cmd := exec.CommandContext(ctx, bin, "gateway", "status")
	cmd.Env = p.Environ
	cmd.Dir = p.WorkDir
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	first := doctor.FirstLine(out)
	if ctx.Err() != nil {
		return doctor.FailResult("hermes gateway status did not finish in time", "run it yourself: hermes gateway status")
	}
	if err != nil {
		return doctor.WarnResult("hermes gateway status: "+cmp.Or(first, err.Error()), "start the gateway: hermes gateway start")
	}
	return doctor.OKResult(cmp.Or(first, "running"))
}

// Home is what ~/.hermes says about the API server.
type Home struct {
	Dir        string            // ~/.hermes; "" when it does not exist
	EnvPath    string            // ~/.hermes/.env; "" when it does not exist
	Env        map[string]string // its variables
	ConfigPath string            // ~/.hermes/config.yaml; "" when it does not exist
	EnabledBy  string            // what enables the API server; "" when nothing does
	Problem    string            // a file that could not be read
}

// ReadHome reads ~/.hermes/.env (through dotenv; nil skips it) and ~/.hermes/config.yaml
// the way Hermes decides whether to start its API server: API_SERVER_ENABLED=true or
// API_SERVER_KEY set, or platforms.api_server.enabled (or api_server.enabled) in
// config.yaml.
func ReadHome(home string, dotenv func(path string) (map[string]string, error)) Home {
	var h Home
	if home == "" {
		return h
	}
	dir := filepath.Join(home, ".hermes")
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return h
	}
	h.Dir = dir
	if envPath := filepath.Join(dir, ".env"); dotenv != nil && fileExists(envPath) {
		h.EnvPath = envPath
		env, err := dotenv(envPath)
		if err != nil {
			h.Problem = err.Error()
		}
		h.Env = map[string]string{}
		for k, v := range env {
			h.Env[k] = strings.TrimSpace(v)
		}
	}
	switch v := strings.ToLower(h.Env["API_SERVER_ENABLED"]); {
	case v == "true" || v == "1" || v == "yes":
		h.EnabledBy = "API_SERVER_ENABLED=true in " + h.EnvPath
	case h.Env[KeyVar] != "":
		h.EnabledBy = "API_SERVER_KEY in " + h.EnvPath
	}
	if data, err := os.ReadFile(filepath.Join(dir, "config.yaml")); err == nil {
		h.ConfigPath = filepath.Join(dir, "config.yaml")
		var doc map[string]any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			h.Problem = h.ConfigPath + ": " + err.Error()
		}
		if h.EnabledBy == "" && (yamlTrue(doc, "platforms", "api_server", "enabled") || yamlTrue(doc, "api_server", "enabled")) {
			h.EnabledBy = "api_server enabled in " + h.ConfigPath
		}
	}
	return h
}

// fileExists reports whether path is a file that can be read.
func fileExists(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	f.Close()
	return true
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
