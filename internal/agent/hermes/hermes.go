// Package hermes owns Handset's client for the Hermes Agent API server (NousResearch Hermes
// Agent, the "api_server" gateway platform).
//
// Two transports:
//
//   - "runs" (default): POST {base}/runs with the turn (instructions = the system prompt,
//     conversation_history = our own history, input = the caller's new message), then one
//     GET {base}/runs/{id}/events consumer. message.delta becomes ReplyChunk.Text, tool
//     events become ReplyChunk.Progress, run.completed ends the reply, run.failed is an
//     error. Abandoning the event stream does not stop a Hermes run, so a cancelled turn
//     (ctx done or Close before completion) sends POST {base}/runs/{id}/stop with its own
//     short timeout — also before the first token.
//   - "chat": streaming POST {base}/chat/completions, the OpenAI-compatible route. Hermes
//     only notices a cancel at its next write (up to its 30 s keepalive). With a session
//     id Hermes keeps the conversation itself and reads only a request's latest message,
//     so a turn sends the system prompt and one user message, TurnRequest.Catchup: the
//     caller's words after a note of what the session missed (the greeting, sentences of
//     cancelled turns, what the caller heard of a reply they cut off).
//
// Every request carries "Authorization: Bearer <Key>", "X-Hermes-Session-Id:
// handset-<call id>" (one Hermes session per call, so two callers never share a transcript)
// and "X-Hermes-Session-Key" when the KeyFactory gives a non-empty key (long-term memory).
// Runs also carry the id as the body's session_id, which is what Hermes 0.18 reads there.
//
// Hermes fails open: provider problems come back as a normal answer whose text is a warning
// ("⚠️ Provider authentication failed: ...") with zero usage, or as a completion with no
// text and zero usage. The first text of a reply is held back until it cannot be such a
// warning; a warning or an empty zero-usage completion is a transient *voice.ProviderError
// and none of its text is yielded.
//
// The usage Hermes reports with a completed turn (run.completed's input and output tokens,
// or the prompt and completion tokens of a chat completion's finishing chunk) is passed on
// as ReplyChunk.Usage, as Hermes counts it: its agent's own counters, which add up every
// model call behind the turn and may run on across the agent's session.
//
// Only silence is timed (Options.Timeout, default 120 s, longer than Hermes' 30 s keepalive);
// a turn that runs tools for minutes while sending keepalives is never cut off.
//
// Probe asks GET {base}/capabilities at start-up; when the server does not advertise run
// submission, run events and run stop (or has no capabilities route), the Agent falls back
// to the chat transport for every later turn.
package hermes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/agent/httpagent"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// Defaults for Options.
const (
	DefaultBaseURL = "http://127.0.0.1:8642/v1"
	DefaultModel   = "hermes-agent"
	DefaultTimeout = 120 * time.Second
	// StopTimeout bounds the POST /runs/{id}/stop sent after a cancel.
	StopTimeout = 5 * time.Second
)

// Transports.
const (
	TransportRuns = "runs"
	TransportChat = "chat"
)

// Header names.
const (
	HeaderSessionID  = "X-Hermes-Session-Id"
	HeaderSessionKey = "X-Hermes-Session-Key"
)

// SessionPrefix starts every session id we send.
const SessionPrefix = "handset-"

const providerName = "hermes"

// Options configure an Agent.
type Options struct {
	// BaseURL is the API root ending in /v1. Default DefaultBaseURL.
	BaseURL string
	// Key is Hermes' API_SERVER_KEY, sent as a bearer token. Required.
	Key string
	// Model is sent as "model". Default DefaultModel.
	Model string
	// SystemPrompt, when non-empty, goes first (runs: "instructions"; chat: a system message).
	SystemPrompt string
	// Transport is TransportRuns (default) or TransportChat.
	Transport string
	// SessionKey derives X-Hermes-Session-Key from the call; nil or an empty key omits it.
	SessionKey session.KeyFactory
	// Timeout is the longest Hermes may stay completely silent. No total limit. Default 120 s.
	Timeout time.Duration
	// HTTPClient sends requests. Default: a client without an overall timeout.
	HTTPClient *http.Client
	// Logger receives debug records. Nil discards them.
	Logger *slog.Logger
}

