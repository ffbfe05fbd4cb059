// Package realopenclaw starts the real OpenClaw gateway (installed by scripts/openclaw.sh
// into the repository's .cache/openclaw) for integration tests. The gateway runs as a
// subprocess in its own process group, bound to loopback on a random port with a random
// token, with one OpenAI-compatible model provider pointing at the caller's (fake) LLM, the
// OpenAI-compatible HTTP endpoint enabled, and the given agents configured.
//
// Everything the gateway writes goes into Options.Dir: HOME, XDG dirs, TMPDIR, its state
// and config, workspaces and logs all point there. (OpenClaw 2026.9.6 still creates
// zero-byte lock files in a fixed openclaw-state-locks-<uid> folder under the system temp
// dir; see Start.)
package realopenclaw

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/testpeer"
)

// Pinned versions, as installed by scripts/openclaw.sh.
const (
	NodeVersion     = "v24.21.0"
	OpenClawVersion = "2026.9.6"
)

// ModelID is the model id the configured provider offers; the gateway sends it as "model"
// to Options.LLMURL. ProviderID is the provider's name in the gateway config.
const (
	ProviderID = "handset"
	ModelID    = "handset-fake"
)

// DefaultReadyTimeout bounds how long Start waits for the gateway to accept WS connects: a
// safety net, the wait ends when it does. Node takes 10-20 s to start it on an idle machine
// here, and was measured refusing connections for 99-120 s under a loaded test run.
const DefaultReadyTimeout = 5 * time.Minute

// InstallHint is part of the error Start returns when the install is missing.
const InstallHint = "run ./scripts/openclaw.sh to install the pinned Node and OpenClaw into .cache/openclaw"

// Options configure Start.
type Options struct {
	// LLMURL is the OpenAI-compatible base URL of the LLM, e.g. http://127.0.0.1:PORT/v1.
	LLMURL string
	// LLMKey is sent by the gateway as "Authorization: Bearer <LLMKey>". Empty means a
	// placeholder key.
	LLMKey string
	// Agents are the agent ids to configure. Empty means the gateway's default ("main").
	// With more than one, agents.ownership is "explicit" and every request must name one.
	Agents []string
	// Dir is a scratch directory (e.g. t.TempDir()) for config, state, HOME and logs.
	Dir string
	// Logger receives progress records. Nil discards them.
	Logger *slog.Logger
	// ReadyTimeout bounds start-up. Default DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Root is the repository root holding .cache/openclaw. Default: walk up from the
	// working directory to the directory with go.mod.
	Root string
	// HTTPDisabled leaves the OpenAI-compatible HTTP endpoint off, as a fresh install has it.
	HTTPDisabled bool
}

// Gateway is a running gateway. Stop it when done.
type Gateway struct {
	dir   string
	port  int
	token string
	cmd   *exec.Cmd
	log   *slog.Logger

	out      *tailBuffer
	logFile  string
	httpOff  bool          // the OpenAI-compatible endpoint is disabled: /v1/models answers 404
	done     chan struct{} // closed when the process has exited
	waitErr  error
	stopOnce sync.Once
}

// WSURL is the gateway's WebSocket URL (ws://127.0.0.1:PORT).
func (g *Gateway) WSURL() string { return "ws://127.0.0.1:" + strconv.Itoa(g.port) }

// HTTPURL is the base URL of the OpenAI-compatible endpoint (http://127.0.0.1:PORT/v1).
func (g *Gateway) HTTPURL() string { return "http://127.0.0.1:" + strconv.Itoa(g.port) + "/v1" }

// Token is the gateway's shared auth token (WS auth.token, HTTP bearer).
func (g *Gateway) Token() string { return g.token }

// Log returns the gateway's stdout and stderr so far (the tail, if very long), followed
// by the tail of its log file.
func (g *Gateway) Log() string {
	var b strings.Builder
	b.WriteString(g.out.String())
	if data, err := os.ReadFile(g.logFile); err == nil {
		if len(data) > maxTail {
			data = data[len(data)-maxTail:]
		}
		b.WriteString("\n--- " + g.logFile + " ---\n")
		b.Write(data)
	}
	return b.String()
}

// Stop ends the gateway: SIGTERM to its process group, SIGKILL after 5 s, then waits.
// Idempotent and safe to call concurrently.
func (g *Gateway) Stop() {
	g.stopOnce.Do(func() {
		pgid := g.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-g.done:
		case <-time.After(5 * time.Second):
			g.log.Warn("openclaw gateway ignored SIGTERM; killing")
		}
		// Kill whatever is left in the group (children that outlived the leader too).
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-g.done
		if n := g.removeLocks(); n > 0 {
			g.log.Debug("removed openclaw lock files", "count", n, "dir", lockDir())
		}
	})
}

