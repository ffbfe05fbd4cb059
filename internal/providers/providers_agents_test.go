package providers_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/sim/fakewebhook"
	"github.com/handset-voice/handset/internal/voice"

	_ "github.com/handset-voice/handset/internal/providers"
)

// settings is a configuration written by hand: a value per setting, the rest empty. A
// setting that is present reads as coming from the environment, an absent one as the
// default.
type settings map[string]string

func (s settings) Value(env string) string { return s[env] }
func (s settings) Duration(env string) time.Duration {
	d, _ := time.ParseDuration(s[env])
	return d
}
func (s settings) Int(string) int       { return 0 }
func (s settings) Bool(env string) bool { return s[env] == "true" }
func (s settings) Source(env string) string {
	if _, ok := s[env]; ok {
		return "environment"
	}
	return "default"
}

// build builds agent runtime name through the registry, as serve does.
func build(t *testing.T, name string, s settings, log *slog.Logger) (voice.Agent, error) {
	t.Helper()
	p, ok := registry.Find[registry.Agent](name)
	if !ok {
		t.Fatalf("no agent runtime %q in the registry", name)
	}
	return p.New(registry.Build{Settings: s, Choice: "HANDSET_AGENT", Log: log, HTTP: &http.Client{}})
}

// saidWords is what every test's caller says; each fake's reply repeats it.
const saidWords = "the blue kettle is singing"

// turn sends one caller turn and returns the whole reply.
func turn(t *testing.T, a voice.Agent) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := a.Reply(ctx, voice.TurnRequest{CallID: "CA-registry", Turn: 1,
		History: []voice.Message{{Role: voice.RoleUser, Content: saidWords}}})
	if err != nil {
		t.Fatalf("Reply: %v", err)
	}
	defer st.Close()
	var b strings.Builder
	for {
		c, err := st.Next()
		if errors.Is(err, io.EOF) {
			return b.String()
		}
		if err != nil {
			t.Fatalf("Next: %v (so far %q)", err, b.String())
		}
		b.WriteString(c.Text)
	}
}

func wantReplyRepeats(t *testing.T, reply string) {
	t.Helper()
	if !strings.Contains(reply, saidWords) {
		t.Fatalf("reply %q does not repeat what the caller said (%q)", reply, saidWords)
	}
}

