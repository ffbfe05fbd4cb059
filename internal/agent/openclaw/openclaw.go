// Package openclaw is the native client for the OpenClaw gateway: the WebSocket protocol
// v4 (the gateway's docs/gateway/protocol, as observed against openclaw 2026.9.6). It
// implements voice.Agent.
//
// One WebSocket connection per Agent is shared by all calls. It is opened on first use
// (connect.challenge → connect with the gateway token → hello-ok) and reopened when it
// drops; one reader goroutine matches responses to requests by id and routes "chat" events
// to the turn whose runId matches (the gateway broadcasts every run's events to every
// client, so everything else is dropped), and one writer goroutine sends frames. A gateway
// that answers it is still starting (or restarting) is asked again within the caller's
// context, so a turn waits for it within its own limit (see starting.go).
//
// Usage: the gateway reports a run's output tokens so far in an "agent" event with stream
// "usage" (data.outputTokens), and no input count; each becomes ReplyChunk.Usage.
//
// History: OpenClaw keeps the conversation itself, per session key, in its own durable
// transcript, and stores a run's message and reply when the run finishes. Each turn is
// therefore one "agent" run whose message is TurnRequest.Catchup: the caller's latest
// words, after a note of what the session missed on the line (the greeting or a callback's
// message, sentences of runs cancelled before they finished, which the gateway drops, and
// what the caller heard of a reply they cut off, which the gateway keeps whole or not at
// all). The history the session already holds is never re-sent. A turn that replaces a
// run still being aborted waits for the gateway's answer to chat.abort first (abort.go).
//
// Session keys live in Handset's own namespace: "handset:<key>" from the KeyFactory, or
// "handset:call:<call id>" per call when the factory gives none, qualified as
// "agent:<agent>:…" when an agent is configured.
package openclaw

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

const providerName = "openclaw"

// DefaultURL is the gateway's default listen address.
const DefaultURL = "ws://127.0.0.1:18789"

// DefaultTimeout is how long a turn may stay silent before it fails with KindTimeout.
const DefaultTimeout = 120 * time.Second

// errClosed reports use of a closed Agent.
var errClosed = errors.New("agent closed")

// Options configures an Agent.
type Options struct {
	URL   string // gateway WebSocket URL (GatewayURLs reads any form of it); default DefaultURL
	Token string // the gateway's shared token (auth.token); never logged
	// Agent is the OpenClaw agent id ("support" from HANDSET_AGENT_MODEL=openclaw/support;
	// the "openclaw/" prefix is accepted). Empty: the gateway's only agent; see SelectAgent.
	Agent string
	// SessionKey derives the key the gateway files a call's memory under. Nil, or an empty
	// result: one session per call.
	SessionKey session.KeyFactory
	// VoicePrompt is an extra system prompt asking for voice-style replies, sent with
	// Handset's note about the caller (session.Context.Note) as the "agent" run's
	// extraSystemPrompt (chat.send has no such field).
	VoicePrompt string
	// Timeout is how long a turn may stay silent (no event for its run). Default DefaultTimeout.
	Timeout time.Duration
	// HTTPClient opens the WebSocket (its transport's TLS configuration decides which
	// certificates a wss:// gateway may present). It must have no Timeout. Default:
	// http.DefaultClient.
	HTTPClient *http.Client
	// Logger receives records about the connection and turns. Nil discards them.
	Logger *slog.Logger
}

// GatewayURLs reads the gateway's address, written either way it is known: the WebSocket
// URL (ws://, wss://) or the HTTP one (http://, https://), which name the same port. It
// returns both: the WebSocket URL and the HTTP base (no trailing slash, without /v1).
func GatewayURLs(raw string) (wsURL, httpURL string, err error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || u.Opaque != "" {
		return "", "", fmt.Errorf("openclaw: gateway URL %q is not an absolute ws://, wss://, http:// or https:// URL", raw)
	}
	secure := false
	switch strings.ToLower(u.Scheme) {
	case "ws", "http":
	case "wss", "https":
		secure = true
	default:
		return "", "", fmt.Errorf("openclaw: gateway URL %q must start with ws://, wss://, http:// or https://", raw)
	}
	rest := u.Host + strings.TrimRight(u.EscapedPath(), "/")
	if secure {
		return "wss://" + rest, "https://" + rest, nil
	}
	return "ws://" + rest, "http://" + rest, nil
}

