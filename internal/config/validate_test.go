package config

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/handset-voice/handset/internal/registry"
)

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	for _, opts := range []ValidateOptions{{}, {RequireKeys: true}} {
		if err := c.Validate(opts); err != nil {
			t.Errorf("Validate(%+v) on Default(): %v", opts, err)
		}
	}
	err := c.Validate(ValidateOptions{RequireAgent: true})
	fe := errorFor(t, err, "HANDSET_AGENT")
	if want := "HANDSET_AGENT (agent.runtime): is required: set it to the agent runtime that answers calls, one of " + registryNames(registry.KindAgent); fe.Error() != want {
		t.Errorf("got  %s\nwant %s", fe.Error(), want)
	}
	if n := len(fieldErrors(t, err)); n != 1 {
		t.Errorf("%d errors, want 1: %v", n, err)
	}
}

func TestEnumMessageExample(t *testing.T) {
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_STT=deepgramm"}})
	err := c.Validate(ValidateOptions{})
	want := `HANDSET_STT (stt.provider): "deepgramm" is not one of ` + registryNames(registry.KindSTT) + ` (did you mean deepgram?) (from environment)`
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
}

func TestEveryEnumRejectsABadValue(t *testing.T) {
	for _, s := range Settings() {
		if s.Kind != KindEnum {
			continue
		}
		t.Run(s.Env, func(t *testing.T) {
			if len(s.Allowed) == 0 {
				t.Fatal("enum without allowed values")
			}
			c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{s.Env + "=not-a-choice"}})
			fe := errorFor(t, c.Validate(ValidateOptions{}), s.Env)
			want := s.Env + " (" + s.YAML + `): "not-a-choice" is not one of ` + strings.Join(s.Allowed, ", ") + " (from environment)"
			if fe.Error() != want {
				t.Errorf("got  %s\nwant %s", fe.Error(), want)
			}
			for _, ok := range s.Allowed {
				c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{s.Env + "=" + strings.ToUpper(ok)}})
				for _, fe := range fieldErrors(t, c.Validate(ValidateOptions{})) {
					if fe.Env == s.Env {
						t.Errorf("%s=%s (any case) rejected: %v", s.Env, strings.ToUpper(ok), fe)
					}
				}
				if got := s.text(c); got != ok {
					t.Errorf("%s=%s read as %q, want %q", s.Env, strings.ToUpper(ok), got, ok)
				}
			}
		})
	}
}