// Agent is a voice.Agent backed by a Hermes API server. Safe for concurrent use.
type Agent struct {
	base     string
	key      string
	model    string
	system   string
	keys     session.KeyFactory
	timeout  time.Duration
	client   *http.Client
	log      *slog.Logger
	useChat  atomic.Bool
	wantRuns bool
}

var _ voice.Agent = (*Agent)(nil)

// New checks opts and returns an Agent.
func New(opts Options) (*Agent, error) {
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if !httpagent.ValidURL(base) {
		return nil, fmt.Errorf("hermes agent: base URL %q: want http(s)://host[:port]/v1", httpagent.RedactURL(base))
	}
	if opts.Key == "" {
		return nil, errors.New("hermes agent: key is required (Hermes' API_SERVER_KEY)")
	}
	if err := httpagent.CheckKey(opts.Key); err != nil {
		return nil, fmt.Errorf("hermes agent: %w", err)
	}
	a := &Agent{
		base: strings.TrimRight(base, "/"), key: opts.Key, model: opts.Model, system: opts.SystemPrompt,
		keys: opts.SessionKey, timeout: opts.Timeout, client: opts.HTTPClient, log: opts.Logger,
	}
	switch opts.Transport {
	case "", TransportRuns:
		a.wantRuns = true
	case TransportChat:
		a.useChat.Store(true)
	default:
		return nil, fmt.Errorf("hermes agent: transport %q is not one of %s or %s", opts.Transport, TransportRuns, TransportChat)
	}
	if a.model == "" {
		a.model = DefaultModel
	}
	if a.timeout <= 0 {
		a.timeout = DefaultTimeout
	}
	if a.client == nil {
		a.client = httpagent.Client()
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a, nil
}

// Name returns "hermes".
func (a *Agent) Name() string { return providerName }

// Transport returns the transport turns use now (TransportChat after a fallback).
func (a *Agent) Transport() string {
	if a.useChat.Load() {
		return TransportChat
	}
	return TransportRuns
}

// Reply starts a turn. Errors are *voice.ProviderError.
func (a *Agent) Reply(ctx context.Context, req voice.TurnRequest) (voice.ReplyStream, error) {
	if len(req.History) == 0 {
		return nil, a.fail("reply", voice.KindBadInput, 0, errors.New("empty history: nothing to reply to"))
	}
	h := a.headers(ctx, req)
	if a.useChat.Load() {
		return a.chat(ctx, req, h)
	}
	return a.runs(ctx, req, h)
}

// headers builds the per-turn headers: auth, session id and (when non-empty) session key.
func (a *Agent) headers(ctx context.Context, req voice.TurnRequest) http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+a.key)
	sc, ok := session.From(ctx)
	if !ok {
		sc = session.Context{CallID: req.CallID, CallerHash: req.CallerHash}
	}
	if sc.CallID == "" {
		sc.CallID = req.CallID
	}
	if id := SessionID(sc.CallID); id != "" {
		h.Set(HeaderSessionID, id)
	}
	if a.keys != nil {
		if k := cleanHeader(a.keys(sc)); k != "" {
			h.Set(HeaderSessionKey, k)
		}
	}
	return h
}