// lockDir is where OpenClaw 2026.9.6 keeps its state-database lock files on POSIX: a fixed
// folder under /tmp (TMPDIR does not move it).
func lockDir() string {
	return filepath.Join("/tmp", "openclaw-state-locks-"+strconv.Itoa(os.Getuid()))
}

// removeLocks deletes the lock files of this gateway's databases. OpenClaw names them
// <family>.<first 8 hex of sha256(database path)>.lock.sqlite, so only files whose hash is
// that of a database under g.dir are touched; other gateways' locks stay.
func (g *Gateway) removeLocks() int {
	hashes := map[string]bool{}
	_ = filepath.WalkDir(g.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				p = real
			}
			sum := sha256.Sum256([]byte(p))
			hashes[hex.EncodeToString(sum[:])[:8]] = true
		}
		return nil
	})
	entries, err := os.ReadDir(lockDir())
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		parts := strings.Split(e.Name(), ".")
		if len(parts) == 4 && parts[2] == "lock" && parts[3] == "sqlite" && hashes[parts[1]] {
			if os.Remove(filepath.Join(lockDir(), e.Name())) == nil {
				n++
			}
		}
	}
	return n
}

// Root returns the repository root: the nearest directory at or above the working
// directory that holds go.mod.
func Root() (string, error) {
	root, err := testpeer.ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("realopenclaw: %w", err)
	}
	return root, nil
}

// Install locates the pinned node binary and the openclaw entry point under root.
func Install(root string) (node, entry string, err error) {
	base := filepath.Join(root, ".cache", "openclaw")
	node = filepath.Join(base, "node", "bin", "node")
	entry = filepath.Join(base, "app", "node_modules", "openclaw", "openclaw.mjs")
	for _, p := range []string{node, entry} {
		if _, err := os.Stat(p); err != nil {
			return "", "", fmt.Errorf("realopenclaw: %s not found: %s", p, InstallHint)
		}
	}
	var pkg struct{ Version string }
	data, err := os.ReadFile(filepath.Join(base, "app", "node_modules", "openclaw", "package.json"))
	if err == nil {
		err = json.Unmarshal(data, &pkg)
	}
	if err != nil || pkg.Version != OpenClawVersion {
		return "", "", fmt.Errorf("realopenclaw: want openclaw %s in %s (found %q, %v): %s", OpenClawVersion, base, pkg.Version, err, InstallHint)
	}
	return node, entry, nil
}

// NeedInstall is Install under the repository root for a test; without the pinned install
// it is a missing peer (testpeer.OpenClaw): the test skips, or fails in the full tier.
func NeedInstall(t testing.TB) (node, entry string) {
	t.Helper()
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	node, entry, err = Install(root)
	if err != nil {
		testpeer.Missing(t, testpeer.OpenClaw, err)
	}
	return node, entry
}

// Start writes the configuration, starts the gateway and waits until a WS connect with the
// token gets hello-ok. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Gateway, error) {
	begin := time.Now()
	g, err := Launch(ctx, opts)
	if err != nil {
		return nil, err
	}
	if err := g.Ready(ctx, opts.ReadyTimeout); err != nil {
		g.Stop()
		return nil, fmt.Errorf("realopenclaw: gateway not ready after %s: %w\n--- last lines of its log ---\n%s",
			time.Since(begin).Round(time.Millisecond), err, lastLines(g.Log(), 40))
	}
	g.log.Info("openclaw gateway ready", "after", time.Since(begin).Round(time.Millisecond), "ws", g.WSURL())
	return g, nil
}