func TestValueForms(t *testing.T) {
	tests := []struct {
		env, value string
		wantReason string // "" means valid
	}{
		{"HANDSET_TAIL_GRACE", "1500ms", ""},
		{"HANDSET_TAIL_GRACE", "0", ""},
		{"HANDSET_TAIL_GRACE", "1m30s", ""},
		{"HANDSET_TAIL_GRACE", "abc", "is not a duration (write it with a unit, like 1500ms, 4s or 60m)"},
		{"HANDSET_TAIL_GRACE", "1500", "is not a duration (write it with a unit, like 1500ms, 4s or 60m)"},
		{"HANDSET_TAIL_GRACE", "-1s", "must not be negative"},
		{"HANDSET_AGENT_TIMEOUT", "0s", "must be more than 0"},
		{"HANDSET_AGENT_TURN_TIMEOUT", "0s", "must be more than 0"},
		{"HANDSET_AGENT_TURN_TIMEOUT", "2m", ""},
		{"HANDSET_MAX_CALL", "0", "must be more than 0"},
		{"HANDSET_DRAIN_TIMEOUT", "0s", ""},
		{"HANDSET_FORWARD_STT_WHILE_SPEAKING", "TRUE", ""},
		{"HANDSET_FORWARD_STT_WHILE_SPEAKING", "no", ""},
		{"HANDSET_FORWARD_STT_WHILE_SPEAKING", "1", ""},
		{"HANDSET_FORWARD_STT_WHILE_SPEAKING", "on", "is not a boolean (use true, false, 1, 0, yes or no)"},
		{"HANDSET_MAX_CALLS", "2.5", "is not a whole number"},
		{"HANDSET_MAX_CALLS", "-3", "must not be negative"},
		{"HANDSET_MAX_CALLS", "0", "must be more than 0"},
		{"HANDSET_MAX_CALLS", "1", ""},
		{"HANDSET_PUBLIC_URL", "https://voice.example.com/", ""},
		{"HANDSET_PUBLIC_URL", "http://10.0.0.2:8080/base", ""},
		{"HANDSET_PUBLIC_URL", "voice.example.com", "is not an absolute http:// or https:// URL, like https://example.com"},
		{"HANDSET_PUBLIC_URL", "ftp://voice.example.com", "is not an absolute http:// or https:// URL, like https://example.com"},
		{"HANDSET_PUBLIC_URL", "/relative", "is not an absolute http:// or https:// URL, like https://example.com"},
		{"HANDSET_PUBLIC_URL", "https://voice.example.com/?x=1", "must not have a query or a fragment: Handset appends its own paths"},
		{"HANDSET_AGENT_URL", "http://[::1", "is not an absolute http://, https://, ws:// or wss:// URL, like http://127.0.0.1:18789"},
		{"HANDSET_LISTEN", ":0", ""},
		{"HANDSET_LISTEN", "[::1]:8080", ""},
		{"HANDSET_LISTEN", "localhost:80", ""},
		{"HANDSET_LISTEN", "8080", "is not a host:port address, like 127.0.0.1:8080 or :8080"},
		{"HANDSET_LISTEN", "localhost:http", "has no valid port: use a number from 0 to 65535"},
		{"HANDSET_LISTEN", "1.2.3.4:70000", "has no valid port: use a number from 0 to 65535"},
		{"HANDSET_PHONE_NUMBER", "+14155550100", ""},
		{"HANDSET_PHONE_NUMBER", "+4930901820", ""},
		{"HANDSET_PHONE_NUMBER", "14155550100", "is not an E.164 number: write + then 8 to 15 digits with no spaces, like +14155550100"},
		{"HANDSET_PHONE_NUMBER", "+1 415 555 0100", "is not an E.164 number: write + then 8 to 15 digits with no spaces, like +14155550100"},
		{"HANDSET_PHONE_NUMBER", "+0123456789", "is not an E.164 number: write + then 8 to 15 digits with no spaces, like +14155550100"},
		{"HANDSET_PHONE_NUMBER", "+1234567", "is not an E.164 number: write + then 8 to 15 digits with no spaces, like +14155550100"},
		{"HANDSET_PHONE_NUMBER", "+1234567890123456", "is not an E.164 number: write + then 8 to 15 digits with no spaces, like +14155550100"},
		{"HANDSET_DATABASE_URL", "postgres://u:p@db/handset", ""},
		{"HANDSET_DATABASE_URL", "PostgreSQL://u:p@db/handset?sslmode=disable", ""},
		{"HANDSET_DATABASE_URL", "mysql://u:p@db/handset", "must be a postgres:// or postgresql:// URL (leave it empty for SQLite)"},
		{"HANDSET_API_TOKEN", "x", "is too short to be safe (1 of at least 32 characters): `openssl rand -hex 32` makes one"},
		{"HANDSET_API_TOKEN", strings.Repeat("a", 31), "is too short to be safe (31 of at least 32 characters): `openssl rand -hex 32` makes one"},
		{"HANDSET_API_TOKEN", strings.Repeat("a", 32), ""},
		{"HANDSET_API_TOKEN", strings.Repeat("0123456789abcdef", 4), ""},
		{"HANDSET_TOOLS_TOKEN", "tools", "is too short to be safe (5 of at least 32 characters): `openssl rand -hex 32` makes one"},
		{"HANDSET_TOOLS_TOKEN", strings.Repeat("t", 32), ""},
		{"HANDSET_TRUSTED_PROXIES", "10.0.0.5, 10.1.0.0/16 ,fd00::/8,::1", ""},
		{"HANDSET_TRUSTED_PROXIES", "none", ""},
		{"HANDSET_TRUSTED_PROXIES", "10.0.0.0/33", `"10.0.0.0/33" is not a CIDR range like 10.0.0.0/8 or fd00::/8`},
		{"HANDSET_TRUSTED_PROXIES", "10.0.0.5,proxy.example.com", `"proxy.example.com" is not an IP address or CIDR range`},
		{"HANDSET_TRUSTED_PROXIES", ",", "lists no address: write IP addresses or CIDR ranges separated by commas, or \"none\""},
	}
	for _, tt := range tests {
		t.Run(tt.env+"="+tt.value, func(t *testing.T) {
			c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Overrides: map[string]string{tt.env: tt.value}})
			err := c.Validate(ValidateOptions{})
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			fe := errorFor(t, err, tt.env)
			s := setting(t, tt.env)
			wantValue := tt.value
			if s.Secret() {
				wantValue = ""
			}
			want := FieldError{Env: tt.env, YAML: s.YAML, Value: wantValue, Reason: tt.wantReason, Origin: Origin{Kind: FromFlag}}
			if diff := cmp.Diff(want, fe); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSeveralErrorsAtOnce(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"handset.yaml": yamlLines(
			"listen: nowhere",
			"agent:",
			"  runtime: hermess",
			"turn:",
			"  tail_grace: soon",
		),
		".env": "HANDSET_FORWARD_STT_WHILE_SPEAKING=perhaps\n",
	})
	c := mustLoad(t, LoadOptions{
		WorkDir:   dir,
		Environ:   []string{"HANDSET_LOG_FORMAT=xml"},
		Overrides: map[string]string{"HANDSET_MAX_CALLS": "lots"},
	})
	err := c.Validate(ValidateOptions{RequireAgent: true, RequireKeys: true})
	yaml, env := dir+"/handset.yaml", dir+"/.env"
	want := strings.Join([]string{
		`HANDSET_LISTEN (listen): "nowhere" is not a host:port address, like 127.0.0.1:8080 or :8080 (from config file ` + yaml + `:1)`,
		`HANDSET_AGENT (agent.runtime): "hermess" is not one of ` + registryNames(registry.KindAgent) + ` (did you mean hermes?) (from config file ` + yaml + `:3)`,
		`HANDSET_TAIL_GRACE (turn.tail_grace): "soon" is not a duration (write it with a unit, like 1500ms, 4s or 60m) (from config file ` + yaml + `:5)`,
		`HANDSET_FORWARD_STT_WHILE_SPEAKING (turn.forward_stt_while_speaking): "perhaps" is not a boolean (use true, false, 1, 0, yes or no) (from env file ` + env + `:1)`,
		`HANDSET_LOG_FORMAT (log.format): "xml" is not one of text, json (from environment)`,
		`HANDSET_MAX_CALLS (max_calls): "lots" is not a whole number (from flag)`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got:\n%v\nwant:\n%s", err, want)
	}
	// A value that did not parse leaves the default in place.
	if c.Turn.TailGrace != 1500*time.Millisecond || c.MaxCalls != 200 {
		t.Errorf("tail grace %v, max calls %d: want the defaults", c.Turn.TailGrace, c.MaxCalls)
	}
	var fe FieldError
	if !errors.As(err, &fe) || fe.Env != "HANDSET_LISTEN" {
		t.Errorf("errors.As finds %+v, want the first FieldError", fe)
	}
}

func TestRequirements(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		opts    ValidateOptions
		want    []string // expected error lines, in order
	}{
		{
			name:    "deepgram needs its key",
			environ: []string{"HANDSET_STT=deepgram"},
			opts:    ValidateOptions{RequireKeys: true},
			want:    []string{"DEEPGRAM_API_KEY (stt.deepgram.key): is required with HANDSET_STT=deepgram: create a key in the Deepgram console, or choose another HANDSET_STT"},
		},
		{
			name:    "keys are only checked when asked",
			environ: []string{"HANDSET_STT=deepgram", "HANDSET_TTS=elevenlabs", "HANDSET_AGENT=hermes"},
		},
		{
			name:    "self-hosted deepgram without a key",
			environ: []string{"HANDSET_STT=deepgram", "HANDSET_DEEPGRAM_URL=http://127.0.0.1:9000"},
			opts:    ValidateOptions{RequireKeys: true},
		},
		{
			name:    "elevenlabs needs its key",
			environ: []string{"HANDSET_TTS=elevenlabs"},
			opts:    ValidateOptions{RequireKeys: true},
			want:    []string{"ELEVENLABS_API_KEY (tts.elevenlabs.key): is required with HANDSET_TTS=elevenlabs: create a key in the ElevenLabs settings, or choose another HANDSET_TTS"},
		},
		{
			name:    "openai speech both ways, one error",
			environ: []string{"HANDSET_STT=openai", "HANDSET_TTS=openai"},
			opts:    ValidateOptions{RequireKeys: true},
			want:    []string{"OPENAI_API_KEY (openai.key): is required with HANDSET_STT=openai and HANDSET_TTS=openai: create a key at platform.openai.com"},
		},
		{
			name:    "openai agent, stt and tts all served by one key",
			environ: []string{"HANDSET_STT=openai", "HANDSET_TTS=openai", "HANDSET_AGENT=openai", "OPENAI_API_KEY=sk"},
			opts:    ValidateOptions{RequireAgent: true, RequireKeys: true},
		},
		{
			name:    "openai agent at the vendor needs a key",
			environ: []string{"HANDSET_AGENT=openai", "HANDSET_AGENT_URL=https://api.openai.com/v1"},
			opts:    ValidateOptions{RequireAgent: true, RequireKeys: true},
			want:    []string{"HANDSET_AGENT_KEY (agent.key): is required with HANDSET_AGENT=openai at https://api.openai.com/v1: set OPENAI_API_KEY (openai.key), or HANDSET_AGENT_KEY for a separate key"},
		},
		{
			name:    "openai-compatible local agent needs no key",
			environ: []string{"HANDSET_AGENT=openai", "HANDSET_AGENT_URL=http://127.0.0.1:11434/v1"},
			opts:    ValidateOptions{RequireAgent: true, RequireKeys: true},
		},
		{
			name:    "hermes needs a key",
			environ: []string{"HANDSET_AGENT=hermes"},
			opts:    ValidateOptions{RequireKeys: true},
			want:    []string{"HANDSET_AGENT_KEY (agent.key): is required with HANDSET_AGENT=hermes: set it, or API_SERVER_KEY, to the API_SERVER_KEY of your Hermes gateway (in ~/.hermes/.env)"},
		},
		{
			name:    "webhook needs a URL even without RequireKeys",
			environ: []string{"HANDSET_AGENT=webhook"},
			want:    []string{"HANDSET_AGENT_URL (agent.url): is required with HANDSET_AGENT=webhook: set it to the URL your webhook listens on"},
		},
		{
			name:    "twilio sid without token",
			environ: []string{"TWILIO_ACCOUNT_SID=AC0123"},
			opts:    ValidateOptions{RequireKeys: true},
			want:    []string{"TWILIO_AUTH_TOKEN (twilio.auth_token): is required with TWILIO_ACCOUNT_SID: copy it from the Twilio console"},
		},
		{
			name:    "twilio token without sid",
			environ: []string{"TWILIO_AUTH_TOKEN=tok"},
			opts:    ValidateOptions{RequireKeys: true},
			want:    []string{"TWILIO_ACCOUNT_SID (twilio.account_sid): is required with TWILIO_AUTH_TOKEN: copy it (AC…) from the Twilio console"},
		},
		{
			name:    "static and derived session keys together",
			environ: []string{"HANDSET_SESSION_KEY=shared", "HANDSET_SESSION_KEY_FROM=caller_hash"},
			want:    []string{"HANDSET_SESSION_KEY_FROM (session.key_from): cannot be combined with HANDSET_SESSION_KEY (session.key): set only one of them (from environment)"},
		},
		{
			name:    "serve with nothing configured",
			environ: []string{"HANDSET_STT=deepgram", "HANDSET_TTS=elevenlabs"},
			opts:    ValidateOptions{RequireAgent: true, RequireKeys: true},
			want: []string{
				"HANDSET_AGENT (agent.runtime): is required: set it to the agent runtime that answers calls, one of " + registryNames(registry.KindAgent),
				"DEEPGRAM_API_KEY (stt.deepgram.key): is required with HANDSET_STT=deepgram: create a key in the Deepgram console, or choose another HANDSET_STT",
				"ELEVENLABS_API_KEY (tts.elevenlabs.key): is required with HANDSET_TTS=elevenlabs: create a key in the ElevenLabs settings, or choose another HANDSET_TTS",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: tt.environ})
			var got []string
			for _, fe := range fieldErrors(t, c.Validate(tt.opts)) {
				got = append(got, fe.Error())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateProgrammaticConfig(t *testing.T) {
	c := Default()
	c.Turn.BargeInGate = -5 * time.Second
	c.MaxCalls = 0
	c.Listen = ""
	c.STT.Deepgram.URL = ""
	c.Log.Level = "loud"
	var got []string
	for _, fe := range fieldErrors(t, c.Validate(ValidateOptions{})) {
		got = append(got, fe.Error())
	}
	want := []string{
		`HANDSET_LISTEN (listen): must not be empty`,
		`HANDSET_DEEPGRAM_URL (stt.deepgram.url): must not be empty`,
		`HANDSET_BARGE_IN_GATE (turn.barge_in_gate): "-5s" must not be negative`,
		`HANDSET_LOG_LEVEL (log.level): "loud" is not one of debug, info, warn, error`,
		`HANDSET_MAX_CALLS (max_calls): "0" must be more than 0`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestURLsLoseTrailingSlash(t *testing.T) {
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_OPENAI_URL=http://proxy/v1/", "HANDSET_PUBLIC_URL=https://voice.example.com/"}})
	if c.OpenAI.URL != "http://proxy/v1" || c.PublicURL != "https://voice.example.com" {
		t.Errorf("openai %q, public %q", c.OpenAI.URL, c.PublicURL)
	}
}

func TestTransportMustFitTheRuntime(t *testing.T) {
	for _, tc := range []struct {
		runtime, transport string
		ok                 bool
	}{
		{"hermes", "runs", true}, {"hermes", "chat", true}, {"hermes", "ws", false},
		{"openclaw", "ws", true}, {"openclaw", "http", true}, {"openclaw", "runs", false},
		{"openai", "chat", false}, {"echo", "", true},
	} {
		cfg, err := Load(LoadOptions{WorkDir: t.TempDir(), Environ: []string{
			"HANDSET_AGENT=" + tc.runtime, "HANDSET_AGENT_TRANSPORT=" + tc.transport,
		}})
		if err != nil {
			t.Fatal(err)
		}
		err = cfg.Validate(ValidateOptions{})
		if (err == nil) != tc.ok {
			t.Errorf("%s with %q: err %v, want ok %v", tc.runtime, tc.transport, err, tc.ok)
		}
	}
}

// HANDSET_CALLER_MEMORY_ATTESTATION takes any, B or A in any case, defaults to any, and
// names itself and the allowed levels when wrong.
func TestCallerMemoryAttestation(t *testing.T) {
	if c := mustLoad(t, LoadOptions{WorkDir: t.TempDir()}); c.Session.CallerMemoryAttestation != "any" {
		t.Errorf("default %q, want any", c.Session.CallerMemoryAttestation)
	}
	for in, want := range map[string]string{"a": "A", "A": "A", "b": "B", "ANY": "any"} {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_CALLER_MEMORY_ATTESTATION=" + in}})
		if err := c.Validate(ValidateOptions{}); err != nil || c.Session.CallerMemoryAttestation != want {
			t.Errorf("%q: %q %v, want %q", in, c.Session.CallerMemoryAttestation, err, want)
		}
	}
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_CALLER_MEMORY_ATTESTATION=C"}})
	err := c.Validate(ValidateOptions{})
	if err == nil || !strings.Contains(err.Error(), `HANDSET_CALLER_MEMORY_ATTESTATION (session.caller_memory_attestation): "C" is not one of any, B, A`) {
		t.Errorf("C: %v", err)
	}
}

// Every float a setting holds is a number in its range: NaN, which compares false with
// everything, and the infinities are refused like any other value outside it.
func TestVADThresholdIsAProbability(t *testing.T) {
	for value, ok := range map[string]bool{
		"0.5": true, "0.8": true, "0.01": true, "0x1p-2": true,
		"NaN": false, "nan": false, "-NaN": false, "Inf": false, "+Inf": false, "-Inf": false, "infinity": false,
		"0": false, "1": false, "-0.5": false, "1.5": false, "1e400": false, "half": false, "": false,
	} {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Overrides: map[string]string{"HANDSET_VAD_THRESHOLD": value}})
		err := c.Validate(ValidateOptions{})
		if ok {
			if err != nil {
				t.Errorf("HANDSET_VAD_THRESHOLD=%s rejected: %v", value, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("HANDSET_VAD_THRESHOLD=%s accepted (read as %v)", value, c.VADThreshold())
			continue
		}
		if fe := errorFor(t, err, "HANDSET_VAD_THRESHOLD"); !strings.Contains(fe.Reason, "is not a probability between 0 and 1") {
			t.Errorf("HANDSET_VAD_THRESHOLD=%s: %v", value, fe)
		}
	}
}

// The tools token must differ from the API token (it would grant everything), and a
// rejected token is never shown.
func TestToolsTokenIsItsOwn(t *testing.T) {
	same := strings.Repeat("s", 40)
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_API_TOKEN=" + same, "HANDSET_TOOLS_TOKEN=" + same}})
	err := c.Validate(ValidateOptions{})
	fe := errorFor(t, err, "HANDSET_TOOLS_TOKEN")
	if !strings.Contains(fe.Reason, "the same as HANDSET_API_TOKEN") || strings.Contains(err.Error(), same) {
		t.Errorf("got %v", err)
	}
	c = mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_API_TOKEN=short-secret", "HANDSET_TOOLS_TOKEN=" + same}})
	err = c.Validate(ValidateOptions{})
	if fe := errorFor(t, err, "HANDSET_API_TOKEN"); !strings.Contains(fe.Reason, "of at least 32 characters") || strings.Contains(err.Error(), "short-secret") {
		t.Errorf("got %v", err)
	}
}

// The bridge needs its own token: none at all, or one of the others, is refused unshown.
func TestBridgeTokenIsRequiredAndItsOwn(t *testing.T) {
	same := strings.Repeat("s", 40)
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_BRIDGE=true"}})
	if fe := errorFor(t, c.Validate(ValidateOptions{}), "HANDSET_BRIDGE_TOKEN"); !strings.Contains(fe.Reason, "required with HANDSET_BRIDGE=true") {
		t.Errorf("no token: %v", fe)
	}
	for _, other := range []string{"HANDSET_API_TOKEN", "HANDSET_TOOLS_TOKEN", "HANDSET_DASHBOARD_TOKEN"} {
		c = mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_BRIDGE=true", "HANDSET_BRIDGE_TOKEN=" + same, other + "=" + same}})
		err := c.Validate(ValidateOptions{})
		if fe := errorFor(t, err, "HANDSET_BRIDGE_TOKEN"); !strings.Contains(fe.Reason, "another of Handset's tokens") || strings.Contains(err.Error(), same) {
			t.Errorf("the same as %s: %v", other, err)
		}
	}
	c = mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_BRIDGE=true", "HANDSET_BRIDGE_TOKEN=short"}})
	if fe := errorFor(t, c.Validate(ValidateOptions{}), "HANDSET_BRIDGE_TOKEN"); !strings.Contains(fe.Reason, "at least 32 characters") {
		t.Errorf("a short token: %v", fe)
	}
	// several tokens: each is checked, and each must be its own
	c = mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_BRIDGE=true", "HANDSET_BRIDGE_TOKEN=" + same + ", short"}})
	if fe := errorFor(t, c.Validate(ValidateOptions{}), "HANDSET_BRIDGE_TOKEN"); !strings.Contains(fe.Reason, "token 2 of 2 is too short") {
		t.Errorf("a short second token: %v", fe)
	}
	other := strings.Repeat("o", 40)
	c = mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_BRIDGE=true", "HANDSET_BRIDGE_TOKEN=" + other + "," + same, "HANDSET_API_TOKEN=" + same}})
	if fe := errorFor(t, c.Validate(ValidateOptions{}), "HANDSET_BRIDGE_TOKEN"); !strings.Contains(fe.Reason, "another of Handset's tokens") {
		t.Errorf("the API token among several: %v", fe)
	}
	c = mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_BRIDGE=true", "HANDSET_BRIDGE_TOKEN= " + other + " , " + same + " "}})
	if err := c.Validate(ValidateOptions{}); err != nil {
		t.Errorf("two good tokens: %v", err)
	}
	if got := c.BridgeTokens(); !slices.Equal(got, []string{other, same}) {
		t.Errorf("BridgeTokens %q", got)
	}
}

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies(" 10.0.0.5, 10.1.2.3/16, ::ffff:192.0.2.1, ::1 ")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.5/32", "10.1.0.0/16", "192.0.2.1/32", "::1/128"}
	var gotS []string
	for _, p := range got {
		gotS = append(gotS, p.String())
	}
	if !slices.Equal(gotS, want) {
		t.Errorf("ParseTrustedProxies = %v, want %v", gotS, want)
	}
	for _, none := range []string{"none", "NONE", ""} {
		if got, err := ParseTrustedProxies(none); err != nil || len(got) != 0 {
			t.Errorf("%q: %v, %v; want no proxy", none, got, err)
		}
	}
	def, err := ParseTrustedProxies(DefaultTrustedProxies)
	if err != nil || len(def) != 2 || !def[0].Contains(netip.MustParseAddr("127.0.0.9")) || !def[1].Contains(netip.IPv6Loopback()) {
		t.Errorf("default %v, %v: want loopback", def, err)
	}
}

// A fallback must be a second provider, and needs its keys as much as the first does.
func TestSpeechFallbacks(t *testing.T) {
	load := func(env ...string) error {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: env})
		return c.Validate(ValidateOptions{RequireKeys: true})
	}
	err := load("HANDSET_STT=deepgram", "DEEPGRAM_API_KEY=k", "HANDSET_STT_FALLBACK=deepgram",
		"HANDSET_TTS=flite", "HANDSET_TTS_FALLBACK=flite")
	if want := "HANDSET_STT_FALLBACK (stt.fallback): must name a provider other than HANDSET_STT (both are deepgram): a second provider, or leave it empty (from environment)"; errorFor(t, err, "HANDSET_STT_FALLBACK").Error() != want {
		t.Errorf("got  %v\nwant %s", errorFor(t, err, "HANDSET_STT_FALLBACK"), want)
	}
	if fe := errorFor(t, err, "HANDSET_TTS_FALLBACK"); !strings.Contains(fe.Reason, "other than HANDSET_TTS (both are flite)") {
		t.Errorf("got %v", fe)
	}

	err = load("HANDSET_STT=sphinx", "HANDSET_STT_FALLBACK=deepgram", "HANDSET_TTS=flite", "HANDSET_TTS_FALLBACK=elevenlabs")
	if fe := errorFor(t, err, "DEEPGRAM_API_KEY"); !strings.HasPrefix(fe.Reason, "is required with HANDSET_STT_FALLBACK=deepgram:") ||
		!strings.HasSuffix(fe.Reason, "or choose another HANDSET_STT_FALLBACK") {
		t.Errorf("got %v", fe)
	}
	if fe := errorFor(t, err, "ELEVENLABS_API_KEY"); !strings.HasPrefix(fe.Reason, "is required with HANDSET_TTS_FALLBACK=elevenlabs:") {
		t.Errorf("got %v", fe)
	}
	err = load("HANDSET_STT=deepgram", "DEEPGRAM_API_KEY=k", "HANDSET_STT_FALLBACK=openai", "HANDSET_TTS=flite", "HANDSET_TTS_FALLBACK=openai")
	if fe := errorFor(t, err, "OPENAI_API_KEY"); !strings.HasPrefix(fe.Reason, "is required with HANDSET_STT_FALLBACK=openai and HANDSET_TTS_FALLBACK=openai:") {
		t.Errorf("got %v", fe)
	}
	// A self-hosted fallback needs no key; a good pair passes.
	if err := load("HANDSET_STT=deepgram", "DEEPGRAM_API_KEY=k", "HANDSET_STT_FALLBACK=openai", "HANDSET_OPENAI_URL=http://127.0.0.1:8000/v1",
		"HANDSET_TTS=elevenlabs", "ELEVENLABS_API_KEY=k", "HANDSET_TTS_FALLBACK=flite", "HANDSET_TTS_TIMEOUT=2s"); err != nil {
		t.Errorf("a good pair of fallbacks refused: %v", err)
	}
	if fe := errorFor(t, load("HANDSET_TTS_TIMEOUT=0s"), "HANDSET_TTS_TIMEOUT"); fe.Reason != "must be more than 0" {
		t.Errorf("got %v", fe)
	}
}

// The history window is the whole call (0) or big enough to hold the reply being played
// and the turn before it.
func TestHistoryLimitRange(t *testing.T) {
	for value, ok := range map[string]bool{"0": true, "4": true, "200": true, "1": false, "3": false, "-1": false, "many": false} {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Overrides: map[string]string{"HANDSET_AGENT_HISTORY_LIMIT": value}})
		err := c.Validate(ValidateOptions{})
		if ok != (err == nil) {
			t.Errorf("HANDSET_AGENT_HISTORY_LIMIT=%s: accepted %v, want %v (%v)", value, err == nil, ok, err)
		}
		if !ok && err != nil {
			errorFor(t, err, "HANDSET_AGENT_HISTORY_LIMIT")
		}
	}
	if c := mustLoad(t, LoadOptions{WorkDir: t.TempDir()}); c.Agent.HistoryLimit != 200 {
		t.Errorf("default history limit %d, want 200", c.Agent.HistoryLimit)
	}
}

