package bridgeclients

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/testpeer"
)

// Pinned versions, as testdata/npm/package.json has them.
const (
	OpenAIVersion        = "6.49.0"
	LiveKitAgentsVersion = "1.9.0"
)

// DefaultTimeoutMS is the clients' request timeout when Request.TimeoutMS is 0.
const DefaultTimeoutMS = 30000

// startGrace is how long Node may take beyond the request timeout before the script is
// killed: loading @livekit/agents takes a few seconds on a busy machine.
const startGrace = 60 * time.Second

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one chat request as a client sends it.
type Request struct {
	BaseURL  string            `json:"baseURL"` // e.g. "http://127.0.0.1:1234/v1"
	Token    string            `json:"token"`   // the bearer token (the clients' API key)
	Model    string            `json:"model"`
	Messages []Message         `json:"messages"`
	User     string            `json:"user,omitempty"`    // OpenAI's `user` field; omitted when empty
	Headers  map[string]string `json:"headers,omitempty"` // extra request headers, e.g. X-Handset-Session
	// Extra are more top-level body fields (e.g. "metadata", Vapi's "call" object, or
	// "stream_options": {"include_usage": true} for a streamed usage chunk). The clients
	// send fields they do not know as given.
	Extra map[string]any `json:"extra,omitempty"`
	// AbortAfterFirstToken (streams only) cancels the request as soon as the first content
	// delta arrives, as a caller who talks over the answer does.
	AbortAfterFirstToken bool `json:"abortAfterFirstToken,omitempty"`
	TimeoutMS            int  `json:"timeoutMS,omitempty"` // the client's request timeout; default DefaultTimeoutMS
}

// Usage is the token usage the server reported.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Error is what a client threw, as it exposes it.
type Error struct {
	Name    string `json:"name"`    // the error's class, e.g. InternalServerError, APIConnectionError, APIStatusError
	Status  int    `json:"status"`  // HTTP status; 0 when there was none
	Type    string `json:"type"`    // the error envelope's type, e.g. server_error
	Code    string `json:"code"`    // the error envelope's code, e.g. invalid_api_key
	Message string `json:"message"` // the client's message (the openai SDK puts the status first)
	Cause   string `json:"cause,omitempty"`
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s (status %d, type %q, code %q): %s", e.Name, e.Status, e.Type, e.Code, e.Message)
	if e.Cause != "" {
		s += " (cause: " + e.Cause + ")"
	}
	return s
}

// Result is what a client got.
type Result struct {
	Text         string   `json:"text"`         // the assistant's content (the deltas joined, for a stream)
	Deltas       []string `json:"deltas"`       // streams: each content delta in order
	FinishReason string   `json:"finishReason"` // the choice's finish_reason; LiveKit's stream does not expose it
	Usage        *Usage   `json:"usage"`        // when the server sent usage
	Error        *Error   `json:"error"`        // when the client threw
	Aborted      bool     `json:"aborted"`      // the client cancelled the request (AbortAfterFirstToken)
	// Client-side timings from just before the request: to the first content delta (the
	// whole reply, unstreamed) and to the end. FirstTokenMS is 0 when none came.
	FirstTokenMS float64 `json:"firstTokenMS"`
	TotalMS      float64 `json:"totalMS"`
	// Stderr is what the script and its libraries logged, for failure messages.
	Stderr string `json:"-"`

	models []string
}

// OpenAIComplete sends r with the openai SDK's chat.completions.create, not streamed.
func OpenAIComplete(t testing.TB, r Request) Result {
	t.Helper()
	return run(t, "openai.mjs", "openai", "complete", r)
}

// OpenAIStream sends r with chat.completions.create({stream: true}) and iterates the stream.
func OpenAIStream(t testing.TB, r Request) Result {
	t.Helper()
	return run(t, "openai.mjs", "openai", "stream", r)
}

// OpenAIModels lists the model ids with the openai SDK's models.list(); a failure is the
// SDK's error.
func OpenAIModels(t testing.TB, baseURL, token string) ([]string, *Error) {
	t.Helper()
	res := run(t, "openai.mjs", "openai", "models", Request{BaseURL: baseURL, Token: token})
	return res.models, res.Error
}

// LiveKitStream sends r with @livekit/agents-plugin-openai's LLM (BaseURL, apiKey Token):
// a ChatContext of r.Messages, LLM.chat, and the returned stream iterated for its text.
// AbortAfterFirstToken closes the stream, the plugin's way of cancelling it. Headers go as
// the plugin's extra_headers and Extra as body fields.
func LiveKitStream(t testing.TB, r Request) Result {
	t.Helper()
	return run(t, "livekit.mjs", "@livekit/agents-plugin-openai", "stream", r)
}

