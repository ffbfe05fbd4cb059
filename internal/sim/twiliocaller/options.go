package twiliocaller

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/clock"
)

// Defaults used when Options leaves a field empty.
const (
	DefaultVoicePath      = "/twilio/voice"
	DefaultFrom           = "+15550100001"
	DefaultTo             = "+15550100002"
	DefaultWebhookTimeout = 15 * time.Second // Twilio's own webhook timeout
)

// Options describe one simulated inbound call.
type Options struct {
	// BaseURL is where Handset listens, e.g. "http://127.0.0.1:8080"; the voice webhook is
	// POSTed to BaseURL+VoicePath.
	BaseURL string
	// PublicURL is the base URL Handset believes Twilio uses (its configured public URL);
	// the webhook is signed over PublicURL+VoicePath. Default BaseURL.
	PublicURL string
	// VoicePath is the webhook path under both base URLs. Default "/twilio/voice".
	VoicePath string
	// DialURL maps the <Stream url> from the TwiML to the URL actually dialled. The
	// default rewrites a URL on PublicURL's host onto BaseURL (scheme http→ws, https→wss)
	// and leaves any other URL alone. The upgrade is always signed over the TwiML URL.
	DialURL func(twimlStreamURL string) string
	// InsecureStreamURL accepts a ws:// <Stream url>. Real Twilio only dials wss://.
	InsecureStreamURL bool

	AccountSid string // default a generated AC… sid
	AuthToken  string // the HMAC key for X-Twilio-Signature
	From, To   string // E.164; defaults DefaultFrom and DefaultTo
	CallSid    string // default a generated CA… sid
	// Params adds or overrides webhook form parameters (CallerName, FromCity, …).
	Params map[string]string
	// IdempotencyToken is sent as I-Twilio-Idempotency-Token on the webhook; Twilio repeats
	// it on every retry of one request. Default a fresh one per request.
	IdempotencyToken string

	// Echo, when set, returns part of what the caller hears to Handset, as a real phone
	// line does: every media frame the caller streams mixes the caller's own audio with
	// the audio that played on the caller's side Delay earlier, GainDB quieter. Nil (the
	// default) streams the caller's audio alone.
	Echo *EchoOptions

	// Lean keeps a call's memory flat however long it runs, for load generation: the
	// audio Handset sends is counted (see Counters) but not kept, so no AudioReceived or
	// AudioPlayed events are recorded and PlayedAudio, ReceivedAudio, SpeechSegments and
	// HeardSpeech find nothing. Everything else is recorded as usual: marks and their
	// echoes, clears, DTMF, Say, protocol errors, raw frames, stop and the end. The
	// playback buffer still times marks exactly; it holds only the length of what is
	// queued, or the audio itself until it has played and echoed when Echo is set.
	Lean bool
	// Silent sends no media frames after start (see phone.Options.Silent).
	Silent bool

	HTTPClient     *http.Client  // default http.DefaultClient
	WebhookTimeout time.Duration // default DefaultWebhookTimeout
	Clock          clock.Clock   // paces media and playback; default the wall clock
	Logger         *slog.Logger  // default discards
}

