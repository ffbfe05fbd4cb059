package config

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The environment variable names are a contract with users (docs/INTERFACE.md): renaming one
// breaks their deployments, so the full list is spelled out here.
var contractEnvNames = []string{
	"HANDSET_LISTEN", "HANDSET_PUBLIC_URL", "HANDSET_TRUSTED_PROXIES", "HANDSET_DATA_DIR", "HANDSET_DATABASE_URL",
	"HANDSET_AGENT", "HANDSET_AGENT_URL", "HANDSET_AGENT_KEY", "HANDSET_AGENT_MODEL", "HANDSET_AGENT_TIMEOUT", "HANDSET_AGENT_TURN_TIMEOUT", "HANDSET_AGENT_HISTORY_LIMIT", "HANDSET_SYSTEM_PROMPT", "HANDSET_SYSTEM_PROMPT_AS_USER", "HANDSET_AGENT_TRANSPORT",
	"HANDSET_AGENT_CA_FILE", "HANDSET_AGENT_TLS_INSECURE",
	"HANDSET_SESSION_KEY", "HANDSET_SESSION_KEY_FROM", "HANDSET_CALLER_HASH_SECRET", "HANDSET_CALLER_MEMORY_ATTESTATION",
	"HANDSET_STT", "HANDSET_STT_FALLBACK", "DEEPGRAM_API_KEY", "HANDSET_DEEPGRAM_URL", "HANDSET_DEEPGRAM_MODEL", "HANDSET_DEEPGRAM_LANGUAGE",
	"HANDSET_SPHINX_MODEL", "HANDSET_SPHINX_DECODERS", "HANDSET_OPENAI_STT_MODEL",
	"HANDSET_TTS", "HANDSET_TTS_FALLBACK", "HANDSET_TTS_TIMEOUT", "ELEVENLABS_API_KEY", "HANDSET_ELEVENLABS_URL", "HANDSET_ELEVENLABS_VOICE", "HANDSET_ELEVENLABS_MODEL",
	"HANDSET_OPENAI_TTS_MODEL", "HANDSET_OPENAI_TTS_VOICE", "HANDSET_FLITE_VOICE", "HANDSET_FLITE_WIDEBAND_VOICE", "HANDSET_ESPEAK_VOICE",
	"OPENAI_API_KEY", "HANDSET_OPENAI_URL",
	"HANDSET_VAD", "HANDSET_VAD_START", "HANDSET_VAD_END", "HANDSET_VAD_THRESHOLD", "HANDSET_ENGINES_DIR",
	"HANDSET_CARRIER", "TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "HANDSET_TWILIO_API_URL", "HANDSET_PHONE_NUMBER",
	"HANDSET_FIRST_MESSAGE", "HANDSET_LONG_TURN_MESSAGE", "HANDSET_LONG_TURN_AFTER", "HANDSET_ERROR_MESSAGE", "HANDSET_DRAIN_MESSAGE",
	"HANDSET_STT_ERROR_MESSAGE", "HANDSET_SILENCE_MESSAGE", "HANDSET_SILENCE_REPROMPT", "HANDSET_SILENCE_HANGUP",
	"HANDSET_TAIL_GRACE", "HANDSET_BARGE_IN_CONFIRM", "HANDSET_FORWARD_STT_WHILE_SPEAKING", "HANDSET_ECHO", "HANDSET_ECHO_MAX_DELAY", "HANDSET_BARGE_IN_MIN_WORDS", "HANDSET_BARGE_IN_GATE", "HANDSET_MAX_CALL",
	"HANDSET_API_TOKEN", "HANDSET_TOOLS_TOKEN", "HANDSET_LOG_LEVEL", "HANDSET_LOG_FORMAT", "HANDSET_BROWSER",
	"HANDSET_BROWSER_HOSTS", "HANDSET_BROWSER_TOKEN",
	"HANDSET_DASHBOARD", "HANDSET_DASHBOARD_TOKEN", "HANDSET_BRIDGE", "HANDSET_BRIDGE_TOKEN", "HANDSET_BRIDGE_RATE", "HANDSET_BRIDGE_MAX_TURNS", "HANDSET_RECORD", "HANDSET_RECORD_NOTICE", "HANDSET_RECORD_RETENTION", "OTEL_EXPORTER_OTLP_ENDPOINT",
	"HANDSET_BROWSER_MAX_CALLS", "HANDSET_MAX_CALLS", "HANDSET_DRAIN_TIMEOUT",
	"HANDSET_NODE_ID", "HANDSET_JOB_LEASE", "HANDSET_OUTBOUND_CONCURRENCY", "HANDSET_OUTBOUND_RATE", "HANDSET_QUIET_HOURS",
	"HANDSET_QUIET_HOURS_ZONE", "HANDSET_MACHINE_DETECTION", "HANDSET_RING_TIMEOUT", "HANDSET_CALL_ALLOW", "HANDSET_TRANSFER_ALLOW", "HANDSET_HANDOFF_URL",
	"HANDSET_HANDOFF_KEY",
}

