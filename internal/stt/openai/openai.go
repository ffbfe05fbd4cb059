package openai

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/resample"
	"github.com/handset-voice/handset/internal/openaiwire"
	"github.com/handset-voice/handset/internal/voice"
)

// Defaults for Options.
const (
	DefaultBaseURL      = "https://api.openai.com/v1"
	DefaultModel        = "whisper-1"
	DefaultMaxUtterance = 30 * time.Second
	// DefaultTimeout bounds one transcription request, upload and answer.
	DefaultTimeout = 15 * time.Second
)

// name is the provider name in errors and logs, and the Recognizer's Name.
const name = "openai"

// Options configure a Recognizer. The zero value transcribes with OpenAI's whisper-1 (and
// needs Key).
type Options struct {
	// BaseURL is the API root, default DefaultBaseURL; /audio/transcriptions is appended.
	// A self-hosted server is typically "http://localhost:8000/v1".
	BaseURL string
	// Key is sent as "Authorization: Bearer <Key>" when non-empty; never logged.
	Key string
	// Model is the transcription model, default DefaultModel.
	Model string
	// Language is the ISO-639-1 code of the caller's language ("en"); empty lets the
	// model detect it.
	Language string
	// MaxUtterance is the most audio kept for one utterance; past it the oldest is
	// dropped. Default DefaultMaxUtterance.
	MaxUtterance time.Duration
	// Timeout bounds each request (upload and answer). Default DefaultTimeout.
	Timeout time.Duration
	// HTTPClient sends the requests (default a client on http.DefaultTransport).
	HTTPClient *http.Client
	Logger     *slog.Logger // nil discards
}

// Recognizer opens transcription streams against one endpoint. Safe for concurrent use.
type Recognizer struct {
	url, key, model, language string
	maxUtterance, timeout     time.Duration
	client                    *http.Client
	log                       *slog.Logger
}

var _ voice.Recognizer = (*Recognizer)(nil)

// New returns a Recognizer for o, filling in the defaults. It fails only on an unusable
// BaseURL or key; a wrong key shows up as an auth error on the first transcription.
func New(o Options) (*Recognizer, error) {
	base := cmp.Or(o.BaseURL, DefaultBaseURL)
	endpoint, err := openaiwire.Endpoint("openai stt", base, o.Key, "/audio/transcriptions")
	if err != nil {
		return nil, err
	}
	r := &Recognizer{
		url:          endpoint,
		key:          o.Key,
		model:        cmp.Or(o.Model, DefaultModel),
		language:     o.Language,
		maxUtterance: o.MaxUtterance,
		timeout:      o.Timeout,
		client:       o.HTTPClient,
		log:          o.Logger,
	}
	if r.maxUtterance <= 0 {
		r.maxUtterance = DefaultMaxUtterance
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.client == nil {
		r.client = &http.Client{}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.log = r.log.With("provider", name)
	return r, nil
}

// Name is "openai".
func (r *Recognizer) Name() string { return name }

// checkFormat refuses the formats a stream does not take.
func checkFormat(f audio.Format) error {
	switch f.Encoding {
	case audio.PCM16, audio.Mulaw, audio.Alaw:
	default:
		return fmt.Errorf("unsupported audio format %s (want pcm16, mulaw or alaw)", f)
	}
	for _, rate := range resample.Rates {
		if f.Rate == rate {
			return nil
		}
	}
	return fmt.Errorf("unsupported audio format %s (want a rate of %v Hz)", f, resample.Rates)
}

// Stream opens a stream for audio in format f. Nothing is sent until the first Finalize,
// so it fails only for an unsupported format. Cancelling ctx ends the stream.
func (r *Recognizer) Stream(ctx context.Context, f audio.Format, so voice.StreamOptions) (voice.RecognizerStream, error) {
	if err := checkFormat(f); err != nil {
		return nil, &voice.ProviderError{Provider: name, Op: "open stream", Kind: voice.KindBadInput, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, &voice.ProviderError{Provider: name, Op: "open stream", Kind: voice.KindOf(err), Err: err}
	}
	return startStream(ctx, r, f, so.CallID), nil
}

// Transcribe uploads one utterance (audio in format f) and returns its text. An utterance
// that is empty, shorter than 100 ms or silent is not uploaded: the text is "" and the
// error nil. A transient failure is retried once. Errors are *voice.ProviderError.
func (r *Recognizer) Transcribe(ctx context.Context, f audio.Format, data []byte) (string, error) {
	if err := checkFormat(f); err != nil {
		return "", &voice.ProviderError{Provider: name, Op: "transcribe", Kind: voice.KindBadInput, Err: err}
	}
	text, _, err := r.transcribe(ctx, f, data, r.log)
	return text, err
}

// transcribe is Transcribe for a checked format; sent reports whether a request was made.
func (r *Recognizer) transcribe(ctx context.Context, f audio.Format, data []byte, log *slog.Logger) (text string, sent bool, err error) {
	u := prepare(f, data)
	if u.skip != "" {
		log.Debug("openai stt: utterance not sent", "why", u.skip, "audio", f.Duration(len(data)))
		return "", false, nil
	}
	body, ctype, err := r.form(u)
	if err != nil {
		return "", false, &voice.ProviderError{Provider: name, Op: "transcribe", Kind: voice.KindBadInput, Err: err}
	}
	text, err = r.attempt(ctx, body, ctype)
	if err != nil && voice.KindOf(err) == voice.KindTransient && ctx.Err() == nil {
		log.Warn("openai stt: retrying transcription once", "err", err)
		text, err = r.attempt(ctx, body, ctype)
	}
	return text, true, err
}

// errRequestTimeout is the cause of a request cancelled after Options.Timeout.
var errRequestTimeout = errors.New("no answer in time")

// maxAnswer bounds how much of an answer is read.
const maxAnswer = 1 << 20

// attempt sends one transcription request and returns the text or a classified error.
func (r *Recognizer) attempt(ctx context.Context, body []byte, ctype string) (string, error) {
	fail := func(kind voice.ErrorKind, status int, err error) error {
		return &voice.ProviderError{Provider: name, Op: "transcribe", Kind: kind, Status: status, Err: err}
	}
	rctx, cancel := context.WithTimeoutCause(ctx, r.timeout, errRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return "", fail(voice.KindBadInput, 0, fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Content-Type", ctype)
	req.Header.Set("Accept", "application/json")
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	transport := func(err error) error {
		switch {
		case ctx.Err() != nil:
			return fail(voice.KindOf(ctx.Err()), 0, ctx.Err())
		case errors.Is(context.Cause(rctx), errRequestTimeout):
			return fail(voice.KindTimeout, 0, fmt.Errorf("%w (%v)", errRequestTimeout, r.timeout))
		}
		return fail(voice.KindTransient, 0, err)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return "", transport(err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return "", transport(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		kind := voice.KindFromStatus(resp.StatusCode)
		if kind == voice.KindUnknown {
			kind = voice.KindProtocol // a redirect that was not followed, say
		}
		return "", fail(kind, resp.StatusCode, errors.New(openaiwire.ErrorMessage(answer, resp.StatusCode)))
	}
	text, err := parseTranscription(resp.Header.Get("Content-Type"), answer)
	if err != nil {
		return "", fail(voice.KindProtocol, resp.StatusCode, err)
	}
	return text, nil
}

// fatal reports whether err means no later request can succeed: the credentials were
// rejected, or the endpoint or model does not exist.
func fatal(err error) bool {
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Kind == voice.KindAuth || pe.Status == http.StatusNotFound
}
