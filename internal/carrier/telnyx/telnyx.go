// Package telnyx is Handset's Telnyx carrier (Call Control v2): the webhook (Ed25519
// signature, inbound calls answered by a REST command that opens a bidirectional media
// stream with a one-time token), and the media WebSocket as a voice.Leg (marks, clear,
// DTMF, frames that may arrive out of order).
//
// Wire protocol: https://developers.telnyx.com/docs/voice/programmable-voice/media-streaming
// and https://developers.telnyx.com/api/call-control.
package telnyx

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/mediastream"
	"github.com/handset-voice/handset/internal/voice"
)

// StreamPath is where Telnyx opens a call's media stream (events arrive at WebhookPath).
const StreamPath = "/telnyx/stream"

// TokenParameter is the stream URL's query parameter that carries the one-time token.
const TokenParameter = "handset_token"

// Codec is the stream's audio codec, the same both ways (HANDSET_TELNYX_CODEC).
type Codec string

// Codecs Handset streams in.
const (
	CodecPCMU Codec = "PCMU" // 8 kHz mu-law, the default
	CodecPCMA Codec = "PCMA" // 8 kHz A-law
	CodecL16  Codec = "L16"  // 16 kHz linear PCM, big-endian on the wire
)

// Format is what the codec carries as Handset's audio.Format; ok is false for a codec
// Handset does not stream.
func (c Codec) Format() (f audio.Format, ok bool) {
	switch c {
	case CodecPCMU, "":
		return audio.Telephone, true
	case CodecPCMA:
		return audio.Format{Encoding: audio.Alaw, Rate: 8000}, true
	case CodecL16:
		return audio.Format{Encoding: audio.PCM16, Rate: 16000}, true
	}
	return audio.Format{}, false
}

// CommandFunc sends one Call Control command: POST /calls/{callControlID}/actions/{action}
// with body as JSON (REST.Command). An error means Telnyx did not take it.
type CommandFunc func(ctx context.Context, callControlID, action string, body any) error

// Options configure the carrier's inbound side.
type Options struct {
	// PublicKey is TELNYX_PUBLIC_KEY's key: it verifies every webhook. Without it every
	// webhook is refused.
	PublicKey ed25519.PublicKey
	// APIKey is TELNYX_API_KEY: the stream tokens' key is derived from it (never from the
	// public key, which anyone may read).
	APIKey string
	// Command sends Call Control commands (answer, streaming_start, hangup); required.
	Command CommandFunc
	// Codec is the stream's codec both ways; empty is PCMU.
	Codec Codec
	// PublicURL is the base URL Telnyx reaches us at; the stream URL is built from it.
	// Empty: derived from each request.
	PublicURL string
	// TrustedProxies are the peers whose forwarded host and scheme are believed when
	// PublicURL is empty.
	TrustedProxies []netip.Prefix
	// Memory remembers each call's answer, whether its stream opened, the events seen and
	// the calls' progress, for every node; required.
	Memory carrier.Memory
	// Draining, when set, is asked on each new call: while it says true the webhook
	// answers 503, so Telnyx retries elsewhere or at the failover URL.
	Draining func() bool
	// Admit starts a call on leg and returns a channel closed when the call is over. An
	// error refuses the call.
	Admit func(leg voice.Leg) (<-chan struct{}, error)
	// OnProgress, when set, is told every progress event of a call. It runs in the HTTP
	// handler: keep it short.
	OnProgress func(carrier.Progress)
	Logger     *slog.Logger
	Now        func() time.Time
}

// Carrier serves the Telnyx endpoints.
type Carrier struct {
	opts   Options
	codec  Codec
	tokens *mediastream.Tokens // nil without an API key: every stream is refused
	once   mediastream.Once
	log    *slog.Logger
}

// New returns the carrier. opts.Memory and opts.Command are required, and opts.Codec must
// be one of the Codec values (or empty).
func New(opts Options) *Carrier {
	if opts.Memory == nil {
		panic("telnyx: Options.Memory is required")
	}
	if opts.Command == nil {
		panic("telnyx: Options.Command is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	codec := opts.Codec
	if codec == "" {
		codec = CodecPCMU
	}
	if _, ok := codec.Format(); !ok {
		panic("telnyx: unknown codec " + string(codec))
	}
	log := opts.Logger.With("carrier", Name)
	c := &Carrier{opts: opts, codec: codec, log: log,
		once: mediastream.Once{Memory: opts.Memory, Now: opts.Now, Log: log, RefKey: "call_control_id", ContentType: "application/json"}}
	if opts.APIKey != "" {
		c.tokens = mediastream.NewTokens(opts.APIKey, Name, mediastream.EncodingJSON)
	}
	return c
}

// Register mounts POST /telnyx/webhook and GET /telnyx/stream. Telnyx transfers by
// command, so there is no transfer route.
func (c *Carrier) Register(mux *http.ServeMux) {
	mux.HandleFunc("POST "+WebhookPath, c.webhook)
	mux.HandleFunc("GET "+StreamPath, c.stream)
}
