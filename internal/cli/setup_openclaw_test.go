package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/json5"
)

// userOpenClawConfig is an openclaw.json as people write it: JSON5 with comments, bare
// keys, single quotes and trailing commas, and an explicit roster of two agents.
const userOpenClawConfig = `// My gateway. Edited by hand; keep the comments.
{
  gateway: {
    mode: 'local',
    port: 18789, // the default port
    auth: { mode: 'token', token: 'hs-0123456789abcdef0123456789abcdef' },
  },
  agents: {
    ownership: 'explicit',
    defaults: { workspace: '~/.openclaw/workspace' },
    entries: {
      main: { workspace: '~/.openclaw/workspace' }, /* me */
      support: {
        name: 'Support desk',
        tools: { profile: 'messaging' },
      },
    },
  },
}
`

// writeOpenClawConfig writes text as the gateway's configuration in a fresh state folder
// and returns its path.
func writeOpenClawConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "openclaw.json")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// decodeOpenClaw reads a configuration as the gateway would.
func decodeOpenClaw(t *testing.T, data []byte) map[string]any {
	t.Helper()
	n, err := json5.Parse(data)
	if err != nil {
		t.Fatalf("not JSON5 any more: %v\n%s", err, data)
	}
	return n.Value().(map[string]any)
}

func denyList() []any {
	out := make([]any, len(voiceAgentDeny))
	for i, g := range voiceAgentDeny {
		out[i] = g
	}
	return out
}

// TestSetupEnableOpenClaw: --enable-openclaw without --yes shows the change and writes
// nothing; with --yes it backs the file up and changes exactly two things, the endpoint
// and a new agent without shell or file tools, keeping every comment and every other
// byte; run again, it has nothing left to do. The project names the new agent.
func TestSetupEnableOpenClaw(t *testing.T) {
	path := writeOpenClawConfig(t, userOpenClawConfig)
	env, _ := setupEnv(t, "OPENCLAW_CONFIG_PATH="+path)
	args := []string{"setup", "--runtime", "openclaw", "--dir", "proj", "--no-check", "--enable-openclaw"}

	code := Main(t.Context(), args, env)
	out := output(env)
	if code != 2 || !strings.Contains(out, "need --yes") {
		t.Fatalf("without --yes: exit %d\n%s", code, out)
	}
	for _, want := range []string{path + ": gateway.http.endpoints.chatCompletions.enabled: true",
		" +     http: {", " +         chatCompletions: { enabled: true },", " +       voice: {",
		` +           deny: ['group:runtime', 'group:fs', 'group:ui', 'group:nodes', 'group:automation'],`,
		"         tools: { profile: 'messaging' },", `auth: { mode: 'token', token: "…" },`} {
		if !strings.Contains(out, want) {
			t.Errorf("the preview lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "hs-0123456789abcdef") {
		t.Error("the preview shows the gateway's token")
	}
	if data, _ := os.ReadFile(path); string(data) != userOpenClawConfig {
		t.Errorf("the file changed without --yes:\n%s", data)
	}
	if backups, _ := filepath.Glob(path + ".bak-*"); len(backups) != 0 {
		t.Errorf("backups without --yes: %v", backups)
	}
	if _, err := os.Stat(filepath.Join(env.WorkDir, "proj")); err == nil {
		t.Error("the project was written without --yes")
	}

	env, _ = setupEnv(t, "OPENCLAW_CONFIG_PATH="+path)
	if code := Main(t.Context(), append(args, "--yes"), env); code != 0 {
		t.Fatalf("--yes: exit %d\n%s", code, output(env))
	}
	backups, _ := filepath.Glob(path + ".bak-*")
	if len(backups) != 1 {
		t.Fatalf("backups %v, want one", backups)
	}
	if b, _ := os.ReadFile(backups[0]); string(b) != userOpenClawConfig {
		t.Errorf("the backup differs from the original:\n%s", b)
	}
	data, _ := os.ReadFile(path)
	for _, l := range strings.Split(userOpenClawConfig, "\n") {
		if !strings.Contains(string(data), l) {
			t.Errorf("the line %q is gone:\n%s", l, data)
		}
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 as before", st.Mode().Perm())
	}
	want := decodeOpenClaw(t, []byte(userOpenClawConfig))
	want["gateway"].(map[string]any)["http"] = map[string]any{"endpoints": map[string]any{"chatCompletions": map[string]any{"enabled": true}}}
	want["agents"].(map[string]any)["entries"].(map[string]any)["voice"] = map[string]any{
		"name": "voice", "tools": map[string]any{"deny": denyList()}}
	if got := decodeOpenClaw(t, data); !reflect.DeepEqual(got, want) {
		t.Errorf("the configuration now means\n%#v\nwant\n%#v", got, want)
	}
	proj := env
	proj.WorkDir = filepath.Join(env.WorkDir, "proj")
	cfg, err := loadConfig(proj, &globals{}, nil)
	if err != nil || cfg.Agent.Model != "openclaw/voice" {
		t.Errorf("the project's agent: %v %+v", err, cfg.Agent)
	}

	// Again: nothing to do, no --yes needed, no second backup.
	env, _ = setupEnv(t, "OPENCLAW_CONFIG_PATH="+path)
	if code := Main(t.Context(), append(args, "--dir", "proj2"), env); code != 0 || !strings.Contains(output(env), "nothing to change there") {
		t.Errorf("a second run: exit %d\n%s", code, output(env))
	}
	if again, _ := os.ReadFile(path); string(again) != string(data) {
		t.Error("a second run changed the file")
	}
	if backups, _ := filepath.Glob(path + ".bak-*"); len(backups) != 1 {
		t.Errorf("backups after the second run: %v", backups)
	}
}

// TestSetupOpenClawScopesAnExistingAgent: an agent OpenClaw made (`openclaw agents add`)
// keeps everything it has and gains the deny list; a deny list already there keeps its
// entries and gains only the missing groups.
func TestSetupOpenClawScopesAnExistingAgent(t *testing.T) {
	for _, c := range []struct{ name, entry, wantDeny string }{
		{"no tools", `{ "name": "voice", "workspace": "/srv/ws-voice" }`,
			`["group:runtime","group:fs","group:ui","group:nodes","group:automation"]`},
		{"tools without deny", `{ "tools": { "profile": "messaging" } }`,
			`["group:runtime","group:fs","group:ui","group:nodes","group:automation"]`},
		{"some denied", `{ "tools": { "deny": ["browser", "group:fs"] } }`,
			`["browser","group:fs","group:runtime","group:ui","group:nodes","group:automation"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			text := "{\n  \"gateway\": { \"http\": { \"endpoints\": { \"chatCompletions\": { \"enabled\": true } } } },\n" +
				"  \"agents\": {\n    \"ownership\": \"explicit\",\n    \"entries\": {\n      \"main\": {},\n      \"Voice\": " + c.entry + "\n    }\n  }\n}\n"
			path := writeOpenClawConfig(t, text)
			env, _ := setupEnv(t)
			if code := Main(t.Context(), []string{"setup", "--runtime", "openclaw", "--dir", "proj", "--no-check",
				"--enable-openclaw", "--openclaw-config", path, "--yes"}, env); code != 0 {
				t.Fatalf("exit %d\n%s", code, output(env))
			}
			data, _ := os.ReadFile(path)
			got := decodeOpenClaw(t, data)
			entry := got["agents"].(map[string]any)["entries"].(map[string]any)["Voice"].(map[string]any)
			var wantDeny []any
			for _, g := range strings.Split(strings.Trim(c.wantDeny, "[]"), ",") {
				wantDeny = append(wantDeny, strings.Trim(g, `"`))
			}
			if deny := entry["tools"].(map[string]any)["deny"]; !reflect.DeepEqual(deny, wantDeny) {
				t.Errorf("deny %v, want %v\n%s", deny, wantDeny, data)
			}
			before := decodeOpenClaw(t, []byte(text))["agents"].(map[string]any)["entries"].(map[string]any)["Voice"].(map[string]any)
			for k, v := range before {
				if k != "tools" && !reflect.DeepEqual(entry[k], v) {
					t.Errorf("%s changed from %v to %v", k, v, entry[k])
				}
			}
			if strings.Contains(output(env), "chatCompletions.enabled") {
				t.Errorf("the endpoint was on already, yet setup says it changes it:\n%s", output(env))
			}
		})
	}
}

