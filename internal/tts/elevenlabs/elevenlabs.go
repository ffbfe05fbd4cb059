// Package elevenlabs is Handset's ElevenLabs text-to-speech provider. It owns one HTTP
// streaming request per utterance: choosing the output_format so telephone audio needs no
// transcoding (ulaw_8000), classifying the vendor's errors, retrying a transient failure
// once before any audio, and stopping the request when the caller cancels or stops reading.
//
// Wire protocol: POST /v1/text-to-speech/{voice_id}/stream, as documented at
// https://elevenlabs.io/docs/api-reference/text-to-speech/stream.
package elevenlabs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/voice"
)

// Defaults for Options.
const (
	DefaultBaseURL = "https://api.elevenlabs.io"
	// DefaultVoice is the stock voice "Rachel".
	DefaultVoice = "21m00Tcm4TlvDq8ikWAM"
	// DefaultModel is the lowest-latency model.
	DefaultModel = "eleven_flash_v2_5"
	// DefaultHeaderTimeout bounds the wait for the response headers (time to first byte).
	DefaultHeaderTimeout = 15 * time.Second
)

// name is the provider name in errors and logs.
const name = "elevenlabs"

// Options configure a Synthesizer. Only Key is needed against the real service.
type Options struct {
	Key     string // sent as xi-api-key
	BaseURL string // default DefaultBaseURL
	Voice   string // voice id; default DefaultVoice
	Model   string // model id; default DefaultModel
	// HeaderTimeout bounds the wait for the response headers of each attempt; the audio
	// itself may then stream for as long as it lasts. Default DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	// HTTPClient sends the requests (default a client on http.DefaultTransport). Its own
	// Timeout, if any, also cuts long streams short, so leave it zero.
	HTTPClient *http.Client
	Logger     *slog.Logger // nil discards
}

// Synthesizer speaks text through ElevenLabs. Safe for concurrent use.
type Synthesizer struct {
	key, base, voice, model string
	headerTimeout           time.Duration
	client                  *http.Client
	log                     *slog.Logger
}

var _ voice.Synthesizer = (*Synthesizer)(nil)

// New returns a Synthesizer for o, filling in the defaults.
func New(o Options) *Synthesizer {
	s := &Synthesizer{
		key:           o.Key,
		base:          strings.TrimRight(cmp.Or(o.BaseURL, DefaultBaseURL), "/"),
		voice:         cmp.Or(o.Voice, DefaultVoice),
		model:         cmp.Or(o.Model, DefaultModel),
		headerTimeout: o.HeaderTimeout,
		client:        o.HTTPClient,
		log:           o.Logger,
	}
	if s.headerTimeout <= 0 {
		s.headerTimeout = DefaultHeaderTimeout
	}
	if s.client == nil {
		s.client = &http.Client{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Name implements voice.Synthesizer.
func (s *Synthesizer) Name() string { return name }

// OutputFormat returns the ElevenLabs output_format that delivers audio in f, or a
// KindBadInput *voice.ProviderError when ElevenLabs has none.
func OutputFormat(f audio.Format) (string, error) {
	switch {
	case f.Encoding == audio.Mulaw && f.Rate == 8000:
		return "ulaw_8000", nil
	case f.Encoding == audio.Alaw && f.Rate == 8000:
		return "alaw_8000", nil
	case f.Encoding == audio.PCM16:
		switch f.Rate {
		case 8000, 16000, 22050, 24000, 32000, 44100, 48000:
			return fmt.Sprintf("pcm_%d", f.Rate), nil
		}
	}
	return "", &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindBadInput,
		Err: fmt.Errorf("no output format for %s (ElevenLabs streams mulaw/8000, alaw/8000 and pcm16 at 8000, 16000, 22050, 24000, 32000, 44100 or 48000 Hz)", f)}
}

// request is the JSON body of a synthesis request.
type request struct {
	Text    string `json:"text"`
	ModelID string `json:"model_id"`
}

// Synthesize implements voice.Synthesizer: it returns the audio body as soon as the
// response headers arrive. A transient failure (5xx or a connection error) before any
// audio is retried once.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, f audio.Format) (io.ReadCloser, error) {
	format, err := OutputFormat(f)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(text) == "" {
		return nil, &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindBadInput,
			Err: errors.New("empty text")}
	}
	body, err := json.Marshal(request{Text: text, ModelID: s.model})
	if err != nil {
		return nil, &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindBadInput, Err: err}
	}
	u := s.base + "/v1/text-to-speech/" + url.PathEscape(s.voice) + "/stream?" +
		url.Values{"output_format": {format}}.Encode()

	rc, err := s.attempt(ctx, u, body)
	if err != nil && voice.KindOf(err) == voice.KindTransient && ctx.Err() == nil {
		s.log.Warn("elevenlabs: retrying synthesis once", "err", err, "format", format)
		rc, err = s.attempt(ctx, u, body)
	}
	return rc, err
}

