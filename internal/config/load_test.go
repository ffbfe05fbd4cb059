package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLoadWithNothingGivesDefaults(t *testing.T) {
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir()})
	if diff := cmp.Diff(Default(), c, cmpopts.IgnoreUnexported(Config{}), cmp.AllowUnexported(Secret{})); diff != "" {
		t.Errorf("Load of nothing differs from Default() (-want +got):\n%s", diff)
	}
	if c.ConfigFile() != "" || len(c.EnvFiles()) != 0 {
		t.Errorf("files read = %q, %q; want none", c.ConfigFile(), c.EnvFiles())
	}
	for _, s := range Settings() {
		if got := c.Source(s.Env); got != "default" {
			t.Errorf("Source(%s) = %q, want default", s.Env, got)
		}
	}
}

func TestPrecedence(t *testing.T) {
	const env = "HANDSET_LOG_LEVEL"
	type layers struct {
		yaml, dotenv, environ, flag string // "" means the layer does not set it
	}
	tests := []struct {
		name       string
		layers     layers
		want       string
		wantSource string // with DIR for the temp dir
	}{
		{"default only", layers{}, "info", "default"},
		{"file over default", layers{yaml: "debug"}, "debug", "config file DIR/handset.yaml:2"},
		{"env file over file", layers{yaml: "debug", dotenv: "warn"}, "warn", "env file DIR/.env:2"},
		{"environment over env file", layers{yaml: "debug", dotenv: "warn", environ: "error"}, "error", "environment"},
		{"flag over everything", layers{yaml: "debug", dotenv: "warn", environ: "error", flag: "info"}, "info", "flag"},
		{"environment over file without env file", layers{yaml: "debug", environ: "warn"}, "warn", "environment"},
		{"flag over file", layers{yaml: "warn", flag: "debug"}, "debug", "flag"},
		{"env file over default", layers{dotenv: "error"}, "error", "env file DIR/.env:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{}
			if tt.layers.yaml != "" {
				files["handset.yaml"] = yamlLines("log:", "  level: "+tt.layers.yaml)
			}
			if tt.layers.dotenv != "" {
				files[".env"] = "# log\n" + env + "=" + tt.layers.dotenv + "\n"
			}
			writeFiles(t, dir, files)
			opts := LoadOptions{WorkDir: dir}
			if tt.layers.environ != "" {
				opts.Environ = []string{env + "=" + tt.layers.environ}
			}
			if tt.layers.flag != "" {
				opts.Overrides = map[string]string{env: tt.layers.flag}
			}
			c := mustLoad(t, opts)
			if c.Log.Level != tt.want {
				t.Errorf("Log.Level = %q, want %q", c.Log.Level, tt.want)
			}
			if want := strings.ReplaceAll(tt.wantSource, "DIR", dir); c.Source(env) != want {
				t.Errorf("Source = %q, want %q", c.Source(env), want)
			}
		})
	}
}

func TestEveryLayerReachesEverySetting(t *testing.T) {
	// A value for each setting given in one layer must land in the field, whatever the layer.
	values := map[string]string{}
	for _, s := range Settings() {
		values[s.Env] = sampleValue(s)
	}
	check := func(t *testing.T, c *Config, wantKind OriginKind) {
		t.Helper()
		for _, s := range Settings() {
			if got, want := s.text(c), normalized(t, s, values[s.Env]); got != want {
				t.Errorf("%s = %q, want %q", s.Env, got, want)
			}
			if o, _ := c.Origin(s.Env); o.Kind != wantKind {
				t.Errorf("%s origin = %v, want kind %d", s.Env, o, wantKind)
			}
		}
	}
	t.Run("yaml", func(t *testing.T) {
		dir := t.TempDir()
		var b strings.Builder
		for _, s := range Settings() {
			b.WriteString(nestedYAML(s.YAML, values[s.Env]))
		}
		writeFiles(t, dir, map[string]string{"handset.yaml": mergeYAML(t, b.String())})
		check(t, mustLoad(t, LoadOptions{WorkDir: dir}), FromConfigFile)
	})
	t.Run("env file", func(t *testing.T) {
		dir := t.TempDir()
		var b strings.Builder
		for _, s := range Settings() {
			b.WriteString(s.Env + "=" + quoteDotenv(values[s.Env]) + "\n")
		}
		writeFiles(t, dir, map[string]string{".env": b.String()})
		check(t, mustLoad(t, LoadOptions{WorkDir: dir}), FromEnvFile)
	})
	t.Run("environment", func(t *testing.T) {
		var environ []string
		for _, s := range Settings() {
			environ = append(environ, s.Env+"="+values[s.Env])
		}
		check(t, mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: environ}), FromEnvironment)
	})
	t.Run("flags", func(t *testing.T) {
		check(t, mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Overrides: values}), FromFlag)
	})
}

