package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/engines"
)

// demoGreeting is spoken when a demo call starts, unless HANDSET_FIRST_MESSAGE says otherwise.
const demoGreeting = "Hello! This is Handset. What can I do for you?"

// runtimeProbe is where demo looks for an agent runtime on this machine.
type runtimeProbe struct {
	runtime string // HANDSET_AGENT value it selects
	label   string
	url     string // base URL of the runtime
}

// demoProbes are tried in order of preference; tests point them at fakes.
var demoProbes = []runtimeProbe{
	{runtime: config.AgentHermes, label: "Hermes Agent", url: "http://127.0.0.1:8642"},
	{runtime: config.AgentOpenClaw, label: "OpenClaw", url: "http://127.0.0.1:18789"},
	{runtime: config.AgentOpenAI, label: "Ollama", url: "http://127.0.0.1:11434"},
}

// probeTimeout bounds each localhost probe: a runtime that is there answers at once.
const probeTimeout = 700 * time.Millisecond

func runDemo(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("demo", env)
	listen := fs.String("listen", "", "HTTP listen `address` (overrides HANDSET_LISTEN)")
	if err := parse(fs, args); err != nil {
		return err
	}
	overrides := map[string]string{"HANDSET_BROWSER": "true"}
	if *listen != "" {
		overrides["HANDSET_LISTEN"] = *listen
	}
	// What the user configured wins; the demo fills in only what is unset.
	cfg, err := loadConfig(env, g, overrides)
	if err != nil {
		return err
	}
	for env, def := range map[string]string{"HANDSET_STT": config.STTSphinx, "HANDSET_TTS": config.TTSFlite, "HANDSET_FIRST_MESSAGE": demoGreeting} {
		if o, _ := cfg.Origin(env); o.Kind == config.FromDefault {
			overrides[env] = def
		}
	}
	reload := func(extra map[string]string) (*config.Config, error) {
		o := maps.Clone(overrides)
		maps.Copy(o, extra)
		return loadConfig(env, g, o)
	}
	agentNote := "chosen by HANDSET_AGENT"
	if o, _ := cfg.Origin("HANDSET_AGENT"); o.Kind == config.FromDefault {
		cfg, agentNote, err = chooseDemoAgent(ctx, env, reload)
	} else {
		cfg, err = reload(nil)
	}
	if err != nil {
		return err
	}
	if err := cfg.Validate(config.ValidateOptions{RequireAgent: true, RequireKeys: true}); err != nil {
		warnSettings(newLogger(env.Stderr, cfg), cfg) // openGateway, which tells them, is not reached
		return err
	}
	if err := demoEnginesReady(cfg); err != nil {
		warnSettings(newLogger(env.Stderr, cfg), cfg)
		return err
	}
	gw, err := openGateway(ctx, env, cfg)
	if err != nil {
		return err
	}
	defer gw.Close()
	addr := gw.Addr().(*net.TCPAddr)
	fmt.Fprintf(env.Stdout, "handset demo\n  speech to text: %s\n  text to speech: %s\n  agent:          %s (%s)\n",
		describeSTT(cfg), describeTTS(cfg), cfg.Agent.Runtime, agentNote)
	if !addr.IP.IsLoopback() {
		fmt.Fprintln(env.Stdout, "  warning: listening beyond this machine: the page takes only browsers that opened its access link, and browsers give the microphone only to localhost or HTTPS pages")
	}
	host := addr.String()
	if addr.IP.IsUnspecified() {
		host = fmt.Sprintf("127.0.0.1:%d", addr.Port)
	}
	if cfg.BrowserToken.IsSet() {
		fmt.Fprintf(env.Stdout, "Open http://%s/?token=<your HANDSET_BROWSER_TOKEN> once, then press Call.\n", host)
	} else {
		fmt.Fprintf(env.Stdout, "Open http://%s/ and press Call.\n", host)
	}
	return gw.Serve(ctx, env.Ready)
}

// demoEnginesReady refuses to start without the offline engines the demo is set to use,
// saying what to install.
func demoEnginesReady(cfg *config.Config) error {
	if missing := offlineEnginesMissing(cfg); len(missing) > 0 {
		return fmt.Errorf("the demo's offline engines are not ready:\n  %s", strings.Join(missing, "\n  "))
	}
	return nil
}

