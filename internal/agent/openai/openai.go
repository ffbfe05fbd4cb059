// Package openai owns Handset's client for any OpenAI-compatible streaming chat-completions
// endpoint: OpenAI itself, Ollama, vLLM, and the compatible endpoints of Hermes Agent and
// OpenClaw. Each caller turn is one POST {base}/chat/completions with "stream": true; the
// reply is read as server-sent events of chat.completion.chunk objects, ending with
// "data: [DONE]".
//
// Wire format: https://platform.openai.com/docs/api-reference/chat/streaming (chunks) and
// https://platform.openai.com/docs/api-reference/chat/create (request, errors). The event
// stream is read by httpagent/sse, as
// https://html.spec.whatwg.org/multipage/server-sent-events.html describes.
//
// Errors are *voice.ProviderError: an HTTP error status is classified by voice.KindFromStatus
// and carries the vendor's error.message and any Retry-After; an error object inside the
// stream is classified by its type or code; a stream that stops without "[DONE]" or a
// finish_reason is transient. Hermes Agent's named "hermes.tool.progress" events become
// ReplyChunk.Progress labels; other named events are ignored. A runtime that ignores
// "stream": true and answers one application/json chat.completion is read as a single chunk.
//
// Usage: each streamed request asks for "stream_options": {"include_usage": true}, and the
// usage object a runtime sends (in the last chunk, or a running count on every chunk, or in
// a whole chat.completion) becomes ReplyChunk.Usage. A runtime that refuses the field with a
// 400 or 422 naming it gets the turn again without it, and so does every later turn.
//
// Conversation rules: only text messages of role system, user or assistant are forwarded
// (empty ones and any other role, such as tool results or images, are omitted and logged once
// per turn), and Options.SystemAsUser folds the system prompt into the latest user message for
// runtimes that ignore system messages.
//
// Only silence is timed: waiting for response headers and the gap between stream bytes are
// bounded by Options.Timeout, never the whole turn, because an agent turn that runs tools
// can take minutes while sending keepalives.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/agent/httpagent"
	"github.com/handset-voice/handset/internal/agent/httpagent/sse"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// Defaults for Options.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	DefaultTimeout = 60 * time.Second
	DefaultName    = "openai"
)

// Options configure an Agent. Model is required.
type Options struct {
	// BaseURL is the API root; "/chat/completions" is appended. Default DefaultBaseURL.
	BaseURL string
	// Key is sent as "Authorization: Bearer <Key>" when non-empty (Ollama needs none).
	Key string
	// Model names the model or agent ("gpt-4o-mini", "hermes-agent", "openclaw/main", …).
	Model string
	// SystemPrompt, when non-empty, is sent as a system message before the history.
	SystemPrompt string
	// SystemAsUser is for runtimes that ignore system messages: SystemPrompt is then
	// prepended to the latest user message instead (the prompt, a blank line, then the
	// caller's text), or sent as a first user message when the history has none.
	SystemAsUser bool
	// KeepsConversation is for runtimes that keep the conversation in a session of their
	// own (OpenClaw's HTTP endpoint with a session key): each turn sends the system prompt
	// and one user message, TurnRequest.Catchup (the caller's latest words, after a note of
	// what the runtime missed on the line), never the history it already holds.
	KeepsConversation bool
	// Timeout is the longest the runtime may stay silent: waiting for response headers,
	// and between bytes of the stream. There is no limit on a whole turn. Default
	// DefaultTimeout.
	Timeout time.Duration
	// Headers are extra headers sent with every request.
	Headers map[string]string
	// HeadersFor returns per-turn headers (session ids, memory keys); they win over
	// Headers. May be nil.
	HeadersFor func(context.Context, voice.TurnRequest) map[string]string
	// HTTPClient sends the requests. Default: a client with no overall timeout (an
	// http.Client Timeout would cap whole turns, which Timeout deliberately does not).
	HTTPClient *http.Client
	// Logger receives debug records about turns. Nil discards them.
	Logger *slog.Logger
	// Name is the provider name in errors and logs. Default DefaultName.
	Name string
}

// Agent is a voice.Agent backed by an OpenAI-compatible chat-completions endpoint.
// It is safe for concurrent use; each Reply is an independent HTTP request.
type Agent struct {
	url               string
	key               string
	model             string
	system            string
	sysAsUser         bool
	keepsConversation bool
	timeout           time.Duration
	headers           http.Header
	headersFor        func(context.Context, voice.TurnRequest) map[string]string
	client            *http.Client
	log               *slog.Logger
	name              string
	// noUsage is set once the runtime refused stream_options: later turns leave it out.
	noUsage atomic.Bool
}

var _ voice.Agent = (*Agent)(nil)