// SessionID is the Hermes session id for a call: "handset-" and the call id, with the
// characters Hermes rejects (path separators, "..", controls) and colons replaced, at most 256 bytes.
// Empty when there is no call id.
func SessionID(call voice.CallID) string {
	if call == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(SessionPrefix)
	for _, r := range string(call) {
		switch {
		case r == '/' || r == '\\' || r < 0x20 || r == 0x7f || r == ':':
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	id := strings.ReplaceAll(b.String(), "..", "__")
	if len(id) > 256 {
		id = id[:256]
	}
	return strings.ToValidUTF8(id, "_")
}

// cleanHeader drops a value Hermes would reject (line breaks, NUL, longer than 256 bytes).
func cleanHeader(v string) string {
	if strings.ContainsAny(v, "\r\n\x00") || len(v) > 256 {
		return ""
	}
	return v
}

// origin names this agent's errors while doing op.
func origin(op string) httpagent.Origin { return httpagent.Origin{Provider: providerName, Op: op} }

func (a *Agent) fail(op string, kind voice.ErrorKind, status int, err error) *voice.ProviderError {
	return origin(op).Fail(kind, status, err)
}

// watch starts a request context cancelled after Timeout without bytes.
func (a *Agent) watch(parent context.Context) *httpagent.Watch {
	return httpagent.NewWatch(parent, a.timeout)
}

// do sends a JSON request (nil body: none) under w's context and returns a 2xx response;
// other statuses become classified errors carrying Hermes' message.
func (a *Agent) do(op string, w *httpagent.Watch, method, path string, h http.Header, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		buf, err := json.Marshal(body)
		if err != nil {
			return nil, a.fail(op, voice.KindBadInput, 0, fmt.Errorf("encode request: %w", err))
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, a.base+path, rd)
	if err != nil {
		return nil, a.fail(op, voice.KindBadInput, 0, httpagent.WithoutURL(err))
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return httpagent.Send(origin(op), a.client, w, req, func(_ int, b []byte) error { return errors.New(errorMessage(b)) })
}

// errorMessage extracts Hermes' error message from a body ({"error":{"message"}} or
// {"error":"..."}), or a short excerpt of the body.
func errorMessage(b []byte) string {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(b, &env) == nil && len(env.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
			Code    string `json:"code"`
		}
		if json.Unmarshal(env.Error, &obj) == nil && obj.Message != "" {
			if obj.Code != "" {
				return voice.Clip(obj.Message, voice.EchoLimit-70) + " [" + voice.Clip(obj.Code, 64) + "]"
			}
			return voice.Clip(obj.Message, voice.EchoLimit)
		}
		var s string
		if json.Unmarshal(env.Error, &s) == nil && s != "" {
			return voice.Clip(s, voice.EchoLimit)
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(b), ""))
	if s == "" {
		return "no error message"
	}
	return voice.Clip(s, voice.EchoLimit)
}

// Capabilities is what GET /v1/capabilities advertises, as far as Handset cares.
type Capabilities struct {
	Known         bool   // the server answered the capabilities route
	Platform      string // "hermes-agent"
	Model         string
	ChatStreaming bool
	Runs          bool // run submission and its event stream
	RunStop       bool
	ToolProgress  bool
	SessionHeader string // the session continuity header it reads
	SessionKey    string // the session key header it reads
}

// RunsUsable reports whether the runs transport can be used (submit, stream and stop).
func (c Capabilities) RunsUsable() bool { return c.Runs && c.RunStop }

// Probe asks GET {base}/capabilities. A server without the route (404) gives
// Capabilities{Known: false} and no error. When the Agent was made for the runs transport
// and the server cannot submit, stream and stop runs, later turns use the chat transport.
func (a *Agent) Probe(ctx context.Context) (Capabilities, error) {
	w := a.watch(ctx)
	defer w.Stop(httpagent.ErrClosed)
	h := http.Header{}
	h.Set("Authorization", "Bearer "+a.key)
	h.Set("Accept", "application/json")
	resp, err := a.do("capabilities", w, http.MethodGet, "/capabilities", h, nil)
	var pe *voice.ProviderError
	if errors.As(err, &pe) && (pe.Status == http.StatusNotFound || pe.Status == http.StatusMethodNotAllowed) {
		a.fallback(Capabilities{})
		return Capabilities{}, nil
	}
	if err != nil {
		return Capabilities{}, err
	}
	defer resp.Body.Close()
	var body struct {
		Platform string         `json:"platform"`
		Model    string         `json:"model"`
		Features map[string]any `json:"features"`
	}
	if err := json.NewDecoder(io.LimitReader(w.Reader(resp.Body), 1<<20)).Decode(&body); err != nil {
		return Capabilities{}, a.fail("capabilities", voice.KindProtocol, resp.StatusCode, fmt.Errorf("decode capabilities: %w", err))
	}
	flag := func(k string) bool { v, _ := body.Features[k].(bool); return v }
	str := func(k string) string { v, _ := body.Features[k].(string); return v }
	c := Capabilities{
		Known: true, Platform: body.Platform, Model: body.Model,
		ChatStreaming: flag("chat_completions_streaming"),
		Runs:          flag("run_submission") && flag("run_events_sse"),
		RunStop:       flag("run_stop"),
		ToolProgress:  flag("tool_progress_events"),
		SessionHeader: str("session_continuity_header"),
		SessionKey:    str("session_key_header"),
	}
	a.fallback(c)
	return c, nil
}

func (a *Agent) fallback(c Capabilities) {
	if a.wantRuns && !c.RunsUsable() {
		if !a.useChat.Swap(true) {
			a.log.Info("hermes: runs API not advertised; using chat completions", "known", c.Known)
		}
	}
}