// sampleValue is a valid value for s that differs from its default.
func sampleValue(s Setting) string {
	switch s.Kind {
	case KindSecret:
		if s.Env == "HANDSET_DATABASE_URL" {
			return "postgres://u:pw@db.example/handset"
		}
		return "sample-" + strings.ToLower(s.Env)
	case KindDuration:
		return "2500ms"
	case KindBool:
		return "yes"
	case KindInt:
		return "7"
	case KindEnum:
		return s.Allowed[len(s.Allowed)-1]
	case KindURL:
		return "https://sample.example/" + strings.ToLower(s.Env)
	case KindListen:
		return "0.0.0.0:9090"
	}
	if s.Env == "HANDSET_PHONE_NUMBER" {
		return "+442071838750"
	}
	if s.Env == "HANDSET_TRUSTED_PROXIES" {
		return "10.0.0.0/8,192.0.2.7"
	}
	return "sample " + s.Env
}

// normalized is what the field holds after loading raw.
func normalized(t *testing.T, s Setting, raw string) string {
	t.Helper()
	c := Default()
	if reason := s.set(c, raw); reason != "" {
		t.Fatalf("sample for %s does not parse: %s", s.Env, reason)
	}
	return s.text(c)
}

func nestedYAML(path, value string) string {
	parts := strings.Split(path, ".")
	var b strings.Builder
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i == len(parts)-1 {
			b.WriteString(" " + quoteDotenv(value))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// mergeYAML folds repeated section headers written by nestedYAML into one tree.
func mergeYAML(t *testing.T, flat string) string {
	t.Helper()
	var out []string
	open := map[string]bool{}
	var stack []string
	for _, line := range strings.Split(strings.TrimRight(flat, "\n"), "\n") {
		depth := (len(line) - len(strings.TrimLeft(line, " "))) / 2
		stack = append(stack[:depth], strings.TrimSpace(line))
		key := strings.Join(stack, "/")
		if strings.HasSuffix(line, ":") {
			if open[key] {
				continue
			}
			open[key] = true
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n") + "\n"
}

func quoteDotenv(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`).Replace(v) + `"`
}

func TestDefaultEnvFile(t *testing.T) {
	t.Run("loaded when present", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{".env": "HANDSET_AGENT=hermes\n"})
		c := mustLoad(t, LoadOptions{WorkDir: dir})
		if c.Agent.Runtime != AgentHermes {
			t.Errorf("Agent.Runtime = %q, want hermes from .env", c.Agent.Runtime)
		}
		if want := []string{filepath.Join(dir, ".env")}; !cmp.Equal(c.EnvFiles(), want) {
			t.Errorf("EnvFiles = %q, want %q", c.EnvFiles(), want)
		}
	})
	t.Run("never overrides the environment", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{".env": "HANDSET_AGENT=hermes\nAPI_SERVER_KEY=from-file\n"})
		c := mustLoad(t, LoadOptions{WorkDir: dir, Environ: []string{"HANDSET_AGENT=openclaw", "OPENCLAW_GATEWAY_TOKEN=tok"}})
		if c.Agent.Runtime != AgentOpenClaw {
			t.Errorf("Agent.Runtime = %q, want the environment's openclaw", c.Agent.Runtime)
		}
	})
	t.Run("variable set empty in the environment is not filled from the file", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{
			".env":         "HANDSET_FIRST_MESSAGE=from env file\n",
			"handset.yaml": "messages:\n  first: from yaml\n",
		})
		c := mustLoad(t, LoadOptions{WorkDir: dir, Environ: []string{"HANDSET_FIRST_MESSAGE="}})
		// The environment holds the variable, so the env file may not set it; being empty it
		// counts as unset for the setting, so the YAML value stands.
		if c.Messages.First != "from yaml" {
			t.Errorf("Messages.First = %q, want the YAML value", c.Messages.First)
		}
	})
	t.Run("absent is fine", func(t *testing.T) {
		mustLoad(t, LoadOptions{WorkDir: t.TempDir()})
	})
	t.Run("replaced by --env-file", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{".env": "HANDSET_AGENT=hermes\n", "other.env": "HANDSET_STT=sphinx\n"})
		c := mustLoad(t, LoadOptions{WorkDir: dir, EnvFiles: []string{"other.env"}})
		if c.Agent.Runtime != "" || c.STT.Provider != STTSphinx {
			t.Errorf("runtime %q, stt %q: want .env skipped and other.env read", c.Agent.Runtime, c.STT.Provider)
		}
	})
}

func TestRepeatedEnvFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"first.env":       "HANDSET_AGENT=hermes\nHANDSET_STT=deepgram\n",
		"sub/second.env":  "HANDSET_AGENT=openai\nHANDSET_TTS=flite\nHANDSET_STT=openai\n",
		"third.env":       "export HANDSET_VAD=energy\n",
		"abs/outside.env": "HANDSET_LOG_FORMAT=json\n",
	})
	abs := filepath.Join(dir, "abs/outside.env")
	c := mustLoad(t, LoadOptions{
		WorkDir:  dir,
		EnvFiles: []string{"first.env", "sub/second.env", "third.env", abs},
		Environ:  []string{"HANDSET_STT=sphinx"},
	})
	got := map[string]string{
		"agent": c.Agent.Runtime, "stt": c.STT.Provider, "tts": c.TTS.Provider, "vad": c.VAD.Engine, "log": c.Log.Format,
		"agent source": c.Source("HANDSET_AGENT"), "tts source": c.Source("HANDSET_TTS"), "stt source": c.Source("HANDSET_STT"),
		"log source": c.Source("HANDSET_LOG_FORMAT"),
	}
	want := map[string]string{
		"agent": "hermes", "stt": "sphinx", "tts": "flite", "vad": "energy", "log": "json",
		"agent source": "env file first.env:1", "tts source": "env file sub/second.env:2", "stt source": "environment",
		"log source": "env file " + abs + ":1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("earlier files must win, the environment over all (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"first.env", "sub/second.env", "third.env", abs}, c.EnvFiles()); diff != "" {
		t.Errorf("EnvFiles (-want +got):\n%s", diff)
	}
}

func TestSameFileLastAssignmentWins(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{".env": "HANDSET_TTS=flite\nHANDSET_TTS=espeak\n"})
	c := mustLoad(t, LoadOptions{WorkDir: dir})
	if c.TTS.Provider != TTSEspeak || c.Source("HANDSET_TTS") != "env file "+filepath.Join(dir, ".env")+":2" {
		t.Errorf("got %q from %q; want espeak from line 2", c.TTS.Provider, c.Source("HANDSET_TTS"))
	}
}

func TestConfigFileSelection(t *testing.T) {
	t.Run("explicit file that does not exist", func(t *testing.T) {
		_, err := Load(LoadOptions{WorkDir: t.TempDir(), ConfigFile: "nope.yaml"})
		var fe *FileError
		if !errors.As(err, &fe) || fe.Path != "nope.yaml" || !strings.Contains(err.Error(), "no such file") {
			t.Fatalf("err = %v; want a FileError naming nope.yaml", err)
		}
	})
	t.Run("explicit env file that does not exist", func(t *testing.T) {
		_, err := Load(LoadOptions{WorkDir: t.TempDir(), EnvFiles: []string{"missing.env"}})
		if err == nil || !strings.Contains(err.Error(), "missing.env: no such file") {
			t.Fatalf("err = %v; want missing.env named", err)
		}
	})
	t.Run("explicit file replaces handset.yaml", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"handset.yaml": "listen: :1\n", "conf/other.yaml": "listen: :2\n"})
		c := mustLoad(t, LoadOptions{WorkDir: dir, ConfigFile: "conf/other.yaml"})
		if c.Listen != ":2" || c.ConfigFile() != "conf/other.yaml" || c.Source("HANDSET_LISTEN") != "config file conf/other.yaml:1" {
			t.Errorf("listen %q from %q (file %q)", c.Listen, c.Source("HANDSET_LISTEN"), c.ConfigFile())
		}
	})
	t.Run("default handset.yaml", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"handset.yaml": "listen: :3\n"})
		c := mustLoad(t, LoadOptions{WorkDir: dir})
		if c.Listen != ":3" || c.ConfigFile() != filepath.Join(dir, "handset.yaml") {
			t.Errorf("listen %q, file %q", c.Listen, c.ConfigFile())
		}
	})
	t.Run("a directory named handset.yaml", func(t *testing.T) {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"handset.yaml/x": ""})
		if _, err := Load(LoadOptions{WorkDir: dir}); err == nil {
			t.Fatal("want an error reading a directory as the config file")
		}
	})
}

func TestYAMLFileErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // each must appear in the error
	}{
		{
			name: "dotted key",
			yaml: yamlLines("agent.url: http://x"),
			want: []string{`handset.yaml:1: unknown key "agent.url": write dotted names nested`},
		},
		{
			name: "setting given a mapping",
			yaml: yamlLines("listen:", "  host: x"),
			want: []string{"handset.yaml:2: listen must be a single value, not a list or a mapping"},
		},
		{
			name: "setting given a list",
			yaml: yamlLines("log:", "  level: [debug, info]"),
			want: []string{"handset.yaml:2: log.level must be a single value"},
		},
		{
			name: "section given a value",
			yaml: yamlLines("agent: hermes"),
			want: []string{"handset.yaml:1: agent is a section: put its settings under it, like agent."},
		},
		{
			name: "duplicate key",
			yaml: yamlLines("log:", "  level: info", "  level: debug"),
			want: []string{"handset.yaml:3: log.level is set twice (first on line 2)"},
		},
		{
			name: "not a mapping",
			yaml: yamlLines("- listen"),
			want: []string{"handset.yaml:1: the file must be a mapping of settings"},
		},
		{
			name: "syntax error",
			yaml: yamlLines("listen: :8080", "  bad: indent: here"),
			want: []string{"handset.yaml: line 2"},
		},
		{
			name: "unclosed reference",
			yaml: yamlLines("agent:", "  key: ${API_KEY"),
			want: []string{"handset.yaml:2: agent.key: a ${ is never closed with }"},
		},
		{
			name: "bad reference name",
			yaml: yamlLines("agent:", "  key: ${1X}"),
			want: []string{"handset.yaml:2: agent.key: a ${…} reference needs a variable name"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"handset.yaml": tt.yaml})
			_, err := Load(LoadOptions{WorkDir: dir, ConfigFile: "handset.yaml"})
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			if got := strings.Count(err.Error(), "\n") + 1; got != len(tt.want) {
				t.Errorf("error has %d lines, want %d:\n%v", got, len(tt.want), err)
			}
		})
	}
}

