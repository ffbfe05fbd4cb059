package fakevapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The values of Options.MetadataSendMode (model.metadataSendMode).
const (
	// MetadataVariable sends assistant.metadata as the body's "metadata", and the call,
	// phoneNumber and customer objects. Vapi's default.
	MetadataVariable = "variable"
	// MetadataDestructured sends assistant.metadata's fields at the body's top level, and
	// the call, phoneNumber and customer objects.
	MetadataDestructured = "destructured"
	// MetadataOff sends the chat fields alone: no metadata, no call.
	MetadataOff = "off"
)

// Defaults for Options, as Vapi documents them for a custom LLM model.
const (
	DefaultModel     = "custom-llm"
	DefaultMaxTokens = 250
	DefaultTimeout   = 20 * time.Second
)

// Call types (call.type).
const (
	TypeInbound  = "inboundPhoneCall"
	TypeOutbound = "outboundPhoneCall"
	TypeWeb      = "webCall"
)

// Options are an assistant whose model is a custom LLM, and the call it is on.
type Options struct {
	// URL is the model's url, which Vapi gives its OpenAI client as the base URL: every
	// turn is POST URL + "/chat/completions". Required.
	URL string
	// APIKey is the custom-llm credential's key, sent as "Authorization: Bearer <APIKey>".
	// Empty: no Authorization header, as for a server without a credential.
	APIKey string
	// Headers are the model's headers, sent with every request. They cannot replace
	// Authorization, which only the credential sets, or Content-Type.
	Headers map[string]string
	// Model is the model's name, sent as "model". Default DefaultModel.
	Model string
	// SystemPrompt, when set, is the system message of the model's messages: first in every
	// request.
	SystemPrompt string
	// FirstMessage, when set, is the assistant's first message: Vapi speaks it itself as the
	// call starts, and it is in the conversation from then on.
	FirstMessage string
	// Temperature is sent as "temperature"; nil sends Vapi's default, 0.
	Temperature *float64
	// MaxTokens is sent as "max_tokens"; 0 sends Vapi's default, DefaultMaxTokens.
	MaxTokens int
	// MetadataSendMode is MetadataVariable (the default), MetadataDestructured or MetadataOff.
	MetadataSendMode string
	// Metadata is assistant.metadata.
	Metadata map[string]any
	// Call is the call object. An empty ID or OrgID gets a random UUID; an empty Type is
	// an inbound phone call when there is a customer and a web call otherwise; an empty
	// Status is "in-progress", and empty times are when New ran.
	Call CallInfo
	// PhoneNumber, when set, is the phone number object: the line the call is on.
	PhoneNumber *PhoneNumber
	// Timeout is the model's timeoutSeconds: how long a turn may wait for its first token
	// before Vapi gives up on it. Default DefaultTimeout.
	Timeout time.Duration
	// HTTPClient sends the requests. Default: http.DefaultClient.
	HTTPClient *http.Client
}

// CallInfo is Vapi's call object, as much of it as a custom LLM is sent here.
type CallInfo struct {
	ID                 string         `json:"id"`
	OrgID              string         `json:"orgId"`
	Type               string         `json:"type,omitempty"`
	Status             string         `json:"status,omitempty"`
	AssistantID        string         `json:"assistantId,omitempty"`
	PhoneNumberID      string         `json:"phoneNumberId,omitempty"`
	PhoneCallProvider  string         `json:"phoneCallProvider,omitempty"`
	PhoneCallTransport string         `json:"phoneCallTransport,omitempty"`
	CreatedAt          string         `json:"createdAt,omitempty"`
	UpdatedAt          string         `json:"updatedAt,omitempty"`
	StartedAt          string         `json:"startedAt,omitempty"`
	Customer           *Customer      `json:"customer,omitempty"`
	Metadata           map[string]any `json:"metadata,omitempty"`
}

// Customer is the person on the call: the caller of an inbound call, the callee of an
// outbound one. A web call has none.
type Customer struct {
	Number    string `json:"number,omitempty"`
	Name      string `json:"name,omitempty"`
	Extension string `json:"extension,omitempty"`
}

// PhoneNumber is the Vapi phone number a call is on.
type PhoneNumber struct {
	ID       string `json:"id,omitempty"`
	OrgID    string `json:"orgId,omitempty"`
	Number   string `json:"number,omitempty"`
	Provider string `json:"provider,omitempty"`
	Name     string `json:"name,omitempty"`
}

// Message is one message of the conversation, as the requests carry it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one request the call sent.
type Request struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
}

// Decode unmarshals the request's body into v.
func (r Request) Decode(v any) error { return json.Unmarshal(r.Body, v) }

// Reply is how a turn's reply came back.
type Reply struct {
	// Text is what the caller heard: the whole reply, or its first characters when they
	// barged in.
	Text string
	// Deltas are the content pieces as the stream brought them, up to the barge-in.
	Deltas []string
	// FinishReason is the last finish_reason the stream gave ("" when none came).
	FinishReason string
	// Done: the stream ended with "data: [DONE]".
	Done bool
	// Interrupted: the caller barged in and the request was aborted; AbortedAt is when.
	Interrupted bool
	AbortedAt   time.Time
	// Status is the response's HTTP status.
	Status int
}

