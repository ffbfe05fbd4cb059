package openai

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
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/resample"
	"github.com/handset-voice/handset/internal/openaiwire"
	"github.com/handset-voice/handset/internal/voice"
)

// Defaults for Options.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	DefaultModel   = "tts-1"
	DefaultVoice   = "alloy"
	// DefaultHeaderTimeout bounds the wait for the response headers (time to first byte).
	DefaultHeaderTimeout = 15 * time.Second
)

// PCMRate is the sample rate of response_format "pcm".
const PCMRate = 24000

// name is the provider name in errors and logs.
const name = "openai"

// Options configure a Synthesizer. The zero value speaks through OpenAI's tts-1 with the
// voice alloy (and needs Key).
type Options struct {
	// BaseURL is the API root, default DefaultBaseURL; /audio/speech is appended. A
	// self-hosted server is typically "http://localhost:8880/v1".
	BaseURL string
	// Key is sent as "Authorization: Bearer <Key>" when non-empty; never logged.
	Key   string
	Model string // default DefaultModel
	Voice string // default DefaultVoice
	// HTTPClient sends the requests (default a client on http.DefaultTransport). Its own
	// Timeout, if any, also cuts long answers short, so leave it zero.
	HTTPClient *http.Client
	// HeaderTimeout bounds the wait for the response headers of each attempt; the audio
	// may then stream for as long as it lasts. Default DefaultHeaderTimeout.
	HeaderTimeout time.Duration
	Logger        *slog.Logger // nil discards
}

// Synthesizer speaks text through an OpenAI-compatible endpoint. Safe for concurrent use.
type Synthesizer struct {
	url, key, model, voice string
	headerTimeout          time.Duration
	client                 *http.Client
	log                    *slog.Logger
}

var _ voice.Synthesizer = (*Synthesizer)(nil)

// New returns a Synthesizer for o, filling in the defaults. It fails only on an unusable
// BaseURL or key.
func New(o Options) (*Synthesizer, error) {
	base := cmp.Or(o.BaseURL, DefaultBaseURL)
	endpoint, err := openaiwire.Endpoint("openai tts", base, o.Key, "/audio/speech")
	if err != nil {
		return nil, err
	}
	s := &Synthesizer{
		url:           endpoint,
		key:           o.Key,
		model:         cmp.Or(o.Model, DefaultModel),
		voice:         cmp.Or(o.Voice, DefaultVoice),
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
	s.log = s.log.With("provider", name)
	return s, nil
}

// Name implements voice.Synthesizer.
func (s *Synthesizer) Name() string { return name }

// request is the JSON body of a speech request.
type request struct {
	Model          string `json:"model"`
	Input          string `json:"input"`
	Voice          string `json:"voice"`
	ResponseFormat string `json:"response_format"`
}

// newConverter returns the converter from 24 kHz PCM to f, or a KindBadInput error.
func newConverter(f audio.Format) (*converter, error) {
	fail := func(err error) error {
		return &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindBadInput, Err: err}
	}
	switch f.Encoding {
	case audio.PCM16, audio.Mulaw, audio.Alaw:
	default:
		return nil, fail(fmt.Errorf("unsupported audio format %s (want pcm16, mulaw or alaw)", f))
	}
	rs, err := resample.New(PCMRate, f.Rate)
	if err != nil {
		return nil, fail(fmt.Errorf("unsupported audio format %s: %w", f, err))
	}
	return newConverterFor(rs, f.Encoding), nil
}