// The dashboard token is handed to people who may not see numbers: it must be neither the
// API token nor the tools token, and a rejected token is never shown.
func TestDashboardTokenIsItsOwn(t *testing.T) {
	same, other := strings.Repeat("d", 40), strings.Repeat("o", 40)
	for _, env := range [][]string{
		{"HANDSET_API_TOKEN=" + same, "HANDSET_DASHBOARD_TOKEN=" + same},
		{"HANDSET_API_TOKEN=" + other, "HANDSET_TOOLS_TOKEN=" + same, "HANDSET_DASHBOARD_TOKEN=" + same},
	} {
		c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: env})
		err := c.Validate(ValidateOptions{})
		fe := errorFor(t, err, "HANDSET_DASHBOARD_TOKEN")
		if !strings.Contains(fe.Reason, "must be its own") || strings.Contains(err.Error(), same) {
			t.Errorf("%v: got %v", env, err)
		}
	}
	c := mustLoad(t, LoadOptions{WorkDir: t.TempDir(), Environ: []string{"HANDSET_API_TOKEN=" + other, "HANDSET_DASHBOARD_TOKEN=" + same}})
	if err := c.Validate(ValidateOptions{}); err != nil && strings.Contains(err.Error(), "HANDSET_DASHBOARD_TOKEN") {
		t.Errorf("a token of its own is refused: %v", err)
	}
}