// Error is a turn the custom LLM refused or failed: an error status, or an error object in
// the stream (Status 200 then).
type Error struct {
	Status  int
	Type    string
	Code    string
	Message string
	Body    string // the response body (an error status) or event (in the stream), clipped
}

func (e *Error) Error() string {
	return fmt.Sprintf("custom llm: HTTP %d, %s %s: %s", e.Status, e.Type, e.Code, e.Message)
}

// ErrTimeout is a turn that brought no token within Options.Timeout.
var ErrTimeout = errors.New("custom llm: no token within the model's timeout")

// Call is a Vapi call whose assistant's model is a custom LLM: each turn sends the
// conversation so far, ending with the caller's new words, and streams the reply. Its turns
// run one at a time; its accessors are safe from any goroutine.
type Call struct {
	opts   Options
	client *http.Client

	mu       sync.Mutex // guards the following
	messages []Message  // the conversation, without the system prompt
	sent     []Request
}

// New starts a call.
func New(opts Options) *Call {
	if opts.Model == "" {
		opts.Model = DefaultModel
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = DefaultMaxTokens
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MetadataSendMode == "" {
		opts.MetadataSendMode = MetadataVariable
	}
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	c := opts.Call
	c.ID = cmpOr(c.ID, randomUUID())
	c.OrgID = cmpOr(c.OrgID, randomUUID())
	if c.Type == "" {
		c.Type = TypeWeb
		if c.Customer != nil {
			c.Type = TypeInbound
		}
	}
	c.Status = cmpOr(c.Status, "in-progress")
	c.CreatedAt, c.UpdatedAt, c.StartedAt = cmpOr(c.CreatedAt, now), cmpOr(c.UpdatedAt, now), cmpOr(c.StartedAt, now)
	if c.PhoneNumberID == "" && opts.PhoneNumber != nil {
		c.PhoneNumberID = opts.PhoneNumber.ID
	}
	opts.Call = c
	call := &Call{opts: opts, client: opts.HTTPClient}
	if call.client == nil {
		call.client = http.DefaultClient
	}
	if opts.FirstMessage != "" {
		call.messages = append(call.messages, Message{Role: "assistant", Content: opts.FirstMessage})
	}
	return call
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ID is the call's id (call.id).
func (c *Call) ID() string { return c.opts.Call.ID }

// Info is the call object the requests carry.
func (c *Call) Info() CallInfo { return c.opts.Call }

// Messages is the conversation so far, oldest first, without the system prompt.
func (c *Call) Messages() []Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.messages)
}

// Requests are the requests sent so far, in order.
func (c *Call) Requests() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Request, len(c.sent))
	for i, r := range c.sent {
		r.Header = r.Header.Clone()
		r.Body = slices.Clone(r.Body)
		out[i] = r
	}
	return out
}

// Say takes a turn: the caller says words, and the reply streams to its end. The reply's
// text joins the conversation; a failed turn leaves the caller's words in it and no reply.
func (c *Call) Say(ctx context.Context, words string) (Reply, error) {
	return c.turn(ctx, words, -1)
}

// BargeIn takes a turn in which the caller talks over the reply once its first after
// characters have come: the request is aborted, as Vapi aborts it when its user
// interrupts, and those characters, what the caller heard, join the conversation as the
// assistant's message. A reply shorter than that ends as Say's does.
func (c *Call) BargeIn(ctx context.Context, words string, after int) (Reply, error) {
	return c.turn(ctx, words, max(after, 0))
}

