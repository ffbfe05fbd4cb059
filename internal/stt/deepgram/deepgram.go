// Package deepgram owns Handset's Deepgram streaming speech-to-text provider: a
// voice.Recognizer that streams a call's audio to Deepgram's live endpoint
// (wss://api.deepgram.com/v1/listen) and turns its results into voice.Transcripts.
//
// It implements the live protocol described in
// https://developers.deepgram.com/docs/understand-endpointing-interim-results,
// https://developers.deepgram.com/docs/endpointing and
// https://developers.deepgram.com/docs/utterance-end: raw binary audio frames,
// "Authorization: Token <key>", `Results` with is_final / speech_final / from_finalize,
// `UtteranceEnd`, and the KeepAlive, Finalize and CloseStream control messages.
//
// A stream is resilient: if the socket drops, it is reopened and the audio since the last
// final transcript is replayed, so the caller's words are not lost.
package deepgram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/voice"
)

// Defaults for the zero Options.
const (
	DefaultBaseURL          = "https://api.deepgram.com"
	DefaultModel            = "nova-3"
	DefaultLanguage         = "en-US"
	DefaultEndpointing      = 300 * time.Millisecond
	DefaultUtteranceEnd     = time.Second
	DefaultKeepAliveEvery   = 4 * time.Second
	DefaultDialTimeout      = 10 * time.Second
	DefaultCloseTimeout     = 2 * time.Second
	DefaultReconnects       = 3
	DefaultReconnectBackoff = 100 * time.Millisecond
	DefaultQueueAudio       = 2 * time.Second
	DefaultReplayAudio      = 10 * time.Second
)

// providerName is the Provider of every error and the Recognizer's Name.
const providerName = "deepgram"

// Options configure a Recognizer. Zero values take the defaults above.
type Options struct {
	Key string // API key, sent as "Authorization: Token <Key>"; never logged
	// BaseURL is the API root; /v1/listen is appended and http(s) becomes ws(s).
	BaseURL  string
	Model    string
	Language string
	// Endpointing is the silence that ends a segment with speech_final (sent in ms).
	// Negative sends endpointing=false.
	Endpointing time.Duration
	// UtteranceEnd is the word gap after which Deepgram sends UtteranceEnd (sent as
	// utterance_end_ms). Negative leaves it out.
	UtteranceEnd time.Duration
	// KeepAliveEvery is how long the socket may go without audio before a KeepAlive is sent.
	KeepAliveEvery time.Duration
	Logger         *slog.Logger // nil discards
	// HTTPClient carries the WebSocket handshake (proxies, TLS, tests); nil uses the default.
	HTTPClient *http.Client

	DialTimeout  time.Duration // bound on one handshake
	CloseTimeout time.Duration // how long Close waits for Deepgram to flush and close
	// Reconnects is how many times a dropped socket is reopened before the stream fails
	// (negative: never). ReconnectBackoff is the wait before the first try, doubled after.
	Reconnects       int
	ReconnectBackoff time.Duration
	QueueAudio       time.Duration // audio Write may queue before the oldest is dropped
	ReplayAudio      time.Duration // audio kept for replay since the last final transcript
}