// errHeaderTimeout is the cause of an attempt cancelled for want of response headers.
var errHeaderTimeout = errors.New("no response headers in time")

// attempt sends one request and returns its audio stream or a classified error.
func (s *Synthesizer) attempt(ctx context.Context, u string, body []byte) (io.ReadCloser, error) {
	fail := func(kind voice.ErrorKind, status int, err error) error {
		return &voice.ProviderError{Provider: name, Op: "synthesize", Kind: kind, Status: status, Err: err}
	}
	actx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(actx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		cancel(nil)
		return nil, fail(voice.KindBadInput, 0, fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("xi-api-key", s.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "audio/*, application/json")

	timer := time.AfterFunc(s.headerTimeout, func() { cancel(errHeaderTimeout) })
	resp, err := s.client.Do(req)
	if !timer.Stop() {
		// The timeout fired, perhaps just as the headers came in: either way it is late.
		if err == nil {
			resp.Body.Close()
		}
		cancel(errHeaderTimeout)
		return nil, fail(voice.KindTimeout, 0, fmt.Errorf("%w (%v)", errHeaderTimeout, s.headerTimeout))
	}
	if err != nil {
		cancel(nil)
		if ctx.Err() != nil {
			return nil, fail(voice.KindOf(ctx.Err()), 0, ctx.Err())
		}
		return nil, fail(voice.KindTransient, 0, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := errorMessage(resp)
		resp.Body.Close()
		cancel(nil)
		return nil, fail(voice.KindFromStatus(resp.StatusCode), resp.StatusCode, errors.New(msg))
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		resp.Body.Close()
		cancel(nil)
		return nil, fail(voice.KindProtocol, resp.StatusCode, errors.New("answered JSON where audio was expected"))
	}
	return &stream{ctx: ctx, body: resp.Body, cancel: func() { cancel(nil) }}, nil
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// errorMessage reads an error answer and returns the vendor's message, or the status text.
func errorMessage(resp *http.Response) string {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if msg := detailMessage(b); msg != "" {
		return voice.Clip(msg, voice.EchoLimit)
	}
	return http.StatusText(resp.StatusCode)
}

// detailMessage extracts the message from an ElevenLabs error body. The API answers
// {"detail":{"status":…,"message":…}} for its own errors and, for request validation,
// {"detail":[{"loc":…,"msg":…,"type":…}, …]}; some answers carry a plain string detail.
func detailMessage(b []byte) string {
	var env struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(b, &env) != nil || len(env.Detail) == 0 {
		return ""
	}
	var obj struct {
		Status  string `json:"status"`
		Message string `json:"message"`
	}
	if json.Unmarshal(env.Detail, &obj) == nil {
		return cmp.Or(obj.Message, obj.Status)
	}
	var list []struct {
		Msg string `json:"msg"`
	}
	if json.Unmarshal(env.Detail, &list) == nil {
		var msgs []string
		for _, item := range list {
			if item.Msg != "" {
				msgs = append(msgs, item.Msg)
			}
		}
		return strings.Join(msgs, "; ")
	}
	var str string
	if json.Unmarshal(env.Detail, &str) == nil {
		return str
	}
	return ""
}

// stream is the audio of one synthesis. Read errors other than io.EOF become
// *voice.ProviderError; Close stops the request.
type stream struct {
	ctx    context.Context // the caller's context
	body   io.ReadCloser
	cancel func()
	once   sync.Once
}

func (r *stream) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	if err == nil || err == io.EOF {
		return n, err
	}
	kind := voice.KindTransient
	if r.ctx.Err() != nil {
		kind, err = voice.KindOf(r.ctx.Err()), r.ctx.Err()
	}
	return n, &voice.ProviderError{Provider: name, Op: "read audio", Kind: kind, Err: err}
}

// Close stops the request and releases the connection. Idempotent.
func (r *stream) Close() error {
	r.once.Do(func() {
		r.cancel()
		r.body.Close()
	})
	return nil
}