// Launch writes the configuration and starts the gateway without waiting for it: its port
// is chosen, but it may not listen yet, and then answers "gateway starting" for a while.
// Tests of clients that start alongside the gateway use it; Ready waits as Start does.
func Launch(ctx context.Context, opts Options) (*Gateway, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.LLMURL == "" || opts.Dir == "" {
		return nil, errors.New("realopenclaw: Options.LLMURL and Options.Dir are required")
	}
	root := opts.Root
	if root == "" {
		var err error
		if root, err = Root(); err != nil {
			return nil, err
		}
	}
	node, entry, err := Install(root)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	d := func(parts ...string) string { return filepath.Join(append([]string{dir}, parts...)...) }
	for _, p := range []string{d("home"), d("tmp"), d("state"), d("logs"), d("workspace"),
		d("xdg", "config"), d("xdg", "cache"), d("xdg", "data"), d("xdg", "state")} {
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	token := "hs-" + randomHex(16)
	llmKey := opts.LLMKey
	if llmKey == "" {
		llmKey = "sk-handset-placeholder"
	}
	g := &Gateway{dir: dir, port: port, token: token, log: log, out: &tailBuffer{}, logFile: d("logs", "openclaw.log"),
		done: make(chan struct{}), httpOff: opts.HTTPDisabled}
	cfg := config(port, token, opts.LLMURL, llmKey, opts.Agents, g.logFile, d("workspace"), !opts.HTTPDisabled)
	cfgData, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	cfgPath := d("state", "openclaw.json")
	if err := os.WriteFile(cfgPath, cfgData, 0o600); err != nil {
		return nil, err
	}

	cmd := exec.Command(node, entry, "gateway", "--port", strconv.Itoa(port))
	cmd.Dir = d("workspace")
	cmd.Env = []string{
		"PATH=" + filepath.Dir(node) + string(os.PathListSeparator) + "/usr/local/bin:/usr/bin:/bin",
		"HOME=" + d("home"),
		"TMPDIR=" + d("tmp"),
		"XDG_CONFIG_HOME=" + d("xdg", "config"),
		"XDG_CACHE_HOME=" + d("xdg", "cache"),
		"XDG_DATA_HOME=" + d("xdg", "data"),
		"XDG_STATE_HOME=" + d("xdg", "state"),
		"LANG=C.UTF-8",
		"TZ=UTC",
		"OPENCLAW_STATE_DIR=" + d("state"),
		"OPENCLAW_CONFIG_PATH=" + cfgPath,
		"OPENCLAW_DISABLE_BONJOUR=1",
		"OPENCLAW_NO_RESPAWN=1",
		"OPENCLAW_NO_AUTO_UPDATE=1",
		"OPENCLAW_SKIP_CHANNELS=1",
		"OPENCLAW_EXEC_SHELL_SNAPSHOT=0",
		// Belt and braces against traffic beyond loopback: Node's fetch honours these with
		// NODE_USE_ENV_PROXY=1, and the "proxy" is a closed loopback port.
		"NODE_USE_ENV_PROXY=1",
		"HTTP_PROXY=http://127.0.0.1:9",
		"HTTPS_PROXY=http://127.0.0.1:9",
		"NO_PROXY=127.0.0.1,localhost,::1",
		"no_proxy=127.0.0.1,localhost,::1",
		"NODE_COMPILE_CACHE=" + d("tmp", "node-compile-cache"),
	}
	cmd.Stdout = g.out
	cmd.Stderr = g.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("realopenclaw: start %s: %w", node, err)
	}
	g.cmd = cmd
	go func() {
		g.waitErr = cmd.Wait()
		close(g.done)
	}()
	log.Info("openclaw gateway starting", "pid", cmd.Process.Pid, "port", port, "dir", dir)
	return g, nil
}

// Ready waits until the gateway's HTTP side answers and a WS connect with the token gets
// hello-ok, for at most timeout (DefaultReadyTimeout when 0). It does not stop the gateway.
func (g *Gateway) Ready(ctx context.Context, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return g.awaitReady(rctx)
}