// turn sends one request and reads its reply; after < 0 reads it to its end.
func (c *Call) turn(parent context.Context, words string, after int) (Reply, error) {
	if c.opts.URL == "" {
		return Reply{}, errors.New("fakevapi: no URL")
	}
	c.mu.Lock()
	c.messages = append(c.messages, Message{Role: "user", Content: words})
	body, err := json.Marshal(c.body())
	c.mu.Unlock()
	if err != nil {
		return Reply{}, err
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.opts.URL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return Reply{}, err
	}
	for k, v := range c.opts.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Del("Authorization")
	req.Header.Set("Content-Type", "application/json")
	if c.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	c.mu.Lock()
	c.sent = append(c.sent, Request{Method: req.Method, URL: req.URL.String(), Header: req.Header.Clone(), Body: body})
	c.mu.Unlock()

	// the model's timeout: the first token must come within it
	timer := time.AfterFunc(c.opts.Timeout, func() { cancel(ErrTimeout) })
	defer timer.Stop()
	resp, err := c.client.Do(req)
	if err != nil {
		return Reply{}, timedOut(ctx, err)
	}
	defer resp.Body.Close()
	reply := Reply{Status: resp.StatusCode}
	if resp.StatusCode != http.StatusOK {
		return reply, statusError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return reply, fmt.Errorf("custom llm: a streamed request answered %q, not an event stream: %s", mt, b)
	}
	var text strings.Builder
	err = readEvents(resp.Body, func(data []byte) (bool, error) {
		if string(data) == "[DONE]" {
			reply.Done = true
			return false, nil
		}
		var ch chunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return false, fmt.Errorf("custom llm: an event that is not a chunk: %q: %w", clip(data), err)
		}
		if ch.Error != nil {
			return false, &Error{Status: resp.StatusCode, Type: ch.Error.Type, Code: ch.Error.code(), Message: ch.Error.Message, Body: clip(data)}
		}
		for _, choice := range ch.Choices {
			if choice.FinishReason != nil {
				reply.FinishReason = *choice.FinishReason
			}
			if choice.Delta.Content == "" {
				continue
			}
			timer.Stop()
			reply.Deltas = append(reply.Deltas, choice.Delta.Content)
			text.WriteString(choice.Delta.Content)
			if after >= 0 && utf8.RuneCountInString(text.String()) >= after {
				// the caller talks over the reply: Vapi lets go of the request
				reply.AbortedAt = time.Now()
				reply.Interrupted = true
				cancel(context.Canceled)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return reply, timedOut(ctx, err)
	}
	reply.Text = text.String()
	if reply.Interrupted {
		reply.Text = strings.TrimSpace(firstRunes(reply.Text, after))
	}
	if reply.Text != "" {
		c.mu.Lock()
		c.messages = append(c.messages, Message{Role: "assistant", Content: reply.Text})
		c.mu.Unlock()
	}
	return reply, nil
}

// body is a turn's request body for the conversation so far. c.mu is held.
func (c *Call) body() map[string]any {
	msgs := make([]Message, 0, len(c.messages)+1)
	if c.opts.SystemPrompt != "" {
		msgs = append(msgs, Message{Role: "system", Content: c.opts.SystemPrompt})
	}
	msgs = append(msgs, c.messages...)
	temperature := 0.0
	if c.opts.Temperature != nil {
		temperature = *c.opts.Temperature
	}
	b := map[string]any{"model": c.opts.Model, "messages": msgs, "temperature": temperature,
		"max_tokens": c.opts.MaxTokens, "stream": true}
	switch c.opts.MetadataSendMode {
	case MetadataOff:
		return b
	case MetadataDestructured:
		for k, v := range c.opts.Metadata {
			if _, taken := b[k]; !taken {
				b[k] = v
			}
		}
	default:
		b["metadata"] = maps.Clone(c.opts.Metadata)
		if c.opts.Metadata == nil {
			b["metadata"] = map[string]any{}
		}
	}
	b["call"] = c.opts.Call
	if c.opts.PhoneNumber != nil {
		b["phoneNumber"] = c.opts.PhoneNumber
	}
	if c.opts.Call.Customer != nil {
		b["customer"] = c.opts.Call.Customer
	}
	return b
}

// chunk is what the call reads of a chat.completion.chunk, or of an error event.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Error *apiError `json:"error"`
}

// apiError is OpenAI's error object; its code may be a string, a number or null.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

func (e *apiError) code() string {
	var s string
	if json.Unmarshal(e.Code, &s) == nil {
		return s
	}
	if string(e.Code) == "null" {
		return ""
	}
	return string(e.Code)
}

// statusError reads an error status's body.
func statusError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &Error{Status: resp.StatusCode, Body: clip(b)}
	var env struct {
		Error *apiError `json:"error"`
	}
	if json.Unmarshal(b, &env) == nil && env.Error != nil {
		e.Type, e.Code, e.Message = env.Error.Type, env.Error.code(), env.Error.Message
	} else {
		e.Message = strings.TrimSpace(string(b))
	}
	return e
}

// timedOut turns an error the model's timeout caused into ErrTimeout.
func timedOut(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), ErrTimeout) {
		return ErrTimeout
	}
	return err
}

// readEvents reads server-sent events from r and hands each event's data to fn until fn
// says stop, fn fails, or the stream ends. Comments, event names and ids are skipped;
// the data lines of one event are joined by newlines.
func readEvents(r io.Reader, fn func(data []byte) (bool, error)) error {
	br := bufio.NewReader(r)
	var data []byte
	have := false
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			line = bytes.TrimRight(line, "\r\n")
			switch {
			case len(line) == 0:
				if have {
					more, ferr := fn(data)
					if ferr != nil || !more {
						return ferr
					}
				}
				data, have = data[:0], false
			case line[0] == ':':
			default:
				field, value, _ := bytes.Cut(line, []byte(":"))
				if string(field) == "data" {
					value = bytes.TrimPrefix(value, []byte(" "))
					if have {
						data = append(data, '\n')
					}
					data, have = append(data, value...), true
				}
			}
		}
		if errors.Is(err, io.EOF) {
			if have {
				_, ferr := fn(data)
				return ferr
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// firstRunes is s's first n characters.
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

func clip(b []byte) string {
	const most = 512
	if len(b) > most {
		return strings.ToValidUTF8(string(b[:most]), "") + "…"
	}
	return string(b)
}

// randomUUID is a random (version 4) UUID, as Vapi's ids are written.
func randomUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
