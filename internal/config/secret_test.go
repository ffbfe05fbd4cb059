package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestSecretRedactsItself(t *testing.T) {
	s := NewSecret("hunter2-value")
	if s.Reveal() != "hunter2-value" || !s.IsSet() || s.Status() != "set" {
		t.Fatalf("Reveal %q, IsSet %v, Status %q", s.Reveal(), s.IsSet(), s.Status())
	}
	var empty Secret
	if empty.IsSet() || empty.Status() != "missing" || empty.String() != "[empty]" {
		t.Errorf("empty secret: IsSet %v, Status %q, String %q", empty.IsSet(), empty.Status(), empty.String())
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X"} {
		out := fmt.Sprintf(format, s)
		if strings.Contains(out, "hunter2") || strings.Contains(out, fmt.Sprintf("%x", "hunter2")) {
			t.Errorf("fmt %s leaks: %s", format, out)
		}
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("k", "key", s)
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("k", "key", s)
	if strings.Contains(buf.String(), "hunter2") || strings.Count(buf.String(), "[redacted]") != 2 {
		t.Errorf("slog output: %s", buf.String())
	}
}

// secretConfig loads a Config in which every secret holds a recognisable value, some of them
// invalid, alongside invalid non-secret values so Validate has plenty to say.
func secretConfig(t *testing.T) *Config {
	t.Helper()
	var environ []string
	for _, s := range Settings() {
		if s.Secret() {
			environ = append(environ, s.Env+"=LEAKED-"+s.Env)
		}
	}
	environ = append(environ, "HANDSET_AGENT=openai", "HANDSET_STT=bogus", "HANDSET_TAIL_GRACE=never", "API_SERVER_KEY=LEAKED-hermes")
	return mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: environ})
}

func TestSecretsNeverPrinted(t *testing.T) {
	c := secretConfig(t)
	if c.DatabaseURL.Reveal() != "LEAKED-HANDSET_DATABASE_URL" || c.Agent.Key.Reveal() != "LEAKED-HANDSET_AGENT_KEY" {
		t.Fatal("the secrets did not load; this test would prove nothing")
	}
	err := c.Validate(ValidateOptions{RequireAgent: true, RequireKeys: true})
	if err == nil || !strings.Contains(err.Error(), "HANDSET_DATABASE_URL (database_url): must be a postgres://") {
		t.Fatalf("want the invalid database URL reported, got %v", err)
	}
	outputs := map[string]string{"Validate error": err.Error()}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		outputs["fmt "+format] = fmt.Sprintf(format, c)
		outputs["fmt "+format+" of value"] = fmt.Sprintf(format, *c)
	}
	js, jerr := json.Marshal(c)
	if jerr != nil {
		t.Fatal(jerr)
	}
	outputs["json"] = string(js)
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "config", c, "agent", c.Agent)
	outputs["slog text"] = buf.String()
	buf.Reset()
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("config", "config", c, "agent", c.Agent)
	outputs["slog json"] = buf.String()
	for _, s := range Settings() {
		outputs["Display "+s.Env] = s.Display(c)
		outputs["Source "+s.Env] = c.Source(s.Env)
		if s.Secret() && s.Display(c) != "set" {
			t.Errorf("Display(%s) = %q, want set", s.Env, s.Display(c))
		}
	}
	for name, out := range outputs {
		if strings.Contains(out, "LEAKED") {
			t.Errorf("%s shows a secret:\n%s", name, out)
		}
	}
}

func TestSecretDisplayMissing(t *testing.T) {
	c := Default()
	for _, s := range Settings() {
		if s.Secret() && s.Display(c) != "missing" {
			t.Errorf("Display(%s) = %q, want missing", s.Env, s.Display(c))
		}
	}
}

func TestFileErrorsDoNotQuoteSecrets(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"a.env":  "sk_live_LEAKED\nKEY=\"LEAKED unterminated\n",
		"b.env":  "GOOD=x\nTOKEN='LEAKED' trailing-LEAKED\n",
		"c.yaml": "agent:\n  key: \"LEAKED\n",
		"d.yaml": "agent:\n  key: LEAKED\n  keys: LEAKED\n  key: again\n",
	})
	for _, opts := range []LoadOptions{
		{WorkDir: dir, EnvFiles: []string{"a.env", "b.env"}},
		{WorkDir: dir, ConfigFile: "c.yaml"},
		{WorkDir: dir, ConfigFile: "d.yaml"},
	} {
		_, err := Load(opts)
		if err == nil {
			t.Fatalf("Load(%+v) succeeded", opts)
		}
		if strings.Contains(err.Error(), "LEAKED") {
			t.Errorf("error quotes file content:\n%v", err)
		}
	}
}
