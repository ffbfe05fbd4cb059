package cli

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/testpeer"
)

// TestSetupModes: --mode says who dials whom. Inbound projects get the number attached
// and no dialer; outbound projects get the dialer list, its systemd timer and launchd job
// and the call allow-list, and their --number is the caller ID, written into the project
// and never pointed at this Handset; both get all of it.
func TestSetupModes(t *testing.T) {
	dialerFiles := []string{"dialer.txt", "handset-dialer.service", "handset-dialer.timer", "handset-dialer.plist"}
	for _, c := range []struct {
		mode             string
		dialer, attached bool
	}{
		{"inbound", false, true},
		{"outbound", true, false},
		{"both", true, true},
	} {
		t.Run(c.mode, func(t *testing.T) {
			tw := faketwilio.New(faketwilio.Options{Numbers: []faketwilio.Number{{PhoneNumber: "+15550100123", VoiceURL: "https://old.example/voice"}}})
			srv := httptest.NewServer(tw)
			defer srv.Close()
			env, _ := setupEnv(t, "TWILIO_ACCOUNT_SID="+tw.AccountSID(), "TWILIO_AUTH_TOKEN="+tw.AuthToken(), "HANDSET_TWILIO_API_URL="+srv.URL)
			args := []string{"setup", "--runtime", "openai", "--mode", c.mode, "--dir", "proj", "--no-check",
				"--number", "+1 555 010 0123", "--url", "https://voice.example.com"}
			code := Main(t.Context(), args, env)
			if c.attached {
				// Pointing the number here changes Twilio: it needs --yes.
				if code != 2 || !strings.Contains(output(env), "point the Twilio number +15550100123") {
					t.Fatalf("without --yes: exit %d\n%s", code, output(env))
				}
				if _, err := os.Stat(filepath.Join(env.WorkDir, "proj")); err == nil {
					t.Fatal("the project was written although setup asked for --yes")
				}
				code = Main(t.Context(), append(args, "--yes"), env)
			}
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, output(env))
			}
			dir := filepath.Join(env.WorkDir, "proj")
			for _, f := range dialerFiles {
				if _, err := os.Stat(filepath.Join(dir, f)); (err == nil) != c.dialer {
					t.Errorf("%s written: %v, want %v", f, err == nil, c.dialer)
				}
			}
			if n, _ := tw.Number("+15550100123"); (n.VoiceURL == "https://voice.example.com/twilio/voice") != c.attached {
				t.Errorf("the number's voice URL is %q; attached wanted: %v", n.VoiceURL, c.attached)
			}
			proj := env
			proj.WorkDir = dir
			cfg, err := loadConfig(proj, &globals{}, nil)
			if err != nil {
				t.Fatalf("the scaffolded settings do not load: %v", err)
			}
			if cfg.PhoneNumber != "+15550100123" || cfg.Handoff.TransferAllow != "" || cfg.Outbound.CallAllow != "" {
				t.Errorf("phone number %q, transfer allow %q, call allow %q", cfg.PhoneNumber, cfg.Handoff.TransferAllow, cfg.Outbound.CallAllow)
			}
			yaml, _ := os.ReadFile(filepath.Join(dir, "handset.yaml"))
			if strings.Contains(string(yaml), "call_allow") != c.dialer {
				t.Errorf("handset.yaml's call allow-list: %v, want %v\n%s", !c.dialer, c.dialer, yaml)
			}
			readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
			if strings.Contains(string(readme), "attach-number") != c.attached || strings.Contains(string(readme), "call --list dialer.txt") != c.dialer {
				t.Errorf("README's steps do not fit %s:\n%s", c.mode, readme)
			}
		})
	}
	env, _ := setupEnv(t)
	if code := Main(t.Context(), []string{"setup", "--runtime", "openai", "--mode", "sideways", "--dir", "p", "--no-check"}, env); code != 2 ||
		!strings.Contains(output(env), `--mode "sideways" is not one of inbound, outbound, both`) {
		t.Errorf("a bad mode: exit %d\n%s", code, output(env))
	}
}