// AgentInfo is one agent the gateway reports in agents.list.
type AgentInfo struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// Agent is the OpenClaw gateway client. Safe for concurrent use.
type Agent struct {
	url, token, agentID, voicePrompt string
	keys                             session.KeyFactory
	timeout                          time.Duration
	client                           *http.Client // nil: the WebSocket library's default
	log                              *slog.Logger

	ctx    context.Context // ends when the Agent is closed
	cancel context.CancelFunc
	wg     sync.WaitGroup // the connection goroutines
	dialMu chan struct{}  // size 1: one dial at a time

	mu     sync.Mutex
	closed bool
	cur    *gwConn
	runs   map[string]*run // runId (= our idempotency key) → its turn
	// aborts holds, per session key, the aborts the gateway has not answered yet; each
	// channel is closed when its answer comes (see abortSettled).
	aborts map[string][]chan struct{}

	badFrames atomic.Int64
}

// New returns an Agent. It does not connect: the first turn or ListAgents does.
func New(opts Options) (*Agent, error) {
	if opts.URL == "" {
		opts.URL = DefaultURL
	}
	if !strings.HasPrefix(opts.URL, "ws://") && !strings.HasPrefix(opts.URL, "wss://") {
		return nil, fmt.Errorf("openclaw: URL %q must start with ws:// or wss:// (GatewayURLs gives it from an http:// one)", opts.URL)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Agent{
		url: opts.URL, token: opts.Token, agentID: trimAgent(opts.Agent), voicePrompt: opts.VoicePrompt,
		keys: opts.SessionKey, timeout: opts.Timeout, client: opts.HTTPClient, log: opts.Logger,
		ctx: ctx, cancel: cancel, dialMu: make(chan struct{}, 1), runs: map[string]*run{},
		aborts: map[string][]chan struct{}{},
	}, nil
}

// Name is "openclaw".
func (a *Agent) Name() string { return providerName }

// BadFrames counts inbound frames that were malformed and dropped.
func (a *Agent) BadFrames() int64 { return a.badFrames.Load() }

// Close aborts the turns still running, closes the connection and waits for its
// goroutines. Idempotent.
func (a *Agent) Close() error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	c := a.cur
	runs := make([]*run, 0, len(a.runs))
	for _, r := range a.runs {
		runs = append(runs, r)
	}
	a.mu.Unlock()
	for _, r := range runs {
		r.abort()
	}
	if c != nil {
		close(c.stop)
	}
	a.wg.Wait()
	a.cancel()
	return nil
}

// conn returns the live connection, dialling one if there is none.
func (a *Agent) conn(ctx context.Context) (*gwConn, error) {
	select {
	case a.dialMu <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-a.dialMu }()
	a.mu.Lock()
	closed, c := a.closed, a.cur
	a.mu.Unlock()
	if closed {
		return nil, a.fail("connect", voice.KindCanceled, errClosed)
	}
	if c != nil && !c.dead() {
		return c, nil
	}
	c, err := a.dialPatiently(ctx)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.closed { // closed while dialling
		a.mu.Unlock()
		c.ws.CloseNow()
		return nil, a.fail("connect", voice.KindCanceled, errClosed)
	}
	a.cur = c
	a.wg.Add(2) // under mu, so never after Close began waiting
	go c.reader()
	go c.writer()
	a.mu.Unlock()
	a.log.Debug("openclaw: connected", "url", a.url)
	return c, nil
}

// route hands a chat event to its run; events of other runs are not ours.
func (a *Agent) route(ev chatEvent) {
	a.mu.Lock()
	r := a.runs[ev.RunID]
	a.mu.Unlock()
	if r != nil {
		r.push(ev)
	}
}

func (a *Agent) fail(op string, kind voice.ErrorKind, err error) *voice.ProviderError {
	return &voice.ProviderError{Provider: providerName, Op: op, Kind: kind, Err: err}
}