// New checks opts and returns an Agent.
func New(opts Options) (*Agent, error) {
	if strings.TrimSpace(opts.Model) == "" {
		return nil, errors.New("openai agent: model is required")
	}
	base := opts.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if !httpagent.ValidURL(base) {
		return nil, fmt.Errorf("openai agent: base URL %q: want http(s)://host[/path]", httpagent.RedactURL(base))
	}
	headers, err := httpagent.Headers(opts.Headers)
	if err != nil {
		return nil, fmt.Errorf("openai agent: %w", err)
	}
	if err := httpagent.CheckKey(opts.Key); err != nil {
		return nil, fmt.Errorf("openai agent: %w", err)
	}
	a := &Agent{
		url:               strings.TrimRight(base, "/") + "/chat/completions",
		key:               opts.Key,
		model:             opts.Model,
		system:            opts.SystemPrompt,
		sysAsUser:         opts.SystemAsUser,
		keepsConversation: opts.KeepsConversation,
		timeout:           opts.Timeout,
		headers:           headers,
		headersFor:        opts.HeadersFor,
		client:            opts.HTTPClient,
		log:               opts.Logger,
		name:              opts.Name,
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
	if a.name == "" {
		a.name = DefaultName
	}
	return a, nil
}

// Name returns the provider name given in Options (default "openai").
func (a *Agent) Name() string { return a.name }

// Reply sends the turn and returns once the response headers arrive. Errors are
// *voice.ProviderError. Cancelling ctx, or closing the stream, aborts the HTTP request,
// which is how an OpenAI-compatible runtime learns to stop the run.
func (a *Agent) Reply(ctx context.Context, req voice.TurnRequest) (voice.ReplyStream, error) {
	s, retry, err := a.send(ctx, req)
	if retry {
		// The runtime refused stream_options (a server stricter than OpenAI's about fields
		// it does not know): this turn and every later one go without, so without usage.
		a.log.Info("agent runtime refused stream_options: token usage will not be reported", "provider", a.name, "err", err)
		s, _, err = a.send(ctx, req)
	}
	return s, err
}

// send makes one attempt at a turn. retry is true when the runtime refused the
// stream_options field, which the next attempt leaves out.
func (a *Agent) send(ctx context.Context, req voice.TurnRequest) (_ voice.ReplyStream, retry bool, _ error) {
	withUsage := !a.noUsage.Load()
	httpReq, err := a.newRequest(ctx, req, withUsage)
	if err != nil {
		return nil, false, a.fail(voice.KindBadInput, 0, err)
	}
	w := httpagent.NewWatch(ctx, a.timeout)
	a.log.Debug("agent request", "provider", a.name, "call", req.CallID, "turn", req.Turn,
		"model", a.model, "messages", len(req.History))

	resp, err := httpagent.Send(a.origin(), a.client, w, httpReq, func(status int, body []byte) error {
		retry = withUsage && refusedStreamOptions(status, body)
		return errorFromBody(body)
	})
	if err != nil {
		w.Stop(httpagent.ErrClosed)
		if retry {
			a.noUsage.Store(true)
		}
		return nil, retry, err
	}
	s := &stream{Reply: httpagent.NewReply(w, resp.Body), agent: a}
	if httpagent.MediaType(resp.Header.Get("Content-Type")) == "application/json" {
		s.whole = true
	} else {
		s.sse = sse.NewReader(s.Body())
	}
	return s, false, nil
}

// refusedStreamOptions reports whether a 400 or 422 answer blames the stream_options field.
func refusedStreamOptions(status int, body []byte) bool {
	return (status == http.StatusBadRequest || status == http.StatusUnprocessableEntity) &&
		bytes.Contains(body, []byte("stream_options"))
}

// newRequest builds the POST for one turn (its context is set by the caller); withUsage
// asks for the usage chunk at the stream's end.
func (a *Agent) newRequest(ctx context.Context, req voice.TurnRequest, withUsage bool) (*http.Request, error) {
	if len(req.History) == 0 {
		return nil, errors.New("empty history: nothing to reply to")
	}
	body := chatRequest{Model: a.model, Stream: true, Messages: a.messages(session.Instructions(ctx, a.system), req)}
	if withUsage {
		body.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	if len(body.Messages) == 0 {
		return nil, errors.New("empty history: every message was omitted")
	}
	buf, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	httpReq, err := http.NewRequest(http.MethodPost, a.url, bytes.NewReader(buf))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	h := httpReq.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	if a.key != "" {
		h.Set("Authorization", "Bearer "+a.key)
	}
	for k, v := range a.headers {
		h[k] = slices.Clone(v)
	}
	if a.headersFor != nil {
		for k, v := range a.headersFor(ctx, req) {
			if err := httpagent.CheckHeader(k, v); err != nil {
				return nil, fmt.Errorf("per-turn header: %w", err)
			}
			h.Set(k, v)
		}
	}
	return httpReq, nil
}

// origin names this agent's errors for a chat request.
func (a *Agent) origin() httpagent.Origin { return httpagent.Origin{Provider: a.name, Op: "chat"} }

// fail builds this agent's ProviderError for a chat request.
func (a *Agent) fail(kind voice.ErrorKind, status int, err error) *voice.ProviderError {
	return a.origin().Fail(kind, status, err)
}