// TestSetupDialerRuns: the supervised dialer's command, run from the project folder as
// its systemd unit and launchd job run it, queues a number added to the list once, and
// again finds nothing new; the list as written holds no number.
func TestSetupDialerRuns(t *testing.T) {
	env, _ := setupEnv(t)
	if code := Main(t.Context(), []string{"setup", "--runtime", "openai", "--mode", "outbound", "--dir", "proj", "--no-check"}, env); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	dir := filepath.Join(env.WorkDir, "proj")
	list := filepath.Join(dir, "dialer.txt")
	if entries, err := readList(list); err != nil || len(entries) != 0 {
		t.Fatalf("the new list holds %v (%v), want no number", entries, err)
	}
	f, err := os.OpenFile(list, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("+14155550100, Hi, it's the clinic.\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()

	unit, _ := os.ReadFile(filepath.Join(dir, "handset-dialer.service"))
	execStart := unitValue(string(unit), "ExecStart")
	args := strings.Fields(strings.TrimPrefix(execStart, "/usr/local/bin/handset "))
	if !strings.HasPrefix(execStart, "/usr/local/bin/handset call --list") {
		t.Fatalf("ExecStart=%s", execStart)
	}
	// As the units do, name the data folder (commands open it from the process's folder).
	data := "HANDSET_DATA_DIR=" + filepath.Join(dir, "handset-data")
	proj, _ := setupEnv(t, data)
	proj.WorkDir = dir
	if code := Main(t.Context(), args, proj); code != 0 || !strings.Contains(output(proj), `queued 1 calls in batch "dialer"`) {
		t.Fatalf("%v: exit %d\n%s", args, code, output(proj))
	}
	again, _ := setupEnv(t, data)
	again.WorkDir = dir
	if code := Main(t.Context(), args, again); code != 0 || !strings.Contains(output(again), "already queued") {
		t.Errorf("the second run: exit %d\n%s", code, output(again))
	}
}

// TestSetupServiceFiles: the systemd units pass systemd's own check, the server and the
// dialer share their user and data folder, and the launchd jobs are property lists that
// run this binary from the project folder, the server kept alive and the dialer every
// five minutes.
func TestSetupServiceFiles(t *testing.T) {
	env, _ := setupEnv(t)
	if code := Main(t.Context(), []string{"setup", "--runtime", "hermes", "--mode", "both", "--dir", "my phone", "--no-check"}, env); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	dir := filepath.Join(env.WorkDir, "my phone")
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	serve, dialer := read("handset.service"), read("handset-dialer.service")
	for _, key := range []string{"User", "DynamicUser", "StateDirectory", "Environment", "WorkingDirectory"} {
		if a, b := unitValue(serve, key), unitValue(dialer, key); a == "" || a != b {
			t.Errorf("%s: the server has %q, the dialer %q", key, a, b)
		}
	}
	if unitValue(dialer, "Type") != "oneshot" || unitValue(read("handset-dialer.timer"), "Unit") != "handset-dialer.service" {
		t.Errorf("the dialer is not a oneshot started by its timer:\n%s\n%s", dialer, read("handset-dialer.timer"))
	}

	// systemd's own check of the units: a peer, so a subtest of its own.
	t.Run("systemd-analyze verify", func(t *testing.T) {
		analyze := testpeer.Program(t, "systemd-analyze", testpeer.SystemdAnalyze)
		// The units name the installed binary; systemd checks that it exists.
		check := t.TempDir()
		var files []string
		for _, f := range []string{"handset.service", "handset-dialer.service", "handset-dialer.timer"} {
			unit, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(check, f)
			if err := os.WriteFile(p, bytes.ReplaceAll(unit, []byte("/usr/local/bin/handset"), []byte("/bin/true")), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, p)
		}
		out, err := exec.Command(analyze, append([]string{"verify", "--man=no"}, files...)...).CombinedOutput()
		if err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	})

	serveJob, dialerJob := plistDict(t, read("handset.plist")), plistDict(t, read("handset-dialer.plist"))
	if serveJob["Label"] != "handset.my-phone" || dialerJob["Label"] != "handset.my-phone.dialer" {
		t.Errorf("labels %v and %v", serveJob["Label"], dialerJob["Label"])
	}
	for _, job := range []map[string]any{serveJob, dialerJob} {
		if job["WorkingDirectory"] != dir {
			t.Errorf("WorkingDirectory %v, want %s", job["WorkingDirectory"], dir)
		}
	}
	if got := serveJob["ProgramArguments"]; !equalAny(got, []any{"/usr/local/bin/handset", "serve"}) {
		t.Errorf("the server runs %v", got)
	}
	if keep, _ := serveJob["KeepAlive"].(map[string]any); keep["SuccessfulExit"] != false || serveJob["RunAtLoad"] != true {
		t.Errorf("the server is not kept alive: %v", serveJob)
	}
	if got := dialerJob["ProgramArguments"]; !equalAny(got, []any{"/usr/local/bin/handset", "call", "--list", "dialer.txt"}) ||
		dialerJob["StartInterval"] != int64(300) {
		t.Errorf("the dialer job: %v", dialerJob)
	}
	readme := read("README.md")
	if !strings.Contains(readme, "launchctl bootstrap gui/$(id -u) ~/Library/LaunchAgents/handset.my-phone.plist") {
		t.Errorf("README does not say how to load the launchd job:\n%s", readme)
	}
}

// unitValue is the value of key in a systemd unit ("" when absent).
func unitValue(unit, key string) string {
	for _, l := range strings.Split(unit, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func equalAny(got any, want []any) bool {
	a, ok := got.([]any)
	if !ok || len(a) != len(want) {
		return false
	}
	for i := range a {
		if a[i] != want[i] {
			return false
		}
	}
	return true
}

// plistDict decodes a property list whose top is a dict: strings, integers, booleans,
// arrays and dicts.
func plistDict(t *testing.T, text string) map[string]any {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(text))
	dec.Strict = true
	var value func(start xml.StartElement) any
	value = func(start xml.StartElement) any {
		switch start.Name.Local {
		case "dict":
			m := map[string]any{}
			key := ""
			for {
				tok, err := dec.Token()
				if err != nil {
					t.Fatalf("plist: %v\n%s", err, text)
				}
				switch tok := tok.(type) {
				case xml.StartElement:
					if tok.Name.Local == "key" {
						var k string
						if err := dec.DecodeElement(&k, &tok); err != nil {
							t.Fatal(err)
						}
						key = k
						continue
					}
					if key == "" {
						t.Fatalf("plist: a %s without a key\n%s", tok.Name.Local, text)
					}
					m[key] = value(tok)
					key = ""
				case xml.EndElement:
					return m
				}
			}
		case "array":
			var a []any
			for {
				tok, err := dec.Token()
				if err != nil {
					t.Fatalf("plist: %v", err)
				}
				switch tok := tok.(type) {
				case xml.StartElement:
					a = append(a, value(tok))
				case xml.EndElement:
					return a
				}
			}
		case "true", "false":
			if err := dec.Skip(); err != nil {
				t.Fatal(err)
			}
			return start.Name.Local == "true"
		case "integer":
			var s string
			if err := dec.DecodeElement(&s, &start); err != nil {
				t.Fatal(err)
			}
			n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				t.Fatalf("plist integer %q", s)
			}
			return n
		case "string":
			var s string
			if err := dec.DecodeElement(&s, &start); err != nil {
				t.Fatal(err)
			}
			return s
		}
		t.Fatalf("plist: unexpected <%s>", start.Name.Local)
		return nil
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			t.Fatalf("plist: no dict\n%s", text)
		}
		if err != nil {
			t.Fatalf("plist: %v\n%s", err, text)
		}
		if s, ok := tok.(xml.StartElement); ok && s.Name.Local == "dict" {
			return value(s).(map[string]any)
		}
	}
}

// TestSetupSecurityReadme: the project's README has a day-1 security section naming the
// scoped agent, the API and tools tokens, the allow-lists that fit the mode, TLS and
// where the rest is written; .env.example has a place for the tools token, and the
// example copied to .env as it is still loads.
func TestSetupSecurityReadme(t *testing.T) {
	for _, c := range []struct{ runtime, mode string }{
		{config.AgentOpenClaw, "inbound"}, {config.AgentHermes, "both"}, {config.AgentOpenAI, "outbound"},
	} {
		t.Run(c.runtime+"-"+c.mode, func(t *testing.T) {
			env, _ := setupEnv(t)
			if code := Main(t.Context(), []string{"setup", "--runtime", c.runtime, "--mode", c.mode, "--dir", "proj", "--no-check"}, env); code != 0 {
				t.Fatalf("exit %d:\n%s", code, output(env))
			}
			dir := filepath.Join(env.WorkDir, "proj")
			readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
			_, section, ok := strings.Cut(string(readme), "## Security from day 1")
			if !ok {
				t.Fatalf("no security section:\n%s", readme)
			}
			want := []string{"A scoped agent", "no shell", "HANDSET_API_TOKEN", "HANDSET_TOOLS_TOKEN", "HANDSET_TRANSFER_ALLOW",
				"HANDSET_CALL_ALLOW", "TLS", "docs/security.md"}
			if c.runtime == config.AgentOpenClaw {
				want = append(want, "agent `voice`", `"group:runtime", "group:fs"`, "--enable-openclaw")
			}
			if c.mode != "inbound" {
				want = append(want, "`outbound.call_allow`")
			}
			for _, w := range want {
				if !strings.Contains(section, w) {
					t.Errorf("the security section lacks %q:\n%s", w, section)
				}
			}
			example, _ := os.ReadFile(filepath.Join(dir, ".env.example"))
			if !strings.Contains(string(example), "\nHANDSET_TOOLS_TOKEN=\n") {
				t.Errorf(".env.example has no place for the tools token:\n%s", example)
			}
			if err := os.WriteFile(filepath.Join(dir, ".env"), example, 0o600); err != nil {
				t.Fatal(err)
			}
			proj := env
			proj.WorkDir = dir
			if _, err := loadConfig(proj, &globals{}, nil); err != nil {
				t.Errorf("the example copied to .env does not load: %v", err)
			}
		})
	}
}

// TestSetupEnableHermesMakesAKey: --enable-hermes alone gives Hermes an API_SERVER_KEY
// when its dotenv has none (the same key goes into the project's .env), and leaves a key
// that is there alone.
func TestSetupEnableHermesMakesAKey(t *testing.T) {
	env, home := setupEnv(t)
	hermesEnv := filepath.Join(home, ".hermes", ".env")
	if err := os.MkdirAll(filepath.Dir(hermesEnv), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hermesEnv, []byte("OPENROUTER_API_KEY=keep-me\nAPI_SERVER_KEY=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"setup", "--runtime", "hermes", "--dir", "proj", "--enable-hermes", "--no-check"}
	if code := Main(t.Context(), args, env); code != 2 || !strings.Contains(output(env), "a new API_SERVER_KEY") {
		t.Fatalf("without --yes: exit %d\n%s", code, output(env))
	}
	if code := Main(t.Context(), append(args, "--yes"), env); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	got, _ := os.ReadFile(hermesEnv)
	project, err := os.ReadFile(filepath.Join(env.WorkDir, "proj", ".env"))
	if err != nil {
		t.Fatalf("no project .env: %v", err)
	}
	key := strings.TrimPrefix(lastLine(string(project)), "HANDSET_AGENT_KEY=")
	if len(key) < 40 || !strings.Contains(string(got), "\nAPI_SERVER_KEY="+key+"\n") ||
		!strings.Contains(string(got), "OPENROUTER_API_KEY=keep-me") || !strings.Contains(string(got), "API_SERVER_ENABLED=true") {
		t.Errorf("~/.hermes/.env:\n%s\nproject key %q", got, key)
	}
	if strings.Contains(output(env), key) {
		t.Error("the key was printed")
	}

	// A key already there stays, and the project gets no .env.
	env2, home2 := setupEnv(t)
	hermesEnv = filepath.Join(home2, ".hermes", ".env")
	if err := os.MkdirAll(filepath.Dir(hermesEnv), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hermesEnv, []byte("export API_SERVER_KEY=\"my-own-key-of-sixteen-plus\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := Main(t.Context(), append(args, "--yes"), env2); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env2))
	}
	got, _ = os.ReadFile(hermesEnv)
	if !strings.Contains(string(got), `API_SERVER_KEY="my-own-key-of-sixteen-plus"`) || strings.Count(string(got), "API_SERVER_KEY") != 1 {
		t.Errorf("the existing key was touched:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(env2.WorkDir, "proj", ".env")); err == nil {
		t.Error("a project .env was written although Hermes had its key")
	}
}