func TestYAMLAccepted(t *testing.T) {
	dir := t.TempDir()
	// Anchors, aliases, nulls, quoted scalars and YAML booleans all read as the text a user means.
	writeFiles(t, dir, map[string]string{"handset.yaml": yamlLines(
		"listen: &addr \"127.0.0.1:9000\"",
		"public_url: ~",
		"agent:",
		"  runtime: Hermes",
		"  system_prompt: |",
		"    Be brief.",
		"    Be kind.",
		"session:",
		"turn:",
		"  forward_stt_while_speaking: yes",
		"  max_call: 90m",
		"max_calls: 0010",
		"messages:",
		"  first: 'Hi: how can I help?'",
	)})
	c := mustLoad(t, LoadOptions{WorkDir: dir})
	got := []any{c.Listen, c.PublicURL, c.Agent.Runtime, c.Agent.SystemPrompt, c.Turn.ForwardSTTWhileSpeaking, c.Turn.MaxCall, c.MaxCalls, c.Messages.First}
	want := []any{"127.0.0.1:9000", "", "hermes", "Be brief.\nBe kind.", true, 90 * time.Minute, 10, "Hi: how can I help?"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if c.Source("HANDSET_PUBLIC_URL") != "default" {
		t.Errorf("a null value must count as unset, source %q", c.Source("HANDSET_PUBLIC_URL"))
	}
	if err := c.Validate(ValidateOptions{}); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestEmptyYAMLFiles(t *testing.T) {
	for _, content := range []string{"", "# only a comment\n", "---\n", "~\n"} {
		dir := t.TempDir()
		writeFiles(t, dir, map[string]string{"handset.yaml": content})
		mustLoad(t, LoadOptions{WorkDir: dir})
	}
}

func TestYAMLExpandsVariables(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		".env": "HERMES_HOST=10.0.0.5\nSHADOWED=from-file\n",
		"handset.yaml": yamlLines(
			"agent:",
			"  runtime: hermes",
			"  url: http://${HERMES_HOST}:8642/v1",
			"  key: ${HERMES_KEY}",
			"  model: ${SHADOWED}",
			"messages:",
			"  first: 'costs $$5? no: literal $${NOT_A_VAR} and ${UNSET_VAR}end'",
			"  error: ${EMPTY}",
		),
	})
	c := mustLoad(t, LoadOptions{WorkDir: dir, Environ: []string{"HERMES_KEY=s3cret-hermes", "SHADOWED=from-env"}})
	got := []string{c.Agent.URL, c.Agent.Key.Reveal(), c.Agent.Model, c.Messages.First, c.Messages.Error}
	want := []string{"http://10.0.0.5:8642/v1", "s3cret-hermes", "from-env", "costs $$5? no: literal ${NOT_A_VAR} and end", ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got, want := c.Source("HANDSET_AGENT_KEY"), "config file "+filepath.Join(dir, "handset.yaml")+":4"; got != want {
		t.Errorf("Source = %q, want %q", got, want)
	}
}

func TestUnknownOverride(t *testing.T) {
	_, err := Load(LoadOptions{WorkDir: t.TempDir(), Overrides: map[string]string{"HANDSET_LOGLEVEL": "debug"}})
	if err == nil || !strings.Contains(err.Error(), `"HANDSET_LOGLEVEL", which is not a setting`) {
		t.Fatalf("err = %v", err)
	}
}

func TestEmptyEnvironmentValueCountsAsUnset(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handset.yaml": "listen: :7000\n"})
	c := mustLoad(t, LoadOptions{WorkDir: dir, Environ: []string{"HANDSET_LISTEN=", "HANDSET_LOG_LEVEL=  "}})
	if c.Listen != ":7000" || c.Log.Level != "info" {
		t.Errorf("listen %q, log level %q: empty variables must not replace lower layers", c.Listen, c.Log.Level)
	}
}

func TestEnvironParsing(t *testing.T) {
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{
		"NOEQUALS", "=C:=C:\\", "HANDSET_FIRST_MESSAGE=a=b=c", "HANDSET_LISTEN= :9 ",
	}})
	if c.Messages.First != "a=b=c" || c.Listen != ":9" {
		t.Errorf("first %q, listen %q", c.Messages.First, c.Listen)
	}
}

