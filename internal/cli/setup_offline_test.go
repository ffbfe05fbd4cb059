package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
)

// TestSetupOffline: --offline sets the project up for speech on this machine (sphinx and
// flite) with no cloud keys asked for anywhere; an openai runtime points at Ollama on
// localhost and needs no key; the browser page is on, and no placeholder public URL is set.
func TestSetupOffline(t *testing.T) {
	env, _ := setupEnv(t)
	code := Main(t.Context(), []string{"setup", "--runtime", "openai", "--offline", "--dir", "proj", "--no-check"}, env)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	dir := filepath.Join(env.WorkDir, "proj")
	proj := env
	proj.WorkDir = dir
	cfg, err := loadConfig(proj, &globals{}, nil)
	if err != nil {
		t.Fatalf("the scaffolded settings do not load: %v", err)
	}
	if cfg.STT.Provider != config.STTSphinx || cfg.TTS.Provider != config.TTSFlite {
		t.Errorf("speech %s/%s, want sphinx/flite", cfg.STT.Provider, cfg.TTS.Provider)
	}
	if !strings.HasPrefix(cfg.Agent.URL, "http://127.0.0.1:11434/") || !cfg.Browser || cfg.PublicURL != "" {
		t.Errorf("agent URL %q, browser %v, public URL %q: want Ollama on localhost, the page on, no public URL", cfg.Agent.URL, cfg.Browser, cfg.PublicURL)
	}
	if err := cfg.Validate(config.ValidateOptions{RequireAgent: true, RequireKeys: true}); err != nil {
		t.Errorf("an offline project should need no key to validate: %v", err)
	}
	example, _ := os.ReadFile(filepath.Join(dir, ".env.example"))
	for _, cloud := range []string{"DEEPGRAM_API_KEY", "ELEVENLABS_API_KEY"} {
		if strings.Contains(string(example), cloud) {
			t.Errorf(".env.example asks for %s:\n%s", cloud, example)
		}
	}
	out := output(env)
	if strings.Contains(out, "✗") {
		t.Errorf("setup reports something missing for an offline project:\n%s", out)
	}
	readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
	if !strings.Contains(string(readme), "--offline") || !strings.Contains(string(readme), "http://127.0.0.1:8080/") {
		t.Errorf("README does not say how to call the offline project:\n%s", readme)
	}
}

// TestSetupMarksMissingSecrets: each secret the project needs is listed plainly as
// missing, never next to a check mark; a secret already in the environment is "set",
// with where it comes from; Twilio's are optional.
func TestSetupMarksMissingSecrets(t *testing.T) {
	env, _ := setupEnv(t, "DEEPGRAM_API_KEY=dg-from-env")
	if code := Main(t.Context(), []string{"setup", "--runtime", "hermes", "--dir", "proj", "--no-check"}, env); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	out := output(env)
	for _, want := range []string{
		"✗ missing  HANDSET_AGENT_KEY: the API_SERVER_KEY",
		"✗ missing  ELEVENLABS_API_KEY",
		"✓ set      DEEPGRAM_API_KEY (environment)",
		"- not set  TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN: only phone calls need them",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "✓") && strings.Contains(line, "missing") {
			t.Errorf("a check mark next to a missing secret: %q", line)
		}
	}
	if strings.Contains(out, "dg-from-env") {
		t.Error("a secret was printed")
	}
}

// TestSetupChecksWithoutTheNetwork: the closing doctor run reaches no server unless
// --network asks for it, and says how to run the network checks.
func TestSetupChecksWithoutTheNetwork(t *testing.T) {
	var hits atomic.Int32
	h := fakehermes.New(fakehermes.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	env, _ := setupEnv(t, "HANDSET_AGENT_URL="+srv.URL+"/v1")
	if code := Main(t.Context(), []string{"setup", "--runtime", "hermes", "--dir", "proj"}, env); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	out := output(env)
	if n := hits.Load(); n != 0 {
		t.Errorf("the closing checks reached the agent runtime %d times without --network", n)
	}
	for _, want := range []string{"doctor --no-network", "not checked: --no-network", "cd proj && /opt/handset/bin/handset doctor"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// No request leaves this machine: the speech providers are at a dead local port, and
	// the placeholder public URL is not looked up.
	withPlaceholderDomains(t)
	dead := nowhere(t)
	env, _ = setupEnv(t, "HANDSET_AGENT_URL="+srv.URL+"/v1", "HANDSET_DEEPGRAM_URL="+dead, "HANDSET_ELEVENLABS_URL="+dead)
	if code := Main(t.Context(), []string{"setup", "--runtime", "hermes", "--dir", "proj", "--network"}, env); code != 0 {
		t.Fatalf("--network: exit %d:\n%s", code, output(env))
	}
	if hits.Load() == 0 || strings.Contains(output(env), "not checked: --no-network") {
		t.Errorf("--network: the runtime was not checked:\n%s", output(env))
	}
}

// TestSetupPlaceholderPublicURL: the public URL setup writes without --url is reported by
// the closing checks as a placeholder to replace, not as an unreachable server.
func TestSetupPlaceholderPublicURL(t *testing.T) {
	withPlaceholderDomains(t)
	env, _ := setupEnv(t)
	if code := Main(t.Context(), []string{"setup", "--runtime", "openai", "--dir", "proj"}, env); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	out := output(env)
	if !strings.Contains(out, "https://voice.example.com is a placeholder to replace") || !strings.Contains(out, "handset.yaml:") {
		t.Errorf("the placeholder is not reported with where to replace it:\n%s", out)
	}
	if strings.Contains(out, "is not reachable") {
		t.Errorf("the placeholder is reported as unreachable:\n%s", out)
	}
}

// TestSetupReadmeRunsThisBinary: the project's README and setup's hints run the binary
// that made the project by its path, unless it is the `handset` on PATH.
func TestSetupReadmeRunsThisBinary(t *testing.T) {
	env, home := setupEnv(t)
	if code := Main(t.Context(), []string{"setup", "--runtime", "openclaw", "--dir", "proj", "--no-check"}, env); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	readme, _ := os.ReadFile(filepath.Join(env.WorkDir, "proj", "README.md"))
	for _, want := range []string{"`/opt/handset/bin/handset doctor`", "`/opt/handset/bin/handset serve`", "plain `handset` works too"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README lacks %q:\n%s", want, readme)
		}
	}
	if !strings.Contains(output(env), "`/opt/handset/bin/handset doctor`") {
		t.Errorf("setup's next steps do not name the binary:\n%s", output(env))
	}

	// The same binary on PATH: plain `handset`.
	bin := filepath.Join(home, "bin", "handset")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	setupExecutable = func() (string, error) { return bin, nil }
	if code := Main(t.Context(), []string{"setup", "--runtime", "openclaw", "--dir", "p2", "--no-check"}, env); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	readme, _ = os.ReadFile(filepath.Join(env.WorkDir, "p2", "README.md"))
	if !strings.Contains(string(readme), "`handset doctor`") || strings.Contains(string(readme), bin) {
		t.Errorf("with handset on PATH the README should run plain `handset`:\n%s", readme)
	}
	if got := shellQuote("/home/a b/handset"); got != `'/home/a b/handset'` {
		t.Errorf("shellQuote = %s", got)
	}
}