// TestSetupOpenClawRefuses: what setup cannot change safely it leaves byte for byte as it
// was, says why, and says what to do instead: the command that lets OpenClaw add a second
// agent to a one-agent gateway, or the snippet to merge by hand.
func TestSetupOpenClawRefuses(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []string
	}{
		{"one agent", "{\n  // just me\n  agents: { defaults: { workspace: '~/ws' } },\n}\n",
			[]string{"without an explicit roster", "openclaw agents add voice --non-interactive --workspace "}},
		{"not JSON5", "{ gateway: { port: 18789 }, agents: { ownership: 'explicit' entries: {} } }",
			[]string{"cannot be read as JSON5 (line 1, column 61", "by hand", "chatCompletions: { enabled: true },", "voice: {"}},
		{"$include", `{ "$include": "./base.json5", agents: { ownership: "explicit", entries: { main: {} } } }`,
			[]string{"uses $include", "by hand"}},
		{"legacy roster", `{ agents: { list: [ { id: "main" } ] } }`, []string{"old agents.list", "openclaw doctor --fix"}},
		{"a key twice", `{ gateway: {}, gateway: {} }`, []string{"gateway is written 2 times"}},
		{"not an object", `{ gateway: { http: true } }`, []string{"gateway.http is a boolean, not an object"}},
		{"deny not a list", `{ agents: { ownership: "explicit", entries: { voice: { tools: { deny: "exec" } } } } }`,
			[]string{"tools.deny is string, not a list"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeOpenClawConfig(t, c.text)
			env, _ := setupEnv(t, "OPENCLAW_CONFIG_PATH="+path)
			code := Main(t.Context(), []string{"setup", "--runtime", "openclaw", "--dir", "proj", "--no-check", "--enable-openclaw", "--yes"}, env)
			out := output(env)
			if code != 1 || !strings.Contains(out, path+" was not changed") {
				t.Errorf("exit %d, want 1 saying the file was not changed:\n%s", code, out)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if data, _ := os.ReadFile(path); string(data) != c.text {
				t.Errorf("the file changed:\n%s", data)
			}
			if _, err := os.Stat(filepath.Join(env.WorkDir, "proj")); err == nil {
				t.Error("the project was written although the edit was refused")
			}
		})
	}

	// No file, a link, and a file too large to be a configuration.
	dir := t.TempDir()
	real := writeOpenClawConfig(t, userOpenClawConfig)
	link := filepath.Join(dir, "openclaw.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte("{\"a\": \""+strings.Repeat("x", maxOpenClawConfig)+"\"}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		filepath.Join(dir, "missing.json"): "openclaw onboard",
		link:                               "symbolic link",
		big:                                "larger than 4 MB",
	} {
		env, _ := setupEnv(t)
		code := Main(t.Context(), []string{"setup", "--runtime", "openclaw", "--dir", "proj", "--no-check", "--enable-openclaw",
			"--openclaw-config", file, "--yes"}, env)
		if code != 1 || !strings.Contains(output(env), want) {
			t.Errorf("%s: exit %d, want 1 with %q:\n%s", file, code, want, output(env))
		}
	}
	if data, _ := os.ReadFile(real); string(data) != userOpenClawConfig {
		t.Error("the file behind the link changed")
	}
}

// TestSetupOpenClawFlags: the OpenClaw flags need --runtime openclaw and an agent id
// OpenClaw keeps as it is; --openclaw-agent names the agent added and the one the project
// calls.
func TestSetupOpenClawFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--runtime", "hermes", "--enable-openclaw"},
		{"--runtime", "openai", "--openclaw-agent", "phone"},
		{"--runtime", "openclaw", "--openclaw-agent", "Phone Line"},
		{"--runtime", "openclaw", "--openclaw-agent", "-x"},
	} {
		env, _ := setupEnv(t)
		if code := Main(t.Context(), append([]string{"setup", "--dir", "p", "--no-check"}, args...), env); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, output(env))
		}
	}
	path := writeOpenClawConfig(t, userOpenClawConfig)
	env, _ := setupEnv(t, "OPENCLAW_STATE_DIR="+filepath.Dir(path))
	if code := Main(t.Context(), []string{"setup", "--runtime", "openclaw", "--dir", "p", "--no-check", "--enable-openclaw",
		"--openclaw-agent", "front_desk", "--yes"}, env); code != 0 {
		t.Fatalf("exit %d\n%s", code, output(env))
	}
	data, _ := os.ReadFile(path)
	if _, ok := decodeOpenClaw(t, data)["agents"].(map[string]any)["entries"].(map[string]any)["front_desk"]; !ok {
		t.Errorf("no front_desk agent in the file OPENCLAW_STATE_DIR points at:\n%s", data)
	}
	yaml, _ := os.ReadFile(filepath.Join(env.WorkDir, "p", "handset.yaml"))
	if !strings.Contains(string(yaml), "model: openclaw/front_desk") {
		t.Errorf("the project does not call front_desk:\n%s", yaml)
	}
}

