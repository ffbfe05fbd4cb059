package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/realopenclaw"
	"github.com/handset-voice/handset/internal/testpeer"
)

// TestSetupEnableOpenClawRealGateway: the real OpenClaw gateway, running on a JSON5
// configuration written the way people write it (comments, bare keys, single quotes,
// trailing commas) with its OpenAI-compatible endpoint off, takes setup's edit of that
// file while it runs: the endpoint comes on, the new agent is listed and answers over it,
// and the model behind it is offered no shell, file, browser, device or gateway tool,
// where an agent without the deny list is offered them.
func TestSetupEnableOpenClawRealGateway(t *testing.T) {
	testpeer.Slow(t, "starts the real OpenClaw gateway")
	realopenclaw.NeedInstall(t)
	tools := &offeredTools{}
	llm := fakeopenai.New(fakeopenai.Options{Key: "llm-key"})
	llmSrv := httptest.NewServer(tools.record(realopenclaw.HumanLast(llm)))
	defer func() { llm.Close(); llmSrv.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	dir := t.TempDir()
	gw, err := realopenclaw.Start(ctx, realopenclaw.Options{
		LLMURL: llmSrv.URL + "/v1", LLMKey: "llm-key", Agents: []string{"main", "support"}, Dir: dir,
		ReadyTimeout: 5 * time.Minute, // a loaded machine (the race detector, other tests) starts Node slowly
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Stop()
	// The gateway's configuration file (realopenclaw keeps it in its state folder).
	path := filepath.Join(dir, "state", "openclaw.json")
	generated, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the gateway's configuration: %v", err)
	}

	// The user's file: the same gateway, the endpoint off, in JSON5.
	var cfg map[string]any
	dec := json.NewDecoder(bytes.NewReader(generated))
	dec.UseNumber()
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	delete(cfg["gateway"].(map[string]any), "http")
	user := "// The gateway as I set it up. Hand-edited: keep the comments.\n" + toJSON5(cfg, "") + "\n"
	replaceFile(t, path, user)
	if err := awaitModels(ctx, gw, func(status int, _ []string) bool { return status == http.StatusNotFound }); err != nil {
		t.Fatalf("the gateway did not take the JSON5 file with the endpoint off: %v\n%s", err, gw.Log())
	}

	env, _ := setupEnv(t, "OPENCLAW_CONFIG_PATH="+path)
	if code := Main(ctx, []string{"setup", "--runtime", "openclaw", "--dir", "proj", "--no-check", "--enable-openclaw", "--yes"}, env); code != 0 {
		t.Fatalf("setup: exit %d\n%s", code, output(env))
	}
	edited, _ := os.ReadFile(path)
	for _, l := range strings.Split(user, "\n") {
		if !strings.Contains(string(edited), l) {
			t.Errorf("the line %q is gone from the edited file", l)
		}
	}
	validateWithOpenClaw(t, path)
	var ids []string
	if err := awaitModels(ctx, gw, func(status int, got []string) bool {
		ids = got
		return status == http.StatusOK && slices.Contains(got, "openclaw/voice")
	}); err != nil {
		t.Fatalf("the gateway did not take the edit (endpoint on, agent voice listed; last list %v): %v\n%s\n%s", ids, err, edited, gw.Log())
	}
	if !slices.Contains(ids, "openclaw/support") || !slices.Contains(ids, "openclaw/main") {
		t.Errorf("the other agents are gone: %v", ids)
	}

	voice := tools.during(t, func() { chatThrough(ctx, t, gw, "openclaw/voice") })
	support := tools.during(t, func() { chatThrough(ctx, t, gw, "openclaw/support") })
	t.Logf("offered to voice: %v\noffered to support: %v", keys(voice), keys(support))
	forbidden := []string{"exec", "process", "code_execution", "read", "write", "edit", "apply_patch", "browser", "nodes", "gateway", "cron"}
	for _, name := range forbidden {
		if voice[name] {
			t.Errorf("the voice agent's model is offered %s (offered: %v)", name, keys(voice))
		}
	}
	if !support["exec"] || !support["read"] {
		t.Errorf("an agent without the deny list is not offered exec and read, so this test shows nothing (offered: %v)", keys(support))
	}
}

// TestSetupOpenClawEditsPassOpenClawsCheck: every form of setup's edit (a new agent, an
// agent that has no tools block, one with tools but no deny list, one with part of the
// list) gives a file that OpenClaw's own `openclaw config validate` accepts.
func TestSetupOpenClawEditsPassOpenClawsCheck(t *testing.T) {
	head := "{\n  gateway: { mode: 'local', auth: { mode: 'token', token: 'hs-0123456789abcdef0123456789abcdef' } },\n" +
		"  agents: {\n    ownership: 'explicit',\n    entries: {\n      main: {},\n"
	for name, entry := range map[string]string{
		"new agent":   "",
		"no tools":    "      voice: { name: 'voice' },\n",
		"no deny":     "      voice: { tools: { profile: 'messaging' } },\n",
		"part denied": "      voice: { tools: { deny: ['browser', 'group:fs'] } },\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := writeOpenClawConfig(t, head+entry+"    },\n  },\n}\n")
			env, _ := setupEnv(t, "OPENCLAW_CONFIG_PATH="+path)
			if code := Main(t.Context(), []string{"setup", "--runtime", "openclaw", "--dir", "proj", "--no-check", "--enable-openclaw", "--yes"}, env); code != 0 {
				t.Fatalf("exit %d\n%s", code, output(env))
			}
			validateWithOpenClaw(t, path)
		})
	}
}