// The settings carriers declare are each carrier's own contract, pinned by its tests.
func TestSettingNamesAreTheContract(t *testing.T) {
	var got []string
	for _, s := range builtinSettings() {
		got = append(got, s.Env)
	}
	if diff := cmp.Diff(contractEnvNames, got); diff != "" {
		t.Errorf("setting names changed (-contract +table):\n%s", diff)
	}
}

func TestSettingTableIsConsistent(t *testing.T) {
	c := Default()
	envs, yamls := map[string]bool{}, map[string]bool{}
	segment := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	for _, s := range Settings() {
		if envs[s.Env] || yamls[s.YAML] {
			t.Errorf("%s / %s is not unique", s.Env, s.YAML)
		}
		envs[s.Env], yamls[s.YAML] = true, true
		for _, seg := range strings.Split(s.YAML, ".") {
			if !segment.MatchString(seg) {
				t.Errorf("%s: YAML key %q is not lower snake case", s.Env, s.YAML)
			}
		}
		if !validName(s.Env) || strings.ToUpper(s.Env) != s.Env {
			t.Errorf("%s is not an upper-case variable name", s.Env)
		}
		if s.Help == "" || !strings.HasSuffix(s.Help, ".") {
			t.Errorf("%s: help must be a sentence: %q", s.Env, s.Help)
		}
		wantType := map[Kind]any{
			KindString: (*string)(nil), KindEnum: (*string)(nil), KindURL: (*string)(nil), KindListen: (*string)(nil),
			KindSecret: (*Secret)(nil), KindDuration: (*time.Duration)(nil), KindBool: (*bool)(nil), KindInt: (*int)(nil),
		}[s.Kind]
		if reflect.TypeOf(s.field(c)) != reflect.TypeOf(wantType) {
			t.Errorf("%s: kind %v but field is %T", s.Env, s.Kind, s.field(c))
		}
		if (s.Kind == KindEnum) != (len(s.Allowed) > 0) {
			t.Errorf("%s: Allowed is for enums only, and every enum needs it", s.Env)
		}
		if s.positive && s.Kind != KindDuration && s.Kind != KindInt {
			t.Errorf("%s: positive applies to durations and ints only", s.Env)
		}
		if s.Secret() && s.Default != "" {
			t.Errorf("%s: a secret cannot have a built-in default", s.Env)
		}
		if s.Required && s.Default == "" {
			t.Errorf("%s: required settings need a default, or Default() would be invalid", s.Env)
		}
		if s.Kind == KindEnum && s.Default != "" && !contains(s.Allowed, s.Default) {
			t.Errorf("%s: default %q is not allowed", s.Env, s.Default)
		}
		// What Display shows must read back as the same value.
		if probe := Default(); s.set(probe, s.text(c)) != "" || s.text(probe) != s.text(c) {
			t.Errorf("%s: %q does not read back as itself", s.Env, s.text(c))
		}
	}
	for y := range yamls {
		for other := range yamls {
			if strings.HasPrefix(other, y+".") {
				t.Errorf("%s is both a setting and a section holding %s", y, other)
			}
		}
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Every leaf field of Config must belong to exactly one setting, so no field can be forgotten by
// loading, validation or the docs.
func TestEveryConfigFieldHasOneSetting(t *testing.T) {
	c := Default()
	owners := map[uintptr]string{}
	for _, s := range Settings() {
		p := reflect.ValueOf(s.field(c)).Pointer()
		if other, dup := owners[p]; dup {
			t.Errorf("%s and %s share a field", s.Env, other)
		}
		owners[p] = s.Env
	}
	var walk func(v reflect.Value, path string)
	walk = func(v reflect.Value, path string) {
		for i := 0; i < v.NumField(); i++ {
			f, sf := v.Field(i), v.Type().Field(i)
			if !sf.IsExported() {
				continue
			}
			if f.Kind() == reflect.Struct && f.Type() != reflect.TypeOf(Secret{}) {
				walk(f, path+sf.Name+".")
				continue
			}
			if _, ok := owners[f.Addr().Pointer()]; !ok {
				t.Errorf("Config.%s%s has no setting", path, sf.Name)
			}
		}
	}
	walk(reflect.ValueOf(c).Elem(), "")
}

func TestSettingsReturnsACopy(t *testing.T) {
	a := Settings()
	enum := slices.IndexFunc(a, func(s Setting) bool { return len(s.Allowed) > 0 })
	a[0].Env = "CHANGED"
	a[enum].Allowed[0] = "changed"
	b := Settings()
	if b[0].Env == "CHANGED" || b[enum].Allowed[0] == "changed" {
		t.Error("changing the result of Settings changed the table")
	}
}

func TestDisplay(t *testing.T) {
	c := Default()
	c.Agent.Key = NewSecret("x")
	got := map[string]string{}
	for _, env := range []string{"HANDSET_AGENT_TIMEOUT", "HANDSET_LISTEN", "HANDSET_MAX_CALL", "HANDSET_TAIL_GRACE", "HANDSET_FORWARD_STT_WHILE_SPEAKING", "HANDSET_MAX_CALLS", "HANDSET_AGENT_KEY", "OPENAI_API_KEY", "HANDSET_AGENT"} {
		got[env] = setting(t, env).Display(c)
	}
	want := map[string]string{
		"HANDSET_AGENT_TIMEOUT": "60s", "HANDSET_LISTEN": "127.0.0.1:8080", "HANDSET_MAX_CALL": "60m", "HANDSET_TAIL_GRACE": "1500ms",
		"HANDSET_FORWARD_STT_WHILE_SPEAKING": "false", "HANDSET_MAX_CALLS": "200",
		"HANDSET_AGENT_KEY": "set", "OPENAI_API_KEY": "missing", "HANDSET_AGENT": "",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// A loaded value shows as it was written, as long as the field still holds it.
	c = mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_TAIL_GRACE=1m30s", "HANDSET_DRAIN_TIMEOUT=90000ms"}})
	c.Turn.TailGrace = 2 * time.Second
	if got := setting(t, "HANDSET_TAIL_GRACE").Display(c); got != "2s" {
		t.Errorf("changed value shows %q, want 2s", got)
	}
	if got := setting(t, "HANDSET_DRAIN_TIMEOUT").Display(c); got != "90000ms" {
		t.Errorf("loaded value shows %q, want 90000ms", got)
	}
}

func TestKindAndOriginNames(t *testing.T) {
	var kinds []string
	for k := KindString; k <= KindListen+1; k++ {
		kinds = append(kinds, k.String())
	}
	want := []string{"string", "secret", "duration", "bool", "int", "enum", "url", "listen address", "kind(8)"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	origins := []string{
		Origin{}.String(),
		Origin{Kind: FromConfigFile, Path: "h.yaml", Line: 3}.String(),
		Origin{Kind: FromEnvFile, Path: ".env"}.String(),
		Origin{Kind: FromEnvironment, Via: "API_SERVER_KEY"}.String(),
		Origin{Kind: FromFlag}.String(),
	}
	wantOrigins := []string{"default", "config file h.yaml:3", "env file .env", "environment via API_SERVER_KEY", "flag"}
	if diff := cmp.Diff(wantOrigins, origins); diff != "" {
		t.Errorf("origins (-want +got):\n%s", diff)
	}
}
