package cli

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/stt/sphinx"
	"github.com/handset-voice/handset/internal/tts/flite"
)

// withProbes points the demo's localhost probes at urls (hermes, openclaw, ollama order).
func withProbes(t *testing.T, hermes, openclaw, ollama string) {
	saved := demoProbes
	demoProbes = []runtimeProbe{
		{runtime: config.AgentHermes, label: "Hermes Agent", url: hermes},
		{runtime: config.AgentOpenClaw, label: "OpenClaw", url: openclaw},
		{runtime: config.AgentOpenAI, label: "Ollama", url: ollama},
	}
	t.Cleanup(func() { demoProbes = saved })
}

// nowhere is a URL where nothing listens.
func nowhere(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	return srv.URL
}

func fakeOllama(models ...string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/tags" {
			http.NotFound(w, r)
			return
		}
		var list []string
		for _, m := range models {
			list = append(list, fmt.Sprintf(`{"name":%q}`, m))
		}
		fmt.Fprintf(w, `{"models":[%s]}`, strings.Join(list, ","))
	}))
}

// TestDemoChoosesAgent: the demo takes the first runtime that answers on localhost (Hermes,
// then OpenClaw when its token is set, then Ollama with a pulled model), else the echo
// agent, and says what it skipped and why.
func TestDemoChoosesAgent(t *testing.T) {
	hermes := httptest.NewServer(fakehermes.New(fakehermes.Options{}))
	defer hermes.Close()
	openclaw := httptest.NewServer(http.NotFoundHandler()) // answers: a gateway is there
	defer openclaw.Close()
	ollama, emptyOllama := fakeOllama("llama3.2:latest", "qwen3:8b"), fakeOllama()
	defer ollama.Close()
	defer emptyOllama.Close()
	none := nowhere(t)

	cases := []struct {
		name                     string
		hermes, openclaw, ollama string
		environ                  []string
		runtime, url, model      string
		said                     []string
	}{
		{"hermes first", hermes.URL, openclaw.URL, ollama.URL, nil,
			config.AgentHermes, hermes.URL + "/v1", config.DefaultHermesModel, []string{"found Hermes Agent"}},
		{"openclaw with its token", none, openclaw.URL, ollama.URL, []string{"OPENCLAW_GATEWAY_TOKEN=tok"},
			config.AgentOpenClaw, openclaw.URL, config.DefaultOpenClawModel, []string{"found OpenClaw"}},
		{"openclaw without a token is skipped", none, openclaw.URL, ollama.URL, nil,
			config.AgentOpenAI, ollama.URL + "/v1", "llama3.2:latest", []string{"OPENCLAW_GATEWAY_TOKEN is not set", "found Ollama"}},
		{"ollama without models is skipped", none, none, emptyOllama.URL, nil,
			config.AgentEcho, "", "", []string{"no model pulled", "echo agent"}},
		{"nothing answers", none, none, none, nil,
			config.AgentEcho, "", "", []string{"echo agent"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			withProbes(t, tc.hermes, tc.openclaw, tc.ollama)
			var out bytes.Buffer
			env := Env{Stdout: &out, Stderr: &out, Environ: tc.environ, WorkDir: t.TempDir()}
			reload := func(o map[string]string) (*config.Config, error) { return loadConfig(env, &globals{}, o) }
			cfg, note, err := chooseDemoAgent(context.Background(), env, reload)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Agent.Runtime != tc.runtime || cfg.AgentURL() != tc.url || (tc.model != "" && cfg.AgentModel() != tc.model) {
				t.Errorf("chose %s at %q model %q, want %s at %q model %q",
					cfg.Agent.Runtime, cfg.AgentURL(), cfg.AgentModel(), tc.runtime, tc.url, tc.model)
			}
			said := out.String() + note
			for _, s := range tc.said {
				if !strings.Contains(said, s) {
					t.Errorf("demo said %q, missing %q", said, s)
				}
			}
			if tc.runtime == config.AgentOpenClaw && cfg.Agent.Key.Reveal() != "tok" {
				t.Error("the OpenClaw token did not become the agent key")
			}
		})
	}
}

// TestDemoSaysWhatIsMissing: a binary without the offline engines refuses to start the
// demo and says how to get them, instead of failing on the first call.
func TestDemoSaysWhatIsMissing(t *testing.T) {
	if sphinx.Available() && flite.Available() {
		// not a peer: what this build links decides which of the two tests applies
		t.Skip("this build links the offline engines; TestDemoInChromium runs the demo")
	}
	withProbes(t, nowhere(t), nowhere(t), nowhere(t))
	var out bytes.Buffer
	code := Main(context.Background(), []string{"demo", "--listen", "127.0.0.1:0"},
		Env{Stdout: &out, Stderr: &out, Environ: []string{"HANDSET_DATA_DIR=" + t.TempDir()}, WorkDir: t.TempDir()})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"sphinx", "flite", "./scripts/setup.sh", "-tags embedded"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestVersionReportsEngines: `handset version` lists each offline engine and whether it
// is linked, consistent with the build.
func TestVersionReportsEngines(t *testing.T) {
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"version"}, Env{Stdout: &out, Stderr: &out, WorkDir: t.TempDir()}); code != 0 {
		t.Fatalf("exit %d: %s", code, out.String())
	}
	text := out.String()
	for _, e := range []struct {
		line   string
		linked bool
	}{{"sphinx (stt): ", sphinx.Available()}, {"flite (tts): ", flite.Available()}} {
		i := strings.Index(text, e.line)
		if i < 0 {
			t.Fatalf("no %q line:\n%s", e.line, text)
		}
		rest, _, _ := strings.Cut(text[i+len(e.line):], "\n")
		if got := rest != "not linked"; got != e.linked {
			t.Errorf("%s%s, but linked = %v", e.line, rest, e.linked)
		}
	}
	if sphinx.Available() && !strings.Contains(text, "sphinx (stt): ready") {
		t.Errorf("sphinx is linked and its model installed, but version says:\n%s", text)
	}
}