// validateWithOpenClaw runs `openclaw config validate` on a configuration file, in a home
// and state folder of its own, and wants it valid.
func validateWithOpenClaw(t *testing.T, path string) {
	t.Helper()
	node, entry := realopenclaw.NeedInstall(t)
	scratch := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, entry, "config", "validate", "--json")
	cmd.Env = []string{"PATH=" + filepath.Dir(node) + ":/usr/bin:/bin", "HOME=" + scratch, "TMPDIR=" + scratch,
		"OPENCLAW_STATE_DIR=" + filepath.Join(scratch, "state"), "OPENCLAW_CONFIG_PATH=" + path,
		"OPENCLAW_NO_AUTO_UPDATE=1", "OPENCLAW_DISABLE_BONJOUR=1",
		// Nothing leaves this machine: the proxy is a closed loopback port.
		"NODE_USE_ENV_PROXY=1", "HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9"}
	out, err := cmd.Output()
	var report struct {
		Valid bool `json:"valid"`
	}
	start := max(bytes.IndexByte(out, '{'), 0) // the report, after any notice
	if jerr := json.Unmarshal(out[start:], &report); err != nil || jerr != nil || !report.Valid {
		data, _ := os.ReadFile(path)
		t.Errorf("openclaw config validate: %v %v\n%s\nof\n%s", err, jerr, out, data)
	}
}

// offeredTools records the tool names in each chat request the gateway sends the LLM.
type offeredTools struct {
	mu    sync.Mutex
	names map[string]bool
}

func (o *offeredTools) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			var req struct {
				Tools []struct {
					Function struct{ Name string } `json:"function"`
				} `json:"tools"`
			}
			if json.Unmarshal(body, &req) == nil {
				o.mu.Lock()
				for _, tl := range req.Tools {
					if o.names != nil {
						o.names[tl.Function.Name] = true
					}
				}
				o.mu.Unlock()
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// during returns the tools offered in the requests made while f ran.
func (o *offeredTools) during(t *testing.T, f func()) map[string]bool {
	o.mu.Lock()
	o.names = map[string]bool{}
	o.mu.Unlock()
	f()
	o.mu.Lock()
	defer o.mu.Unlock()
	got := o.names
	o.names = nil
	if len(got) == 0 {
		t.Error("the gateway offered the model no tools at all")
	}
	return got
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// chatThrough sends one message to an agent over the gateway's OpenAI-compatible
// endpoint and wants a reply.
func chatThrough(ctx context.Context, t *testing.T, gw *realopenclaw.Gateway, model string) {
	t.Helper()
	body := fmt.Sprintf(`{"model": %q, "messages": [{"role": "user", "content": "hello there"}]}`, model)
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, gw.HTTPURL()+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+gw.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", model, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte(`"content"`)) {
		t.Fatalf("%s answered %s: %s\n%s", model, resp.Status, answer, gw.Log())
	}
}

// awaitModels polls GET /v1/models until done says so (the gateway applies a changed
// file by itself, a second or so after it lands; far longer on a loaded machine).
func awaitModels(ctx context.Context, gw *realopenclaw.Gateway, done func(status int, ids []string) bool) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gw.HTTPURL()+"/models", nil)
		req.Header.Set("Authorization", "Bearer "+gw.Token())
		if resp, err := http.DefaultClient.Do(req); err == nil {
			var list struct{ Data []struct{ ID string } }
			_ = json.NewDecoder(resp.Body).Decode(&list)
			resp.Body.Close()
			var ids []string
			for _, m := range list.Data {
				ids = append(ids, m.ID)
			}
			if done(resp.StatusCode, ids) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// replaceFile writes text to path as an editor saves: a new file renamed into place.
func replaceFile(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".saving"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// toJSON5 writes a decoded JSON value as people write JSON5: bare keys where they can be,
// single quotes, trailing commas, and a comment on the gateway block.
func toJSON5(v any, indent string) string {
	inner := indent + "  "
	switch v := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(v))
		for k := range v {
			names = append(names, k)
		}
		sort.Strings(names)
		var b strings.Builder
		b.WriteString("{\n")
		for _, k := range names {
			if k == "gateway" {
				b.WriteString(inner + "// loopback only; the token is in the password manager\n")
			}
			key := k
			if !isIdentifierKey(k) {
				key = "'" + k + "'"
			}
			b.WriteString(inner + key + ": " + toJSON5(v[k], inner) + ",\n")
		}
		return b.String() + indent + "}"
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = toJSON5(x, inner)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case string:
		return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(v) + "'"
	case json.Number:
		return v.String()
	case bool:
		return fmt.Sprint(v)
	case nil:
		return "null"
	}
	panic(fmt.Sprintf("toJSON5: %T", v))
}

func isIdentifierKey(k string) bool {
	for i, c := range k {
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return k != ""
}