// offlineEnginesMissing lists, with the fix, each offline engine cfg uses for speech
// that this binary cannot run.
func offlineEnginesMissing(cfg *config.Config) []string {
	var missing []string
	for _, e := range engines.List(cfg) {
		used := (e.Role == "stt" && e.Name == cfg.STT.Provider) || (e.Role == "tts" && e.Name == cfg.TTS.Provider)
		if used && e.Problem != "" {
			missing = append(missing, fmt.Sprintf("%s: %s", e.Name, e.Problem))
		}
	}
	return missing
}

func describeSTT(cfg *config.Config) string {
	if cfg.STT.Provider == config.STTSphinx {
		return "sphinx (PocketSphinx, offline; demo quality, set HANDSET_STT for real calls)"
	}
	return cfg.STT.Provider
}

func describeTTS(cfg *config.Config) string {
	if cfg.TTS.Provider == config.TTSFlite {
		return fmt.Sprintf("flite (offline; voice %s in the browser, %s on phone calls)", cfg.TTS.FliteWidebandVoice, cfg.TTS.FliteVoice)
	}
	return cfg.TTS.Provider
}

// chooseDemoAgent probes localhost for an agent runtime and configures the first usable
// one (in demoProbes order), or the echo agent. It returns the configuration and why.
func chooseDemoAgent(ctx context.Context, env Env, reload func(map[string]string) (*config.Config, error)) (*config.Config, string, error) {
	type found struct {
		ok     bool
		model  string // Ollama: the model to use
		reason string // why it is not usable
	}
	results := make([]found, len(demoProbes))
	var wg sync.WaitGroup
	for i, p := range demoProbes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].ok, results[i].model, results[i].reason = probeRuntime(ctx, p)
		}()
	}
	wg.Wait()
	skip := func(p runtimeProbe, why string) {
		fmt.Fprintf(env.Stdout, "  skipped %s at %s: %s\n", p.label, p.url, why)
	}
	for i, p := range demoProbes {
		r := results[i]
		if !r.ok {
			if r.reason != "" {
				skip(p, r.reason)
			}
			continue
		}
		o := map[string]string{"HANDSET_AGENT": p.runtime}
		switch p.runtime {
		case config.AgentHermes:
			o["HANDSET_AGENT_URL"] = p.url + "/v1"
		case config.AgentOpenClaw:
			o["HANDSET_AGENT_URL"] = p.url
		case config.AgentOpenAI:
			// Ollama takes any key; the OpenAI client sends one.
			o["HANDSET_AGENT_URL"], o["HANDSET_AGENT_MODEL"], o["HANDSET_AGENT_KEY"] = p.url+"/v1", r.model, "ollama"
		}
		cfg, err := reload(o)
		if err != nil {
			return nil, "", err
		}
		if p.runtime == config.AgentOpenClaw && !cfg.Agent.Key.IsSet() {
			skip(p, "found, but "+config.OpenClawKeyVar+" is not set")
			continue
		}
		return cfg, fmt.Sprintf("found %s at %s", p.label, p.url), nil
	}
	cfg, err := reload(map[string]string{"HANDSET_AGENT": config.AgentEcho})
	return cfg, "no Hermes, OpenClaw or Ollama answered on localhost; the echo agent repeats what you say", err
}

// probeRuntime asks one runtime whether it is there. Silence means "not running"
// (no reason); an answer that is not what the runtime says gives the reason.
func probeRuntime(ctx context.Context, p runtimeProbe) (ok bool, model, reason string) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	path := map[string]string{config.AgentHermes: "/health", config.AgentOpenClaw: "/healthz", config.AgentOpenAI: "/api/tags"}[p.runtime]
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path, nil)
	if err != nil {
		return false, "", err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, "", ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch p.runtime {
	case config.AgentHermes:
		var h struct{ Status string }
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Status != "ok" {
			return false, "", fmt.Sprintf("GET /health answered %d, not Hermes' health", resp.StatusCode)
		}
		return true, "", ""
	case config.AgentOpenClaw:
		if resp.StatusCode >= 500 {
			return false, "", fmt.Sprintf("GET /healthz answered %d", resp.StatusCode)
		}
		return true, "", "" // the gateway answers on its port; chat needs its token
	default: // Ollama
		var tags struct {
			Models []struct {
				Name string `json:"name"`
			} `json:"models"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &tags) != nil {
			return false, "", fmt.Sprintf("GET /api/tags answered %d, not Ollama's model list", resp.StatusCode)
		}
		if len(tags.Models) == 0 {
			return false, "", "no model pulled (ollama pull llama3.2)"
		}
		return true, tags.Models[0].Name, ""
	}
}