// classify turns a request error into a ProviderError.
func (a *Agent) classify(op string, err error) *voice.ProviderError {
	var pe *voice.ProviderError
	var ge *gatewayError
	switch {
	case errors.As(err, &pe):
		return pe
	case errors.As(err, &ge):
		return a.fail(op, ge.kind(), ge)
	case errors.Is(err, context.Canceled):
		return a.fail(op, voice.KindCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return a.fail(op, voice.KindTimeout, err)
	case errors.Is(err, errConnLost):
		return a.fail(op, voice.KindTransient, err)
	}
	return a.fail(op, voice.KindUnknown, err)
}

// ListAgents asks the gateway for its agents (agents.list).
func (a *Agent) ListAgents(ctx context.Context) ([]AgentInfo, error) {
	c, err := a.conn(ctx)
	if err != nil {
		return nil, err
	}
	payload, err := c.call(ctx, "agents.list", map[string]any{})
	if err != nil {
		return nil, a.classify("agents.list", err)
	}
	var list struct {
		Agents []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"agents"`
	}
	if err := unmarshal(payload, &list); err != nil {
		return nil, a.fail("agents.list", voice.KindProtocol, err)
	}
	out := make([]AgentInfo, 0, len(list.Agents))
	for _, ag := range list.Agents {
		if ag.ID != "" {
			out = append(out, AgentInfo{ID: ag.ID, Name: ag.Name})
		}
	}
	return out, nil
}

// What SelectAgent refuses with (errors.Is): several agents and none named, or a named
// agent the gateway does not have. The gateway itself refuses a turn for the same reasons.
var (
	ErrNoAgentChosen = errors.New("the gateway has several agents and none is chosen")
	ErrUnknownAgent  = errors.New("the agent is not on the gateway")
)

// selectError is a SelectAgent refusal: its own words, and which one it is.
type selectError struct {
	msg  string
	kind error
}

func (e *selectError) Error() string { return e.msg }
func (e *selectError) Unwrap() error { return e.kind }

// SelectAgent picks the agent to talk to from the configured one ("support",
// "openclaw/support" or empty) and the gateway's list. A named agent must exist. With
// none named, a gateway with exactly one agent gives that one, and a gateway with several
// is refused rather than silently falling back to its default.
func SelectAgent(configured string, agents []AgentInfo) (string, error) {
	id := trimAgent(configured)
	ids := make([]string, len(agents))
	for i, ag := range agents {
		ids[i] = ag.ID
	}
	switch {
	case len(agents) == 0:
		return "", errors.New("openclaw: the gateway reports no agents")
	case id != "":
		if contains(ids, id) {
			return id, nil
		}
		return "", &selectError{fmt.Sprintf("openclaw: agent %q is not on the gateway (it has %s)", id, strings.Join(ids, ", ")), ErrUnknownAgent}
	case len(agents) == 1:
		return agents[0].ID, nil
	}
	return "", &selectError{fmt.Sprintf("openclaw: the gateway has several agents (%s) and none is chosen: set HANDSET_AGENT_MODEL=openclaw/<agent>",
		strings.Join(ids, ", ")), ErrNoAgentChosen}
}

// AgentID is the agent a configured name means ("openclaw/support" is "support"), or ""
// for none, without asking the gateway whether it has it (SelectAgent does).
func AgentID(configured string) string { return trimAgent(configured) }

// trimAgent reduces "openclaw/support", "openclaw:support" or "support" to "support";
// "openclaw", "openclaw/default" and "default" name no agent.
func trimAgent(s string) string {
	s = strings.TrimSpace(s)
	for _, p := range []string{"openclaw/", "openclaw:", "agent:"} {
		s = strings.TrimPrefix(s, p)
	}
	if s == "openclaw" || s == "default" {
		return ""
	}
	return s
}

// sessionKey is the gateway session for this call, in Handset's own namespace.
func (a *Agent) sessionKey(sc session.Context) string { return SessionKey(a.agentID, a.keys, sc) }

// SessionKey is the gateway session key for a call: the factory's key (or one per call)
// in Handset's namespace, under the agent when one is named. Both transports use it, so a
// caller's memory is the same over the WebSocket and the HTTP endpoint.
func SessionKey(agentID string, keys session.KeyFactory, sc session.Context) string {
	key := ""
	if keys != nil {
		key = keys(sc)
	}
	switch {
	case key == "":
		key = "handset:call:" + string(sc.CallID)
	case !strings.HasPrefix(key, "handset:"):
		key = "handset:" + key
	}
	if agentID != "" {
		key = "agent:" + agentID + ":" + key
	}
	return key
}

// newIdempotencyKey is unique per turn; the gateway uses it as the runId.
func newIdempotencyKey() string {
	var b [16]byte
	rand.Read(b[:])
	return "handset-" + hex.EncodeToString(b[:])
}
