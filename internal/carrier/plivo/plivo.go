package plivo

import (
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/mediastream"
	"github.com/handset-voice/handset/internal/voice"
)

// Codec is the stream's audio, the same both ways (HANDSET_PLIVO_CODEC).
type Codec string

// Codecs Handset streams in.
const (
	CodecMulaw Codec = "mulaw" // 8 kHz mu-law, the default
	CodecL16   Codec = "l16"   // 16 kHz linear PCM (little-endian: UNCONFIRMED, the fake pins it)
)

// ContentType is the codec as <Stream>'s contentType; ok is false for a codec Handset
// does not stream.
func (c Codec) ContentType() (ct string, ok bool) {
	switch c {
	case CodecMulaw, "":
		return ContentMulaw8k, true
	case CodecL16:
		return ContentL16_16k, true
	}
	return "", false
}

// Format is the codec as Handset's audio.Format.
func (c Codec) Format() (f audio.Format, ok bool) {
	switch c {
	case CodecMulaw, "":
		return audio.Telephone, true
	case CodecL16:
		return audio.Format{Encoding: audio.PCM16, Rate: 16000}, true
	}
	return audio.Format{}, false
}

// Options configure the carrier's inbound side.
type Options struct {
	// AuthToken is PLIVO_AUTH_TOKEN: it checks every request's V3 signature and keys the
	// stream tokens. Without it every request is refused.
	AuthToken string
	// Control hangs up on a machine and starts a stream by REST after a verdict; nil
	// makes those verdicts fail (Plivo retries them).
	Control *Control
	// Codec is the stream's audio both ways; empty is CodecMulaw.
	Codec Codec
	// PublicURL is the base URL Plivo reaches Handset at: what V3 signs and where the
	// stream URL points. Empty: derived from each request.
	PublicURL string
	// TrustedProxies are the peers whose forwarded host and scheme are believed when
	// PublicURL is empty.
	TrustedProxies []netip.Prefix
	// Memory remembers answers, streams, nonces and the calls' progress for every node;
	// required.
	Memory carrier.Memory
	// Draining, when it says true, makes new calls get 503 so Plivo tries the fallback.
	Draining func() bool
	// Admit starts a call on leg and returns a channel closed when it is over; an error
	// refuses the call.
	Admit func(leg voice.Leg) (<-chan struct{}, error)
	// OnProgress is told how the calls Handset placed progress; it must be short.
	OnProgress func(carrier.Progress)
	Logger     *slog.Logger
	Now        func() time.Time
}

// Carrier serves Handset's Plivo routes.
type Carrier struct {
	opts   Options
	codec  Codec
	hooks  *Hooks
	tokens *mediastream.Tokens // nil without an auth token: every stream is refused
	once   mediastream.Once
	log    *slog.Logger
}

// New returns the carrier. opts.Memory is required and opts.Codec must be a Codec value
// (or empty).
func New(opts Options) *Carrier {
	if opts.Memory == nil {
		panic("plivo: Options.Memory is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	codec := opts.Codec
	if codec == "" {
		codec = CodecMulaw
	}
	ct, ok := codec.ContentType()
	if !ok {
		panic("plivo: unknown codec " + string(codec))
	}
	log := opts.Logger.With("carrier", Name)
	c := &Carrier{opts: opts, codec: codec, log: log,
		once: mediastream.Once{Memory: opts.Memory, Now: opts.Now, Log: log, RefKey: "call_uuid", ContentType: "application/xml"}}
	if opts.AuthToken != "" {
		c.tokens = mediastream.NewTokens(opts.AuthToken, Name, mediastream.EncodingAlphanumeric)
	}
	c.hooks = &Hooks{
		Verifier: Verifier{AuthToken: opts.AuthToken, PublicURL: opts.PublicURL, TrustedProxies: opts.TrustedProxies,
			Memory: opts.Memory, Now: opts.Now},
		Tokens: c.tokens, Control: opts.Control, ContentType: ct, Draining: opts.Draining,
		OnProgress: opts.OnProgress, Log: log, Now: opts.Now,
	}
	return c
}

// Register mounts Handset's Plivo routes: the answer URL, call progress (the hangup URL
// and machine-detection verdicts), the stream's status events, a transferred call's
// XML, and the media stream.
func (c *Carrier) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST "+AnswerPath, c.configured(c.hooks.Answer))
	mux.HandleFunc("POST "+HangupPath, c.configured(c.hooks.Progress))
	mux.HandleFunc("POST "+MachinePath, c.configured(c.hooks.Progress))
	mux.HandleFunc("POST "+StreamStatusPath, c.configured(c.streamStatus))
	mux.Handle(TransferPath, c.configured(ServeTransfer(c.hooks.Verifier).ServeHTTP))
	mux.HandleFunc("GET "+StreamPath, c.configured(c.stream))
}

// configured refuses every request while PLIVO_AUTH_TOKEN is unset: none can be checked.
func (c *Carrier) configured(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c.opts.AuthToken == "" {
			http.Error(w, "Plivo is not configured: set PLIVO_AUTH_TOKEN", http.StatusServiceUnavailable)
			return
		}
		h(w, r)
	}
}

// streamStatus takes the stream's own events (StartStream, StopStream, DroppedStream):
// the stream itself says the same, so they are only logged.
func (c *Carrier) streamStatus(w http.ResponseWriter, r *http.Request) {
	if err := c.hooks.Verifier.Signed(w, r); err != nil {
		c.log.Warn("refused a Plivo stream status", "err", err)
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	c.log.Debug("media stream status", "call_uuid", idOrEmpty(r.PostForm.Get("CallUUID")),
		"event", voice.Clip(r.PostForm.Get("Event"), 40), "error", voice.Clip(r.PostForm.Get("Error"), 120))
	w.WriteHeader(http.StatusNoContent)
}