// withDefaults fills every empty field, generating the sids, so the result is stable.
func (o Options) withDefaults() Options {
	if o.PublicURL == "" {
		o.PublicURL = o.BaseURL
	}
	if o.VoicePath == "" {
		o.VoicePath = DefaultVoicePath
	}
	if o.AccountSid == "" {
		o.AccountSid = NewSid("AC")
	}
	if o.CallSid == "" {
		o.CallSid = NewSid("CA")
	}
	if o.From == "" {
		o.From = DefaultFrom
	}
	if o.To == "" {
		o.To = DefaultTo
	}
	if o.HTTPClient == nil {
		o.HTTPClient = http.DefaultClient
	}
	if o.WebhookTimeout <= 0 {
		o.WebhookTimeout = DefaultWebhookTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func joinURL(base, path string) string {
	return strings.TrimSuffix(base, "/") + path
}

// WebhookURL is where the webhook is POSTed; SignedWebhookURL is the URL it is signed over.
func (o Options) WebhookURL() string { return joinURL(o.BaseURL, o.withVoicePath().VoicePath) }

// SignedWebhookURL is the URL the webhook signature covers: PublicURL (or BaseURL) plus the
// voice path.
func (o Options) SignedWebhookURL() string {
	pub := o.PublicURL
	if pub == "" {
		pub = o.BaseURL
	}
	return joinURL(pub, o.withVoicePath().VoicePath)
}

func (o Options) withVoicePath() Options {
	if o.VoicePath == "" {
		o.VoicePath = DefaultVoicePath
	}
	return o
}

// WebhookParams are the form parameters Twilio posts for a ringing inbound call. Empty
// sids and numbers are left empty here; Dial fills them first.
func (o Options) WebhookParams() url.Values {
	v := url.Values{}
	v.Set("CallSid", o.CallSid)
	v.Set("AccountSid", o.AccountSid)
	v.Set("From", o.From)
	v.Set("To", o.To)
	v.Set("Caller", o.From)
	v.Set("Called", o.To)
	v.Set("CallStatus", "ringing")
	v.Set("Direction", "inbound")
	v.Set("ApiVersion", "2010-04-01")
	for k, val := range o.Params {
		v.Set(k, val)
	}
	return v
}

// streamDialURL applies DialURL, or the default rewrite from PublicURL onto BaseURL.
func (o Options) streamDialURL(streamURL string) (string, error) {
	if o.DialURL != nil {
		return o.DialURL(streamURL), nil
	}
	su, err := url.Parse(streamURL)
	if err != nil {
		return "", fmt.Errorf("stream url %q: %w", streamURL, err)
	}
	pub, err := url.Parse(o.PublicURL)
	if err != nil {
		return "", fmt.Errorf("public url %q: %w", o.PublicURL, err)
	}
	base, err := url.Parse(o.BaseURL)
	if err != nil {
		return "", fmt.Errorf("base url %q: %w", o.BaseURL, err)
	}
	if su.Host != pub.Host {
		return streamURL, nil
	}
	su.Host = base.Host
	switch base.Scheme {
	case "http", "ws":
		su.Scheme = "ws"
	default:
		su.Scheme = "wss"
	}
	pubPath := strings.TrimSuffix(pub.Path, "/")
	if strings.HasPrefix(su.Path, pubPath) {
		su.Path = strings.TrimSuffix(base.Path, "/") + su.Path[len(pubPath):]
		su.RawPath = ""
	}
	return su.String(), nil
}

// WebhookResponse is Handset's answer to a voice webhook.
type WebhookResponse struct {
	Status      int
	ContentType string
	Body        []byte
	Params      url.Values // the form that was posted
}

// WebhookError reports a webhook whose answer Twilio could not use: a status other than
// 200, or a body that is not TwiML with a <Connect><Stream>.
type WebhookError struct {
	Status int
	Body   string
	Err    error // the TwiML problem, when the status was 200
}

func (e *WebhookError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("twiliocaller: webhook answered %d with unusable TwiML: %v; body %q", e.Status, e.Err, e.Body)
	}
	return fmt.Sprintf("twiliocaller: webhook answered %d; body %q", e.Status, e.Body)
}

func (e *WebhookError) Unwrap() error { return e.Err }

// maxWebhookBody caps how much of a webhook answer is read.
const maxWebhookBody = 1 << 20

// PostWebhook posts the voice webhook for opts as Twilio would and returns Handset's
// answer whatever its status; an error means no answer arrived. signature overrides the
// X-Twilio-Signature header for negative tests: nil signs correctly over
// SignedWebhookURL, a pointer to "" sends no header, anything else is sent as given.
// Empty sids are generated for this request only, so set CallSid to know it.
func PostWebhook(ctx context.Context, opts Options, signature *string) (WebhookResponse, error) {
	o := opts.withDefaults()
	params := o.WebhookParams()
	sig := Signature(o.AuthToken, o.SignedWebhookURL(), params)
	if signature != nil {
		sig = *signature
	}
	return sendWebhook(ctx, o, http.MethodPost, o.WebhookURL(), params, sig)
}

// StreamDialURL is the URL the caller dials for a <Stream url>: DialURL's mapping, or the
// default rewrite from PublicURL onto BaseURL.
func (o Options) StreamDialURL(streamURL string) (string, error) {
	if o.PublicURL == "" {
		o.PublicURL = o.BaseURL
	}
	return o.streamDialURL(streamURL)
}