// TestOpenClawConfigPath: setup looks for the configuration where the gateway does.
func TestOpenClawConfigPath(t *testing.T) {
	for _, c := range []struct {
		environ []string
		want    string
	}{
		{[]string{"HOME=/home/a"}, "/home/a/.openclaw/openclaw.json"},
		{[]string{"HOME=/home/a", "OPENCLAW_HOME=/srv/claw"}, "/srv/claw/.openclaw/openclaw.json"},
		{[]string{"HOME=/home/a", "OPENCLAW_STATE_DIR=~/state"}, "/home/a/state/openclaw.json"},
		{[]string{"HOME=/home/a", "OPENCLAW_STATE_DIR=/x", "OPENCLAW_CONFIG_PATH=~/c.json5"}, "/home/a/c.json5"},
		{[]string{"HOME=/home/a", "OPENCLAW_CONFIG_PATH=conf/openclaw.json"}, "/work/conf/openclaw.json"},
	} {
		if got := openclawConfigPath(Env{Environ: c.environ, WorkDir: "/work"}); got != c.want {
			t.Errorf("%v: %s, want %s", c.environ, got, c.want)
		}
	}
}

// TestOpenClawApplyChecksTheFile: a file changed between reading and writing (the
// gateway's own Control UI writes it too) is left alone, and nothing is backed up.
func TestOpenClawApplyChecksTheFile(t *testing.T) {
	path := writeOpenClawConfig(t, userOpenClawConfig)
	plan, err := planOpenClaw(path, "voice")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(userOpenClawConfig, "18789", "18790", 1)
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	env, _ := setupEnv(t)
	if err := plan.apply(env); err == nil || !strings.Contains(err.Error(), "changed while setup ran") {
		t.Errorf("apply: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != changed {
		t.Error("the changed file was overwritten")
	}
	if backups, _ := filepath.Glob(path + ".bak-*"); len(backups) != 0 {
		t.Errorf("backups: %v", backups)
	}
}
