package cli

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
)

// setupEnv is a home folder and a PATH for setup to work in, with setup running as
// /opt/handset/bin/handset (not on that PATH).
func setupEnv(t *testing.T, extra ...string) (env Env, home string) {
	saved := setupExecutable
	setupExecutable = func() (string, error) { return "/opt/handset/bin/handset", nil }
	t.Cleanup(func() { setupExecutable = saved })
	home = t.TempDir()
	env = Env{Stdout: &syncBuffer{}, Stderr: &syncBuffer{}, WorkDir: t.TempDir(),
		Environ: append([]string{"HOME=" + home, "PATH=" + filepath.Join(home, "bin")}, extra...)}
	return env, home
}

func output(env Env) string {
	return env.Stdout.(*syncBuffer).String() + env.Stderr.(*syncBuffer).String()
}

// TestSetupScaffoldsAProjectThatLoads: each runtime gets a folder whose settings load
// without error and point at that runtime; a second run refuses to overwrite without
// --force; the project's .env is never written without --generate-key.
func TestSetupScaffoldsAProjectThatLoads(t *testing.T) {
	for _, runtime := range []string{config.AgentHermes, config.AgentOpenClaw, config.AgentOpenAI} {
		t.Run(runtime, func(t *testing.T) {
			env, _ := setupEnv(t)
			code := Main(t.Context(), []string{"setup", "--runtime", runtime, "--dir", "proj", "--no-check"}, env)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, output(env))
			}
			dir := filepath.Join(env.WorkDir, "proj")
			for _, f := range []string{"handset.yaml", ".env.example", "handset.service", "README.md", ".gitignore"} {
				if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
					t.Errorf("%s not written: %v", f, err)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, ".env")); err == nil {
				t.Error(".env written without --generate-key")
			}
			proj := env
			proj.WorkDir = dir
			cfg, err := loadConfig(proj, &globals{}, nil)
			if err != nil {
				t.Fatalf("the scaffolded settings do not load: %v", err)
			}
			if cfg.Agent.Runtime != runtime || cfg.Session.KeyFrom != config.SessionKeyFromCallerHash || cfg.STT.Provider != "deepgram" {
				t.Errorf("loaded %+v", cfg.Agent)
			}
			if code := Main(t.Context(), []string{"setup", "--runtime", runtime, "--dir", "proj", "--no-check"}, env); code != 2 ||
				!strings.Contains(output(env), "--force") {
				t.Errorf("second run: exit %d, want 2 and a --force hint:\n%s", code, output(env))
			}
			if code := Main(t.Context(), []string{"setup", "--runtime", runtime, "--dir", "proj", "--no-check", "--force"}, env); code != 0 {
				t.Errorf("--force: exit %d", code)
			}
		})
	}
}

// TestSetupPreparesHermes: --enable-hermes and --generate-key write Hermes' dotenv (after
// a backup, keeping its other lines) and the project's .env with the same key;
// --start-gateway runs `hermes gateway start` and waits for the API; then doctor runs on
// the new project (without the network). Changes outside the folder need --yes.
func TestSetupPreparesHermes(t *testing.T) {
	h := fakehermes.New(fakehermes.Options{})
	srv := httptest.NewServer(h)
	defer srv.Close()
	env, home := setupEnv(t, "HANDSET_AGENT_URL="+srv.URL+"/v1")
	hermesEnv := filepath.Join(home, ".hermes", ".env")
	if err := os.MkdirAll(filepath.Dir(hermesEnv), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hermesEnv, []byte("OPENROUTER_API_KEY=keep-me\nAPI_SERVER_ENABLED=false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A stand-in `hermes` that records how it was called.
	if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	called := filepath.Join(home, "called")
	script := "#!/bin/sh\necho \"$@\" >> " + called + "\n"
	if err := os.WriteFile(filepath.Join(home, "bin", "hermes"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	args := []string{"setup", "--runtime", "hermes", "--dir", "proj", "--enable-hermes", "--generate-key", "--start-gateway"}
	if code := Main(t.Context(), args, env); code != 2 || !strings.Contains(output(env), "--yes") {
		t.Fatalf("without --yes: exit %d, want 2 asking for --yes:\n%s", code, output(env))
	}
	if code := Main(t.Context(), append(args, "--yes"), env); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	got, _ := os.ReadFile(hermesEnv)
	lines := string(got)
	if !strings.Contains(lines, "OPENROUTER_API_KEY=keep-me") || !strings.Contains(lines, "API_SERVER_ENABLED=true") ||
		strings.Contains(lines, "API_SERVER_ENABLED=false") {
		t.Errorf("~/.hermes/.env now:\n%s", lines)
	}
	backups, _ := filepath.Glob(hermesEnv + ".bak-*")
	if len(backups) != 1 {
		t.Errorf("backups %v, want one", backups)
	}
	project, _ := os.ReadFile(filepath.Join(env.WorkDir, "proj", ".env"))
	key := strings.TrimSpace(strings.TrimPrefix(lastLine(string(project)), "HANDSET_AGENT_KEY="))
	if len(key) < 40 || !strings.Contains(lines, "API_SERVER_KEY="+key) {
		t.Errorf("the generated key differs between the project (%q) and Hermes:\n%s", key, lines)
	}
	if st, _ := os.Stat(filepath.Join(env.WorkDir, "proj", ".env")); st == nil || st.Mode().Perm() != 0o600 {
		t.Error("the project's .env is readable by others")
	}
	if c, _ := os.ReadFile(called); !strings.HasPrefix(string(c), "gateway start\n") {
		t.Errorf("hermes was called with %q, want `gateway start` first", c)
	}
	out := output(env)
	if strings.Contains(out, key) {
		t.Error("the generated key was printed")
	}
	if !strings.Contains(out, "the Hermes gateway answers") || !strings.Contains(out, "handset doctor") {
		t.Errorf("setup did not report the gateway and the checks:\n%s", out)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestSetupAttachesTheNumber: --number and --url point the Twilio number at the new
// project's Handset, with the project's credentials.
func TestSetupAttachesTheNumber(t *testing.T) {
	tw := faketwilio.New(faketwilio.Options{Numbers: []faketwilio.Number{{PhoneNumber: "+15550100123", VoiceURL: "https://old.example/voice"}}})
	srv := httptest.NewServer(tw)
	defer srv.Close()
	env, _ := setupEnv(t, "TWILIO_ACCOUNT_SID="+tw.AccountSID(), "TWILIO_AUTH_TOKEN="+tw.AuthToken(), "HANDSET_TWILIO_API_URL="+srv.URL)
	code := Main(t.Context(), []string{"setup", "--runtime", "openai", "--dir", "proj", "--no-check",
		"--number", "+1 555 010 0123", "--url", "https://voice.example.com", "--yes"}, env)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	if n, ok := tw.Number("+15550100123"); !ok || n.VoiceURL != "https://voice.example.com/twilio/voice" {
		t.Errorf("the number's voice URL is %q", n.VoiceURL)
	}
	if code := Main(t.Context(), []string{"setup", "--runtime", "openai", "--dir", "p2", "--url", "http://voice.example.com", "--number", "+15550100123", "--yes"}, env); code != 2 {
		t.Errorf("an http:// URL: exit %d, want 2", code)
	}
}
