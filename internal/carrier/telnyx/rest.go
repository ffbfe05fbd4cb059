// Package telnyx is Telnyx (Call Control v2) as a carrier: its REST client and control of
// calls and numbers (carrier.Carrier, reading how calls went from the call ledger its
// signed webhooks fill), and the webhook, answer and media stream side of a call.
package telnyx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// REST defaults.
const (
	// DefaultRESTURL is Telnyx's API root (HANDSET_TELNYX_API_URL's default).
	DefaultRESTURL = "https://api.telnyx.com/v2"
	// DefaultRESTTimeout bounds each request, paging one page at a time.
	DefaultRESTTimeout = 10 * time.Second
)

// restProvider names Telnyx in errors.
const restProvider = "telnyx"

// RESTOptions configure a REST client.
type RESTOptions struct {
	// BaseURL is the API root including /v2 (HANDSET_TELNYX_API_URL), default
	// DefaultRESTURL.
	BaseURL string
	// APIKey (TELNYX_API_KEY) authenticates every request as a Bearer token.
	APIKey string
	// ConnectionID (TELNYX_CONNECTION_ID) is the Call Control Application calls are placed
	// from and numbers are attached to.
	ConnectionID string
	// HTTP sends the requests (default a client on http.DefaultTransport).
	HTTP *http.Client
	// Timeout bounds each request (default DefaultRESTTimeout).
	Timeout time.Duration
}

// REST is a small client of Telnyx's Call Control v2 REST API. Its errors are
// *voice.ProviderError (Provider "telnyx") wrapping a *RESTError when Telnyx answered one;
// they never carry the API key. Safe for concurrent use.
type REST struct {
	base       string // scheme://host/…/v2 without a trailing slash
	key        string
	connection string
	client     *http.Client
	timeout    time.Duration
}

// NewREST checks o and returns a client. It makes no request.
func NewREST(o RESTOptions) (*REST, error) {
	switch {
	case o.APIKey == "":
		return nil, errors.New("TELNYX_API_KEY is not set: create an API key in the Telnyx Mission Control Portal (Account Settings > Keys & Credentials)")
	case strings.TrimSpace(o.APIKey) != o.APIKey || strings.ContainsAny(o.APIKey, " \t\r\n"):
		return nil, errors.New("TELNYX_API_KEY contains spaces or line breaks: copy the API key from the Telnyx Mission Control Portal again")
	}
	base := strings.TrimSpace(o.BaseURL)
	if base == "" {
		base = DefaultRESTURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		shown := o.BaseURL
		if err == nil {
			shown = u.Redacted()
		}
		return nil, fmt.Errorf("HANDSET_TELNYX_API_URL %q is not an http(s) URL without credentials: leave it empty for %s, or set the root of a proxy or fake like http://127.0.0.1:8081/v2", shown, DefaultRESTURL)
	}
	r := &REST{base: strings.TrimRight(u.String(), "/"), key: o.APIKey, connection: strings.TrimSpace(o.ConnectionID),
		client: o.HTTP, timeout: o.Timeout}
	if r.client == nil {
		r.client = &http.Client{}
	}
	if r.timeout <= 0 {
		r.timeout = DefaultRESTTimeout
	}
	return r, nil
}

// BaseURL is the API root the client talks to.
func (r *REST) BaseURL() string { return r.base }

// ConnectionID is the Call Control Application the client places calls from.
func (r *REST) ConnectionID() string { return r.connection }

// String describes the client without its API key, so printing one is safe.
func (r *REST) String() string { return "telnyx.REST(" + r.base + ")" }

// GoString keeps %#v from printing the API key.
func (r *REST) GoString() string { return r.String() }

// Command sends call control command action (answer, hangup, transfer, streaming_start,
// …) to call callControlID: POST /calls/{id}/actions/{action} with body as JSON. Its
// errors are classified as Control's are (carrier.ErrAuth, …); a call that has already
// ended gives an error matching both ErrCallEnded and carrier.ErrRejected, so the caller
// decides what that means for its command.
func (r *REST) Command(ctx context.Context, callControlID, action string, body any) error {
	op := "command " + action
	if err := checkID(callControlID); err != nil {
		return classify(&voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err})
	}
	if action == "" || strings.ContainsAny(action, "/?#% ") {
		return classify(&voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput,
			Err: fmt.Errorf("%q is not a call control command", action)})
	}
	return classify(r.do(ctx, op, http.MethodPost, "/calls/"+url.PathEscape(callControlID)+"/actions/"+action, body, nil))
}

// maxIDLength bounds the ids the client puts in a path.
const maxIDLength = 256

// checkID refuses an id that is empty, too long or not printable ASCII.
func checkID(id string) error {
	if id == "" || len(id) > maxIDLength {
		return fmt.Errorf("id %q is empty or longer than %d bytes", voice.Clip(id, 64), maxIDLength)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f || id[i] == '/' {
			return fmt.Errorf("id %q holds a character that cannot be in a Telnyx id", voice.Clip(id, 64))
		}
	}
	return nil
}

// maxResponse bounds how much of an answer is read.
const maxResponse = 8 << 20

// errRequestTimeout is the cause of a request cut short by the client's own Timeout.
var errRequestTimeout = errors.New("request timed out")

// do sends one request to path (under the base, starting with /) with in as its JSON body
// (nil: none) and decodes the JSON answer into out (nil: ignored), classifying every
// failure as a *voice.ProviderError.
func (r *REST) do(ctx context.Context, op, method, path string, in, out any) error {
	fail := func(kind voice.ErrorKind, status int, err error) error {
		return &voice.ProviderError{Provider: restProvider, Op: op, Kind: kind, Status: status, Err: err}
	}
	rctx, cancel := context.WithTimeoutCause(ctx, r.timeout, errRequestTimeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return fail(voice.KindBadInput, 0, fmt.Errorf("encode request: %w", err))
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(rctx, method, r.base+path, body)
	if err != nil {
		return fail(voice.KindBadInput, 0, fmt.Errorf("build request: %w", err))
	}
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "handset (telnyx-rest)")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return r.transportError(ctx, rctx, fail, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return r.transportError(ctx, rctx, fail, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail(voice.KindFromStatus(resp.StatusCode), resp.StatusCode, restErrorOf(resp.StatusCode, data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fail(voice.KindProtocol, resp.StatusCode, fmt.Errorf("answer is not the expected JSON: %w", err))
	}
	return nil
}

// transportError classifies a failure to send a request or read its answer.
func (r *REST) transportError(ctx, rctx context.Context, fail func(voice.ErrorKind, int, error) error, err error) error {
	switch {
	case ctx.Err() != nil:
		return fail(voice.KindOf(ctx.Err()), 0, ctx.Err())
	case context.Cause(rctx) == errRequestTimeout:
		return fail(voice.KindTimeout, 0, fmt.Errorf("no answer from %s within %v", r.base, r.timeout))
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return fail(voice.KindTimeout, 0, err)
	}
	return fail(voice.KindTransient, 0, err)
}