// awaitReady polls GET /v1/models, then WS connect until hello-ok.
func (g *Gateway) awaitReady(ctx context.Context) error {
	last := errors.New("no attempt yet")
	stage := "http"
	for {
		select {
		case <-g.done:
			return fmt.Errorf("gateway exited (%v) while waiting for %s readiness; last: %v", g.waitErr, stage, last)
		default:
		}
		if stage == "http" {
			if last = g.httpReady(ctx); last == nil {
				stage = "ws"
				g.log.Info("openclaw gateway HTTP ready; waiting for WS hello-ok")
			}
		}
		if stage == "ws" {
			if last = g.wsReady(ctx); last == nil {
				return nil
			}
			g.log.Debug("openclaw gateway WS not ready", "err", last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s readiness: %w (last: %v)", stage, ctx.Err(), last)
		case <-g.done:
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (g *Gateway) httpReady(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, g.HTTPURL()+"/models", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+g.token)
	resp, err := loopbackClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK && !(g.httpOff && resp.StatusCode == http.StatusNotFound) {
		return fmt.Errorf("GET /v1/models: %s", resp.Status)
	}
	return nil
}

// wsReady does one connect handshake and reports whether it got hello-ok.
func (g *Gateway) wsReady(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := DialWS(rctx, g.WSURL())
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Handshake(rctx, g.token)
	return err
}

// loopbackClient never uses a proxy.
var loopbackClient = &http.Client{Transport: &http.Transport{Proxy: nil}}

// config builds the gateway configuration.
func config(port int, token, llmURL, llmKey string, agents []string, logFile, workspace string, httpOn bool) map[string]any {
	agentsCfg := map[string]any{
		"defaults": map[string]any{
			"model":     map[string]any{"primary": ProviderID + "/" + ModelID},
			"workspace": workspace,
			"heartbeat": map[string]any{"every": "0m"},
		},
	}
	if len(agents) > 0 {
		entries := map[string]any{}
		for _, id := range agents {
			entries[id] = map[string]any{"name": id, "workspace": filepath.Join(workspace, id)}
		}
		agentsCfg["entries"] = entries
		if len(agents) > 1 {
			agentsCfg["ownership"] = "explicit"
		}
	}
	return map[string]any{
		"gateway": map[string]any{
			"mode": "local",
			"port": port,
			"bind": "loopback",
			"auth": map[string]any{"mode": "token", "token": token},
			"http": map[string]any{"endpoints": map[string]any{
				"chatCompletions": map[string]any{"enabled": httpOn},
			}},
		},
		"update":  map[string]any{"checkOnStart": false},
		"logging": map[string]any{"file": logFile, "level": "info"},
		"models": map[string]any{
			// No hosted model catalog download (https://catalog.openclaw.ai by default).
			"catalogRefresh": map[string]any{"enabled": false},
			"mode":           "merge",
			"providers": map[string]any{
				ProviderID: map[string]any{
					"baseUrl": strings.TrimRight(llmURL, "/"),
					"apiKey":  llmKey,
					"api":     "openai-completions",
					"models": []any{map[string]any{
						"id": ModelID, "name": "Handset fake LLM", "reasoning": false, "input": []string{"text"},
						"cost":          map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
						"contextWindow": 128000, "maxTokens": 4096,
					}},
				},
			},
		},
		"agents": agentsCfg,
		"plugins": map[string]any{"entries": map[string]any{
			"memory-core": map[string]any{"config": map[string]any{"dreaming": map[string]any{"enabled": false}}},
		}},
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// maxTail bounds the captured output kept in memory and returned by Log.
const maxTail = 256 << 10

// tailBuffer is an io.Writer keeping the last maxTail bytes. Safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > maxTail {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-maxTail:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

func lastLines(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader([]byte(s)))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// InternalContextPrefix starts the extra user message OpenClaw 2026.9.6 appends after the
// caller's message in every LLM request (exec sessions and other context as "data, not
// instructions").
const InternalContextPrefix = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT"

// HumanLast wraps an OpenAI-compatible fake LLM so that, in each POST .../chat/completions
// body, user messages holding OpenClaw's internal context block are moved in front of the
// last other user message. Fakes that read magic words (HANG, SLOW, ...) or echo text from
// the last user message then see the caller's text, as they would without OpenClaw in
// between. Nothing else in the body changes; other requests pass through untouched.
func HumanLast(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err == nil {
			body = reorderMessages(body)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		next.ServeHTTP(w, r)
	})
}

// reorderMessages does HumanLast's rewrite; bodies it does not understand come back as is.
func reorderMessages(body []byte) []byte {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	var msgs []json.RawMessage
	if json.Unmarshal(req["messages"], &msgs) != nil {
		return body
	}
	type head struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	internal := func(m json.RawMessage) bool {
		var h head
		if json.Unmarshal(m, &h) != nil || h.Role != "user" {
			return false
		}
		var s string
		if json.Unmarshal(h.Content, &s) == nil {
			return strings.HasPrefix(strings.TrimSpace(s), InternalContextPrefix)
		}
		var parts []struct{ Text string }
		if json.Unmarshal(h.Content, &parts) == nil && len(parts) > 0 {
			return strings.HasPrefix(strings.TrimSpace(parts[0].Text), InternalContextPrefix)
		}
		return false
	}
	isUser := func(m json.RawMessage) bool {
		var h head
		return json.Unmarshal(m, &h) == nil && h.Role == "user"
	}
	// Trailing internal-context messages after the last human user message.
	lastHuman := -1
	for i, m := range msgs {
		if isUser(m) && !internal(m) {
			lastHuman = i
		}
	}
	if lastHuman < 0 {
		return body
	}
	var moved, rest []json.RawMessage
	for i, m := range msgs {
		if i > lastHuman && internal(m) {
			moved = append(moved, m)
		} else {
			rest = append(rest, m)
		}
	}
	if len(moved) == 0 {
		return body
	}
	out := make([]json.RawMessage, 0, len(msgs))
	out = append(out, rest[:lastHuman]...)
	out = append(out, moved...)
	out = append(out, rest[lastHuman:]...)
	data, err := json.Marshal(out)
	if err != nil {
		return body
	}
	req["messages"] = data
	if nb, err := json.Marshal(req); err == nil {
		return nb
	}
	return body
}
