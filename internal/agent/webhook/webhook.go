// Package webhook owns Handset's "webhook" agent runtime (HANDSET_AGENT=webhook): each caller
// turn is POSTed as JSON to a URL the operator runs, and that URL's answer is spoken. It is
// the smallest way to put any program behind a phone number.
//
// # Request
//
// One POST per turn, Content-Type application/json, Accept listing the three answer types,
// and "Authorization: Bearer <Key>" when a key is set. The body (schema version 1; fields are
// only ever added, never renamed or removed):
//
//	{
//	  "call_id":     "c_123",        // the call's id, stable for the whole call
//	  "turn":        2,              // the caller turn, counted from 1
//	  "caller_hash": "k3J…",         // pseudonym of the caller's number ("" when unknown)
//	  "carrier":     "twilio",       // which carrier the call came through ("" when unknown)
//	  "direction":   "inbound",      // "inbound" or "outbound" ("" when unknown)
//	  "caller":      "unverified",   // only when caller_hash is "" for a reason: "withheld"
//	                                 // (no number) or "unverified" (the number's attestation
//	                                 // is below HANDSET_CALLER_MEMORY_ATTESTATION)
//	  "attestation": "B",            // STIR/SHAKEN check of the number, when the carrier made
//	                                 // one: A, B, C, none, failed
//	  "text":        "Book a table", // the caller's latest message
//	  "history": [                   // the conversation so far, oldest first, ending with
//	    {"role": "user", "content": "Hi."},          // the latest caller message;
//	    {"role": "assistant", "content": "Hello."},  // roles: system, user, assistant
//	    {"role": "user", "content": "Book a table"}
//	  ]
//	}
//
// Phone numbers are never sent: only the caller's hash (an HMAC of the number, the same for
// the same caller). History messages with empty content or another role are omitted.
//
// # Answer
//
// The answer is chosen by its Content-Type:
//
//   - text/plain (or no Content-Type): the body is the reply. A chunked body is spoken as it
//     arrives, so the first sentence can be said while the rest is still being written.
//   - application/json: {"text": "..."} or {"reply": "..."} ("text" wins when both are
//     present). {"hangup": true} is reserved for ending the call after the reply: it is
//     parsed and logged but not acted on yet. Unknown fields are ignored.
//   - text/event-stream (server-sent events): each event's data is a piece of the reply; data
//     that is a JSON object is read as {"text": "..."} (or "reply"). "data: [DONE]" or the end
//     of the stream ends the reply; an event named "error" fails the turn.
//
// A status other than 2xx fails the turn with a *voice.ProviderError carrying the status
// and the first bytes of the body (for logs; it is never spoken), and any Retry-After. Other content types, bad
// JSON and pieces over 1 MiB are protocol errors. Only silence is timed: Options.Timeout
// bounds the wait for the response headers and every gap between bytes, never the whole
// turn. Cancelling the turn's context, or closing the stream, aborts the HTTP request.
//
// Server-sent events are parsed as the HTML standard's "Server-sent events" section
// (9.2.6, "Interpreting an event stream") describes.
package webhook

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
	"time"

	"github.com/handset-voice/handset/internal/agent/httpagent"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// Name is the provider name, in errors, logs and HANDSET_AGENT.
const Name = "webhook"

// DefaultTimeout is the default Options.Timeout.
const DefaultTimeout = 60 * time.Second

// Options configure an Agent. URL is required.
type Options struct {
	// URL receives one POST per caller turn: http(s)://host[/path][?query].
	URL string
	// Key is sent as "Authorization: Bearer <Key>" when non-empty.
	Key string
	// Timeout is the longest the webhook may stay silent: waiting for response headers,
	// and between bytes of the answer. There is no limit on a whole turn. Default
	// DefaultTimeout.
	Timeout time.Duration
	// Headers are extra headers sent with every request.
	Headers map[string]string
	// HTTPClient sends the requests. Default: a client with no overall timeout.
	HTTPClient *http.Client
	// Logger receives debug records about turns. Nil discards them.
	Logger *slog.Logger
}

// Agent is a voice.Agent that POSTs each turn to a webhook. Safe for concurrent use.
type Agent struct {
	url     string
	key     string
	timeout time.Duration
	headers http.Header
	client  *http.Client
	log     *slog.Logger
}

var _ voice.Agent = (*Agent)(nil)

// Payload is the JSON body POSTed for each turn (see the package documentation).
type Payload struct {
	CallID     string `json:"call_id"`
	Turn       int    `json:"turn"`
	CallerHash string `json:"caller_hash"`
	Carrier    string `json:"carrier"`
	Direction  string `json:"direction"`
	// Caller and Attestation say how far the caller's number identifies them (omitted for
	// an ordinary caller on a carrier that makes no check).
	Caller      string    `json:"caller,omitempty"`
	Attestation string    `json:"attestation,omitempty"`
	Text        string    `json:"text"`
	History     []Message `json:"history"`
}