func TestAgentDefaultsPerRuntime(t *testing.T) {
	tests := []struct {
		runtime         string
		environ         []string
		wantURL         string
		wantModel       string
		wantKey         string
		wantKeySource   string
		wantKeyRequired bool // Validate with RequireKeys complains without a key
		wantURLRequired bool
	}{
		{runtime: "hermes", wantURL: DefaultHermesURL, wantModel: "hermes-agent", wantKeyRequired: true},
		{runtime: "hermes", environ: []string{"API_SERVER_KEY=hermes-key"}, wantURL: DefaultHermesURL, wantModel: "hermes-agent",
			wantKey: "hermes-key", wantKeySource: "environment via API_SERVER_KEY"},
		{runtime: "hermes", environ: []string{"API_SERVER_KEY=hermes-key", "HANDSET_AGENT_KEY=own-key"}, wantURL: DefaultHermesURL, wantModel: "hermes-agent",
			wantKey: "own-key", wantKeySource: "environment"},
		{runtime: "openclaw", environ: []string{"OPENCLAW_GATEWAY_TOKEN=claw", "API_SERVER_KEY=not-this"}, wantURL: DefaultOpenClawURL, wantModel: "openclaw/main",
			wantKey: "claw", wantKeySource: "environment via OPENCLAW_GATEWAY_TOKEN"},
		{runtime: "openclaw", wantURL: DefaultOpenClawURL, wantModel: "openclaw/main"},
		{runtime: "openai", environ: []string{"OPENAI_API_KEY=sk-1"}, wantURL: "https://api.openai.com/v1", wantModel: "gpt-4o-mini",
			wantKey: "sk-1", wantKeySource: "environment via OPENAI_API_KEY"},
		{runtime: "openai", wantURL: "https://api.openai.com/v1", wantModel: "gpt-4o-mini", wantKeyRequired: true},
		{runtime: "openai", environ: []string{"HANDSET_OPENAI_URL=http://proxy.local/v1", "OPENAI_API_KEY=sk-2"}, wantURL: "http://proxy.local/v1", wantModel: "gpt-4o-mini",
			wantKey: "sk-2", wantKeySource: "environment via OPENAI_API_KEY"},
		// Another server named in HANDSET_AGENT_URL never receives the OpenAI key.
		{runtime: "openai", environ: []string{"HANDSET_AGENT_URL=http://127.0.0.1:11434/v1", "OPENAI_API_KEY=sk-3"}, wantURL: "http://127.0.0.1:11434/v1", wantModel: "gpt-4o-mini"},
		{runtime: "webhook", wantURLRequired: true},
		{runtime: "webhook", environ: []string{"HANDSET_AGENT_URL=https://hooks.example/turn", "API_SERVER_KEY=x", "OPENAI_API_KEY=y"}, wantURL: "https://hooks.example/turn"},
		{runtime: "echo", environ: []string{"OPENAI_API_KEY=y"}},
	}
	for _, tt := range tests {
		t.Run(tt.runtime+" "+strings.Join(tt.environ, " "), func(t *testing.T) {
			c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: append([]string{"HANDSET_AGENT=" + tt.runtime}, tt.environ...)})
			got := []string{c.AgentURL(), c.AgentModel(), c.Agent.Key.Reveal()}
			want := []string{tt.wantURL, tt.wantModel, tt.wantKey}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("url, model, key (-want +got):\n%s", diff)
			}
			wantSource := tt.wantKeySource
			if wantSource == "" {
				wantSource = "default"
			}
			if c.Source("HANDSET_AGENT_KEY") != wantSource {
				t.Errorf("key source = %q, want %q", c.Source("HANDSET_AGENT_KEY"), wantSource)
			}
			err := c.Validate(ValidateOptions{RequireAgent: true, RequireKeys: true})
			var keyErr, urlErr bool
			for _, fe := range fieldErrors(t, err) {
				keyErr = keyErr || fe.Env == "HANDSET_AGENT_KEY"
				urlErr = urlErr || fe.Env == "HANDSET_AGENT_URL"
			}
			if keyErr != tt.wantKeyRequired || urlErr != tt.wantURLRequired {
				t.Errorf("key error %v (want %v), url error %v (want %v): %v", keyErr, tt.wantKeyRequired, urlErr, tt.wantURLRequired, err)
			}
		})
	}
}

func TestAgentKeyFallbackFromFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		".env":         "\nAPI_SERVER_KEY=from-dotenv\n",
		"handset.yaml": yamlLines("agent:", "  runtime: openai", "openai:", "  key: sk-yaml"),
	})
	c := mustLoad(t, LoadOptions{WorkDir: dir})
	if c.Agent.Key.Reveal() != "sk-yaml" || c.Source("HANDSET_AGENT_KEY") != "config file "+filepath.Join(dir, "handset.yaml")+":4 via OPENAI_API_KEY" {
		t.Errorf("openai key from yaml: %q from %q", c.Agent.Key.Reveal(), c.Source("HANDSET_AGENT_KEY"))
	}
	c = mustLoad(t, LoadOptions{WorkDir: dir, Overrides: map[string]string{"HANDSET_AGENT": "hermes"}})
	if c.Agent.Key.Reveal() != "from-dotenv" || c.Source("HANDSET_AGENT_KEY") != "env file "+filepath.Join(dir, ".env")+":2 via API_SERVER_KEY" {
		t.Errorf("hermes key from .env: %q from %q", c.Agent.Key.Reveal(), c.Source("HANDSET_AGENT_KEY"))
	}
}

func TestSourceOfUnknownSetting(t *testing.T) {
	c := Default()
	if got := c.Source("NOT_A_SETTING"); got != "" {
		t.Errorf("Source = %q, want empty", got)
	}
	if _, ok := c.Origin("API_SERVER_KEY"); ok {
		t.Error("API_SERVER_KEY is not a setting of its own")
	}
}