func serve(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// closedURL is an address where nothing listens any more.
func closedURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func TestOpenAIRuntimeBuiltFromRegistry(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.Options{Key: "sk-agent", Models: []string{"small-model"}})
	t.Cleanup(fake.Close)
	srv := serve(t, fake)

	a, err := build(t, "openai", settings{"HANDSET_AGENT_URL": srv.URL + "/v1", "HANDSET_AGENT_KEY": "sk-agent",
		"HANDSET_AGENT_MODEL": "small-model", "HANDSET_OPENAI_URL": "http://unused.invalid/v1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantReplyRepeats(t, turn(t, a))
	if r := fake.Requests(); len(r) != 1 || r[0].Model != "small-model" {
		t.Fatalf("requests %+v, want one for small-model", r)
	}
}

func TestOpenAIRuntimeDefaultsToTheOpenAIRoot(t *testing.T) {
	fake := fakeopenai.New(fakeopenai.Options{Key: "sk-root"})
	t.Cleanup(fake.Close)
	srv := serve(t, fake)

	a, err := build(t, "openai", settings{"HANDSET_OPENAI_URL": srv.URL + "/v1", "HANDSET_AGENT_KEY": "sk-root"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantReplyRepeats(t, turn(t, a))
	if r := fake.Requests(); len(r) != 1 || r[0].Model != "gpt-4o-mini" {
		t.Fatalf("requests %+v, want one for the default model gpt-4o-mini", r)
	}
}

func TestOpenAIRuntimeRefusesABadURL(t *testing.T) {
	_, err := build(t, "openai", settings{"HANDSET_AGENT_URL": "ftp://models.example/v1"}, nil)
	if err == nil || !strings.Contains(err.Error(), "want http(s)://host[/path]") {
		t.Fatalf("err = %v, want the base URL refused", err)
	}
}

func TestHermesBuiltFromRegistry(t *testing.T) {
	for _, tc := range []struct {
		name      string
		noRuns    bool
		transport string
	}{{"runs API", false, hermes.TransportRuns}, {"chat only", true, hermes.TransportChat}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakehermes.New(fakehermes.Options{Key: "hermes-key-0123456789", NoRuns: tc.noRuns})
			t.Cleanup(fake.Close)
			srv := serve(t, fake)

			a, err := build(t, "hermes", settings{"HANDSET_AGENT_URL": srv.URL + "/v1", "HANDSET_AGENT_KEY": "hermes-key-0123456789"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.(*hermes.Agent).Transport(); got != tc.transport {
				t.Errorf("transport %q, want %q", got, tc.transport)
			}
			wantReplyRepeats(t, turn(t, a))
		})
	}
}

func TestHermesStartUpFailures(t *testing.T) {
	fake := fakehermes.New(fakehermes.Options{Key: "hermes-key-0123456789"})
	t.Cleanup(fake.Close)
	srv := serve(t, fake)
	gone := closedURL(t) + "/v1"

	for _, tc := range []struct {
		name string
		s    settings
		want []string
	}{
		{"nothing listens", settings{"HANDSET_AGENT_URL": gone, "HANDSET_AGENT_KEY": "k"},
			[]string{"Hermes API server at " + gone + ": ", "(is `hermes gateway` running with API_SERVER_ENABLED=true, and is the key its API_SERVER_KEY?)"}},
		{"wrong key", settings{"HANDSET_AGENT_URL": srv.URL + "/v1", "HANDSET_AGENT_KEY": "not-the-key"},
			[]string{"Hermes API server at " + srv.URL + "/v1: ", "is the key its API_SERVER_KEY?"}},
		{"session key setting", settings{"HANDSET_AGENT_URL": srv.URL + "/v1", "HANDSET_SESSION_KEY_FROM": "phone_number"},
			[]string{`HANDSET_SESSION_KEY_FROM="phone_number" is not one of caller_hash or empty`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := build(t, "hermes", tc.s, nil)
			if err == nil {
				t.Fatal("built, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %q, want it to say %q", err, w)
				}
			}
		})
	}
}

func TestOpenClawBuiltFromRegistry(t *testing.T) {
	fake := fakeopenclaw.New(fakeopenclaw.Options{Token: "claw-token",
		Agents: []fakeopenclaw.Agent{{ID: "support"}, {ID: "sales"}}})
	t.Cleanup(fake.Close)
	srv := serve(t, fake)

	a, err := build(t, "openclaw", settings{"HANDSET_AGENT_URL": srv.URL, "HANDSET_AGENT_KEY": "claw-token",
		"HANDSET_AGENT_MODEL": "openclaw/sales"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.(io.Closer).Close() })
	wantReplyRepeats(t, turn(t, a))
	if s := fake.Sends(); len(s) != 1 || s[0].AgentID != "sales" {
		t.Fatalf("sends %+v, want one to the agent named, sales", s)
	}
}

func TestOpenClawOverHTTP(t *testing.T) {
	gateway := fakeopenclaw.New(fakeopenclaw.Options{Token: "claw-token"})
	t.Cleanup(gateway.Close)
	endpoint := fakeopenai.New(fakeopenai.Options{Key: "claw-token"})
	t.Cleanup(endpoint.Close)
	// One address, as the gateway has it: the WebSocket, and the OpenAI-compatible
	// endpoint under /v1.
	mux := http.NewServeMux()
	mux.Handle("/v1/", endpoint)
	mux.Handle("/", gateway)
	srv := serve(t, mux)

	a, err := build(t, "openclaw", settings{"HANDSET_AGENT_URL": srv.URL, "HANDSET_AGENT_KEY": "claw-token",
		"HANDSET_AGENT_TRANSPORT": "http"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantReplyRepeats(t, turn(t, a))
	r := endpoint.Requests()
	if len(r) != 1 || r[0].Model != "openclaw/main" || r[0].Header.Get("x-openclaw-session-key") == "" {
		t.Fatalf("requests %+v, want one for openclaw/main with a session key", r)
	}
}

func TestOpenClawStartUp(t *testing.T) {
	several := fakeopenclaw.New(fakeopenclaw.Options{Token: "claw-token",
		Agents: []fakeopenclaw.Agent{{ID: "support"}, {ID: "sales"}}})
	t.Cleanup(several.Close)
	srv := serve(t, several)

	t.Run("several agents and none named", func(t *testing.T) {
		_, err := build(t, "openclaw", settings{"HANDSET_AGENT_URL": srv.URL, "HANDSET_AGENT_KEY": "claw-token"}, nil)
		if !errors.Is(err, openclaw.ErrNoAgentChosen) {
			t.Fatalf("err = %v, want ErrNoAgentChosen", err)
		}
	})
	t.Run("an agent the gateway does not have", func(t *testing.T) {
		_, err := build(t, "openclaw", settings{"HANDSET_AGENT_URL": srv.URL, "HANDSET_AGENT_KEY": "claw-token",
			"HANDSET_AGENT_MODEL": "openclaw/billing"}, nil)
		if !errors.Is(err, openclaw.ErrUnknownAgent) {
			t.Fatalf("err = %v, want ErrUnknownAgent", err)
		}
	})
	t.Run("a token the gateway refuses", func(t *testing.T) {
		_, err := build(t, "openclaw", settings{"HANDSET_AGENT_URL": srv.URL, "HANDSET_AGENT_KEY": "stale-token",
			"HANDSET_AGENT_MODEL": "openclaw/sales"}, nil)
		if err == nil || !strings.Contains(err.Error(), "refuses the token (HANDSET_AGENT_KEY from environment)") ||
			!strings.Contains(err.Error(), "gateway.auth.token in ~/.openclaw/openclaw.json") {
			t.Fatalf("err = %v, want the refused token and its fix", err)
		}
	})
	t.Run("not a gateway address", func(t *testing.T) {
		_, err := build(t, "openclaw", settings{"HANDSET_AGENT_URL": "ftp://gateway.example"}, nil)
		if err == nil || !strings.Contains(err.Error(), "must start with ws://, wss://, http:// or https://") {
			t.Fatalf("err = %v, want the address refused", err)
		}
	})
	t.Run("bad session key setting", func(t *testing.T) {
		_, err := build(t, "openclaw", settings{"HANDSET_AGENT_URL": srv.URL, "HANDSET_SESSION_KEY_FROM": "caller_hash",
			"HANDSET_SESSION_KEY": "fixed"}, nil)
		if err == nil || !strings.Contains(err.Error(), "set only one") {
			t.Fatalf("err = %v, want the session key settings refused", err)
		}
	})
	t.Run("nothing listens yet", func(t *testing.T) {
		var logs bytes.Buffer
		a, err := build(t, "openclaw", settings{"HANDSET_AGENT_URL": closedURL(t), "HANDSET_AGENT_MODEL": "openclaw/support"},
			slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatalf("start-up stopped: %v; a gateway that is not up yet should not stop it", err)
		}
		a.(io.Closer).Close()
		if !strings.Contains(logs.String(), "the OpenClaw gateway is not ready") || !strings.Contains(logs.String(), "agent=support") {
			t.Fatalf("log %q, want the warning naming the agent", logs.String())
		}
	})
}

func TestWebhookBuiltFromRegistry(t *testing.T) {
	fake := fakewebhook.New(fakewebhook.Options{Key: "hook-token"})
	t.Cleanup(fake.Close)
	srv := serve(t, fake)

	a, err := build(t, "webhook", settings{"HANDSET_AGENT_URL": srv.URL + "/turn", "HANDSET_AGENT_KEY": "hook-token"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantReplyRepeats(t, turn(t, a))

	if _, err := build(t, "webhook", settings{}, nil); err == nil || err.Error() != "webhook agent: URL is required" {
		t.Fatalf("without a URL: err = %v, want the URL required", err)
	}
}

func TestEchoBuiltFromRegistry(t *testing.T) {
	a, err := build(t, "echo", settings{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantReplyRepeats(t, turn(t, a))
}

// checkResults runs runtime name's doctor checks, each in turn, by name.
func checkResults(t *testing.T, name string, s settings) map[string]doctor.Result {
	t.Helper()
	p, _ := registry.Find[registry.Agent](name)
	client := &http.Client{}
	out := map[string]doctor.Result{}
	for _, c := range p.Checks(registry.Probe{Settings: s, Section: "agent", Choice: "HANDSET_AGENT",
		HTTP: func(string) *http.Client { return client }}) {
		if c.Section != "agent" {
			t.Errorf("check %q in section %q, not the probe's", c.Name, c.Section)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out[c.Name] = c.Run(ctx)
		cancel()
	}
	return out
}

func TestRuntimesCheckThemselves(t *testing.T) {
	ai := fakeopenai.New(fakeopenai.Options{Key: "sk-agent", Models: []string{"small-model"}})
	t.Cleanup(ai.Close)
	aiSrv := serve(t, ai)
	hook := fakewebhook.New(fakewebhook.Options{})
	t.Cleanup(hook.Close)
	hookSrv := serve(t, hook)

	for _, tc := range []struct {
		runtime string
		s       settings
		want    map[string]doctor.Status
	}{
		{"openai", settings{"HANDSET_AGENT_URL": aiSrv.URL + "/v1", "HANDSET_AGENT_KEY": "sk-agent", "HANDSET_AGENT_MODEL": "small-model"},
			map[string]doctor.Status{"api": doctor.OK, "model": doctor.OK}},
		{"openai", settings{"HANDSET_AGENT_URL": aiSrv.URL + "/v1", "HANDSET_AGENT_KEY": "sk-agent", "HANDSET_AGENT_MODEL": "large-model"},
			map[string]doctor.Status{"api": doctor.OK, "model": doctor.Warn}},
		{"openai", settings{"HANDSET_AGENT_URL": aiSrv.URL + "/v1", "HANDSET_AGENT_KEY": "sk-other"},
			map[string]doctor.Status{"api": doctor.Fail, "model": doctor.Skip}},
		{"webhook", settings{"HANDSET_AGENT_URL": hookSrv.URL + "/turn"}, map[string]doctor.Status{"webhook": doctor.OK}},
		{"webhook", settings{"HANDSET_AGENT_URL": closedURL(t) + "/turn"}, map[string]doctor.Status{"webhook": doctor.Fail}},
		{"hermes", settings{"HANDSET_AGENT_URL": "https://hermes.invalid/v1"}, map[string]doctor.Status{
			"api server": doctor.Fail, "key": doctor.Skip, "model": doctor.Skip, "capabilities": doctor.Skip,
			"api server enabled": doctor.Skip, "gateway status": doctor.Skip}},
		{"echo", settings{}, map[string]doctor.Status{"runtime": doctor.OK}},
	} {
		got := checkResults(t, tc.runtime, tc.s)
		if len(got) != len(tc.want) {
			t.Errorf("%s: checks %v, want %v", tc.runtime, got, tc.want)
		}
		for name, status := range tc.want {
			if got[name].Status != status {
				t.Errorf("%s %v: %q is %s (%s), want %s", tc.runtime, tc.s, name, got[name].Status, got[name].Detail, status)
			}
		}
	}
}