func (o *Options) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if o.BaseURL == "" {
		o.BaseURL = DefaultBaseURL
	}
	if o.Model == "" {
		o.Model = DefaultModel
	}
	if o.Language == "" {
		o.Language = DefaultLanguage
	}
	def(&o.Endpointing, DefaultEndpointing)
	def(&o.UtteranceEnd, DefaultUtteranceEnd)
	def(&o.KeepAliveEvery, DefaultKeepAliveEvery)
	def(&o.DialTimeout, DefaultDialTimeout)
	def(&o.CloseTimeout, DefaultCloseTimeout)
	def(&o.ReconnectBackoff, DefaultReconnectBackoff)
	def(&o.QueueAudio, DefaultQueueAudio)
	def(&o.ReplayAudio, DefaultReplayAudio)
	if o.Reconnects == 0 {
		o.Reconnects = DefaultReconnects
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Recognizer opens Deepgram live streams. Safe for concurrent use.
type Recognizer struct {
	opts Options
	base *url.URL // ws(s)://host/…/v1/listen
	log  *slog.Logger
}

var _ voice.Recognizer = (*Recognizer)(nil)

// New returns a Recognizer. It fails only on an unusable BaseURL; a missing key is reported
// by Stream as an auth error, so doctor can say which setting is missing.
func New(opts Options) (*Recognizer, error) {
	opts.setDefaults()
	u, err := url.Parse(opts.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("deepgram: base URL %q: %w", opts.BaseURL, err)
	}
	switch u.Scheme {
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	case "ws", "wss":
	default:
		return nil, fmt.Errorf("deepgram: base URL %q: scheme must be http, https, ws or wss", opts.BaseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("deepgram: base URL %q has no host", opts.BaseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/v1/listen"
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return &Recognizer{opts: opts, base: u, log: opts.Logger.With("provider", providerName)}, nil
}

// Name is "deepgram".
func (r *Recognizer) Name() string { return providerName }

// encodingParam is Deepgram's name for f's encoding, or an error for formats this provider
// does not stream.
func encodingParam(f audio.Format) (string, error) {
	switch {
	case f.Encoding == audio.Mulaw && f.Rate == 8000:
		return "mulaw", nil
	case f.Encoding == audio.Alaw && f.Rate == 8000:
		return "alaw", nil
	case f.Encoding == audio.PCM16 && f.Rate > 0:
		return "linear16", nil
	}
	return "", fmt.Errorf("unsupported audio format %s (want mulaw/8000, alaw/8000 or pcm16)", f)
}

// listenURL is the stream URL with its query for format enc/f.
func (r *Recognizer) listenURL(enc string, f audio.Format, so voice.StreamOptions) string {
	q := url.Values{}
	q.Set("encoding", enc)
	q.Set("sample_rate", strconv.Itoa(f.Rate))
	q.Set("channels", "1")
	q.Set("interim_results", "true")
	q.Set("model", r.opts.Model)
	q.Set("language", r.opts.Language)
	q.Set("punctuate", "true")
	q.Set("smart_format", "true")
	if r.opts.Endpointing < 0 {
		q.Set("endpointing", "false")
	} else {
		q.Set("endpointing", strconv.FormatInt(r.opts.Endpointing.Milliseconds(), 10))
	}
	if r.opts.UtteranceEnd > 0 {
		q.Set("utterance_end_ms", strconv.FormatInt(r.opts.UtteranceEnd.Milliseconds(), 10))
	}
	if so.CallID != "" {
		q.Set("tag", string(so.CallID)) // Deepgram's usage label: ties its logs to the call
	}
	u := *r.base
	u.RawQuery = q.Encode()
	return u.String()
}

// Stream opens a live stream for audio in format f. The handshake happens here, so a bad
// key or parameter fails now with the vendor's message.
func (r *Recognizer) Stream(ctx context.Context, f audio.Format, so voice.StreamOptions) (voice.RecognizerStream, error) {
	enc, err := encodingParam(f)
	if err != nil {
		return nil, &voice.ProviderError{Provider: providerName, Op: "open stream", Kind: voice.KindBadInput, Err: err}
	}
	if r.opts.Key == "" {
		return nil, &voice.ProviderError{Provider: providerName, Op: "open stream", Kind: voice.KindAuth,
			Err: errors.New("no API key configured (DEEPGRAM_API_KEY)")}
	}
	u := r.listenURL(enc, f, so)
	conn, err := r.dial(ctx, u, "open stream")
	if err != nil {
		return nil, err
	}
	return startStream(ctx, r, f, u, so.CallID, conn), nil
}

// dial performs one handshake; errors are classified *voice.ProviderError.
func (r *Recognizer) dial(ctx context.Context, u, op string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, r.opts.DialTimeout)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{
		HTTPClient: r.opts.HTTPClient,
		HTTPHeader: http.Header{"Authorization": {"Token " + r.opts.Key}},
	})
	if err == nil {
		conn.SetReadLimit(1 << 20) // a long utterance's words exceed the 32 KiB default
		return conn, nil
	}
	pe := &voice.ProviderError{Provider: providerName, Op: op}
	switch {
	case resp != nil && resp.StatusCode != http.StatusSwitchingProtocols:
		pe.Status = resp.StatusCode
		pe.Kind = voice.KindFromStatus(resp.StatusCode)
		if pe.Kind == voice.KindUnknown {
			pe.Kind = voice.KindProtocol // a redirect or other non-error answer to an upgrade
		}
		pe.Err = vendorError(resp)
	case resp != nil:
		pe.Kind, pe.Err = voice.KindProtocol, err
	case ctx.Err() != nil:
		pe.Kind, pe.Err = voice.KindOf(ctx.Err()), ctx.Err()
	case dctx.Err() != nil:
		pe.Kind, pe.Err = voice.KindTimeout, fmt.Errorf("handshake took longer than %v: %w", r.opts.DialTimeout, err)
	default:
		pe.Kind, pe.Err = voice.KindTransient, err
	}
	return nil, pe
}