// Message is one entry of Payload.History.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// New checks opts and returns an Agent.
func New(opts Options) (*Agent, error) {
	if strings.TrimSpace(opts.URL) == "" {
		return nil, errors.New("webhook agent: URL is required")
	}
	if !httpagent.ValidURL(opts.URL) {
		return nil, fmt.Errorf("webhook agent: URL %q: want http(s)://host[/path]", httpagent.RedactURL(opts.URL))
	}
	if err := httpagent.CheckKey(opts.Key); err != nil {
		return nil, fmt.Errorf("webhook agent: %w", err)
	}
	headers, err := httpagent.Headers(opts.Headers)
	if err != nil {
		return nil, fmt.Errorf("webhook agent: %w", err)
	}
	a := &Agent{url: opts.URL, key: opts.Key, timeout: opts.Timeout, headers: headers,
		client: opts.HTTPClient, log: opts.Logger}
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

// Name returns "webhook".
func (a *Agent) Name() string { return Name }

// origin names the webhook's errors.
var origin = httpagent.Origin{Provider: Name, Op: "turn"}

// Reply POSTs the turn and returns once the response headers arrive. Errors are
// *voice.ProviderError. Cancelling ctx, or closing the stream, aborts the request.
func (a *Agent) Reply(ctx context.Context, req voice.TurnRequest) (voice.ReplyStream, error) {
	body, err := a.payload(ctx, req)
	if err != nil {
		return nil, origin.Fail(voice.KindBadInput, 0, err)
	}
	httpReq, err := http.NewRequest(http.MethodPost, a.url, bytes.NewReader(body))
	if err != nil {
		return nil, origin.Fail(voice.KindBadInput, 0, fmt.Errorf("build request: %w", httpagent.WithoutURL(err)))
	}
	a.setHeaders(httpReq.Header)
	w := httpagent.NewWatch(ctx, a.timeout)
	a.log.Debug("agent request", "provider", Name, "call", req.CallID, "turn", req.Turn,
		"messages", len(req.History))

	resp, err := httpagent.Send(origin, a.client, w, httpReq, func(_ int, b []byte) error { return bodyError(b) })
	if err != nil {
		w.Stop(httpagent.ErrClosed)
		return nil, err
	}
	s := &stream{Reply: httpagent.NewReply(w, resp.Body), agent: a}
	dec, err := newDecoder(resp.Header.Get("Content-Type"), s.Body())
	if err != nil {
		s.End()
		return nil, origin.Fail(voice.KindProtocol, 0, err)
	}
	s.dec = dec
	return s, nil
}

// payload encodes the turn's JSON body, with who the call is with from ctx's session.
func (a *Agent) payload(ctx context.Context, req voice.TurnRequest) ([]byte, error) {
	sc, _ := session.From(ctx)
	p := Payload{
		CallID: string(req.CallID), Turn: req.Turn, CallerHash: req.CallerHash,
		Carrier: sc.Carrier, Direction: string(sc.Direction), History: make([]Message, 0, len(req.History)),
		Caller: string(sc.Caller), Attestation: string(sc.Attestation),
	}
	if p.CallID == "" {
		p.CallID = string(sc.CallID)
	}
	if p.CallerHash == "" {
		p.CallerHash = sc.CallerHash
	}
	for _, m := range req.History {
		if strings.TrimSpace(m.Content) == "" ||
			(m.Role != voice.RoleSystem && m.Role != voice.RoleUser && m.Role != voice.RoleAssistant) {
			continue
		}
		p.History = append(p.History, Message{Role: string(m.Role), Content: m.Content})
		if m.Role == voice.RoleUser {
			p.Text = m.Content
		}
	}
	if len(p.History) == 0 {
		return nil, errors.New("empty history: nothing to reply to")
	}
	buf, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	return buf, nil
}

func (a *Agent) setHeaders(h http.Header) {
	for k, v := range a.headers {
		h[k] = slices.Clone(v)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream, text/plain, application/json")
	if a.key != "" {
		h.Set("Authorization", "Bearer "+a.key)
	}
}

// maxSnippet is how much of an error body is kept.
const maxSnippet = 200

// bodyError summarises an error response's body: its first bytes, printable, one line.
func bodyError(body []byte) error {
	cut := len(body) > maxSnippet
	if cut {
		body = body[:maxSnippet]
	}
	s := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '\uFFFD' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(body), "\uFFFD"))
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return errors.New("empty body")
	}
	if cut {
		s += "…"
	}
	return fmt.Errorf("body: %s", s)
}