// Synthesize implements voice.Synthesizer: it returns the audio in f as soon as the
// response headers arrive. A transient failure (5xx or a connection error) before any
// audio is retried once.
func (s *Synthesizer) Synthesize(ctx context.Context, text string, f audio.Format) (io.ReadCloser, error) {
	conv, err := newConverter(f)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(text) == "" {
		return nil, &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindBadInput,
			Err: errors.New("empty text")}
	}
	body, err := json.Marshal(request{Model: s.model, Input: text, Voice: s.voice, ResponseFormat: "pcm"})
	if err != nil {
		return nil, &voice.ProviderError{Provider: name, Op: "synthesize", Kind: voice.KindBadInput, Err: err}
	}
	a, err := s.attempt(ctx, body)
	retried := false
	if err != nil && voice.KindOf(err) == voice.KindTransient && ctx.Err() == nil {
		s.log.Warn("openai tts: retrying synthesis once", "err", err)
		retried = true
		a, err = s.attempt(ctx, body)
	}
	if err != nil {
		return nil, err
	}
	return &stream{s: s, ctx: ctx, body: body, cur: a, retried: retried, conv: conv}, nil
}

// errHeaderTimeout is the cause of an attempt cancelled for want of response headers.
var errHeaderTimeout = errors.New("no response headers in time")

// answer is the body of one successful attempt and the way to stop it.
type answer struct {
	body   io.ReadCloser
	cancel func()
}

func (a answer) close() {
	a.cancel()
	a.body.Close()
}

// attempt sends one request and returns its audio body or a classified error.
func (s *Synthesizer) attempt(ctx context.Context, body []byte) (answer, error) {
	fail := func(kind voice.ErrorKind, status int, err error) error {
		return &voice.ProviderError{Provider: name, Op: "synthesize", Kind: kind, Status: status, Err: err}
	}
	actx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(actx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		cancel(nil)
		return answer{}, fail(voice.KindBadInput, 0, fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "audio/pcm, application/octet-stream, application/json")
	if s.key != "" {
		req.Header.Set("Authorization", "Bearer "+s.key)
	}

	timer := time.AfterFunc(s.headerTimeout, func() { cancel(errHeaderTimeout) })
	resp, err := s.client.Do(req)
	if !timer.Stop() {
		// The timeout fired, perhaps just as the headers came in: either way it is late.
		if err == nil {
			resp.Body.Close()
		}
		cancel(errHeaderTimeout)
		return answer{}, fail(voice.KindTimeout, 0, fmt.Errorf("%w (%v)", errHeaderTimeout, s.headerTimeout))
	}
	if err != nil {
		cancel(nil)
		if ctx.Err() != nil {
			return answer{}, fail(voice.KindOf(ctx.Err()), 0, ctx.Err())
		}
		return answer{}, fail(voice.KindTransient, 0, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		cancel(nil)
		kind := voice.KindFromStatus(resp.StatusCode)
		if kind == voice.KindUnknown {
			kind = voice.KindProtocol
		}
		return answer{}, fail(kind, resp.StatusCode, errors.New(openaiwire.ErrorMessage(b, resp.StatusCode)))
	}
	if err := checkContentType(resp.Header.Get("Content-Type")); err != nil {
		resp.Body.Close()
		cancel(nil)
		return answer{}, fail(voice.KindProtocol, resp.StatusCode, err)
	}
	return answer{body: resp.Body, cancel: func() { cancel(nil) }}, nil
}

// checkContentType refuses answers that are evidently not raw PCM: JSON, and the
// containers and codecs of the other response formats (a server that ignores
// response_format "pcm" sends its default, mp3). Unlabelled answers and audio/pcm,
// audio/l16 or application/octet-stream are taken as PCM.
func checkContentType(ct string) error {
	mt, _, _ := mime.ParseMediaType(ct)
	switch mt {
	case "application/json":
		return errors.New("answered JSON where audio was expected")
	case "audio/mpeg", "audio/mp3", "audio/opus", "audio/ogg", "audio/aac", "audio/flac",
		"audio/wav", "audio/x-wav", "audio/wave", "audio/vnd.wave", "audio/webm":
		return fmt.Errorf("answered %s where raw PCM (response_format \"pcm\") was asked for", mt)
	}
	if strings.HasPrefix(mt, "text/") {
		return fmt.Errorf("answered %s where audio was expected", mt)
	}
	return nil
}