//go:embed testdata/*.mjs
var scripts embed.FS

// lockfile is the one scripts/bridge-clients.sh installs from; it copies it to
// app/.installed once the install is complete.
//
//go:embed testdata/npm/package-lock.json
var lockfile []byte

// install finds the pinned node and the installed clients (pkg must be among them). A
// missing or stale install is a missing peer.
func install(t testing.TB, pkg string) (node, modules string) {
	t.Helper()
	root, err := testpeer.ModuleRoot()
	if err != nil {
		t.Fatalf("bridgeclients: %v", err)
	}
	node = filepath.Join(root, ".cache", "openclaw", "node", "bin", "node")
	app := filepath.Join(root, ".cache", "bridge-clients", "app")
	modules = filepath.Join(app, "node_modules")
	for _, p := range []string{node, filepath.Join(modules, pkg, "package.json")} {
		if _, err := os.Stat(p); err != nil {
			testpeer.Missing(t, testpeer.BridgeClients, err)
		}
	}
	// The marker is the lockfile the tree came from: another one means the install is
	// older (or newer) than this checkout's pins.
	marker, err := os.ReadFile(filepath.Join(app, ".installed"))
	if err != nil {
		testpeer.Missing(t, testpeer.BridgeClients, err)
	}
	if !bytes.Equal(marker, lockfile) {
		testpeer.Missing(t, testpeer.BridgeClients, errors.New(app+" was installed from another lockfile"))
	}
	return node, modules
}

// wireRequest is what a script reads.
type wireRequest struct {
	Request
	Op string `json:"op"`
}

// wireResult is what a script prints.
type wireResult struct {
	Result
	Models []string `json:"models"`
}

func run(t testing.TB, script, pkg, op string, r Request) Result {
	t.Helper()
	node, modules := install(t, pkg)
	dir := t.TempDir()
	// ESM imports ignore NODE_PATH and resolve from the script's own directory, so the
	// scripts sit next to a link to the installed node_modules.
	sub, err := fs.Sub(scripts, "testdata")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, sub); err != nil {
		t.Fatalf("bridgeclients: write scripts: %v", err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("bridgeclients: %v", err)
	}
	if r.TimeoutMS <= 0 {
		r.TimeoutMS = DefaultTimeoutMS
	}
	in, err := json.Marshal(wireRequest{Request: r, Op: op})
	if err != nil {
		t.Fatalf("bridgeclients: encode request: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.TimeoutMS)*time.Millisecond+startGrace)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, script))
	cmd.Dir = dir
	cmd.Env = env(node, dir, modules)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Kill the script with the test's process, so a stuck one cannot outlive it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("bridgeclients: %s %s did not finish in %s\n--- stderr ---\n%s", script, op, time.Duration(r.TimeoutMS)*time.Millisecond+startGrace, stderr.String())
	}
	if err != nil {
		t.Fatalf("bridgeclients: %s %s crashed: %v\n--- stderr ---\n%s", script, op, err, stderr.String())
	}
	line := bytes.TrimSpace(stdout.Bytes())
	var res wireResult
	if bytes.Count(line, []byte("\n")) > 0 || json.Unmarshal(line, &res) != nil {
		t.Fatalf("bridgeclients: %s %s printed no single JSON result line:\n%s\n--- stderr ---\n%s", script, op, stdout.String(), stderr.String())
	}
	res.Stderr = stderr.String()
	res.models = res.Models
	return res.Result
}

// env is the scripts' whole environment: nothing from the test's own (no OPENAI_* variable
// a client would pick up), and a closed loopback port as the proxy for anything that is
// not loopback, so a misdirected client cannot reach beyond the machine.
func env(node, dir, modules string) []string {
	return []string{
		"PATH=" + strings.Join([]string{filepath.Dir(node), "/usr/local/bin", "/usr/bin", "/bin"}, string(os.PathListSeparator)),
		"HOME=" + dir,
		"TMPDIR=" + dir,
		"LANG=C.UTF-8",
		"TZ=UTC",
		// For any CommonJS require; ESM resolves through the node_modules link.
		"NODE_PATH=" + modules,
		"NODE_COMPILE_CACHE=" + filepath.Join(dir, "node-compile-cache"),
		"NODE_USE_ENV_PROXY=1",
		"HTTP_PROXY=http://127.0.0.1:9",
		"HTTPS_PROXY=http://127.0.0.1:9",
		"NO_PROXY=127.0.0.1,localhost,::1",
		"no_proxy=127.0.0.1,localhost,::1",
	}
}
