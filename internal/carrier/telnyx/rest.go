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

	"github.com/handset-voice/handset/internal/carrier"
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
	base, err := carrier.APIRoot("HANDSET_TELNYX_API_URL", o.BaseURL, DefaultRESTURL, "http://127.0.0.1:8081/v2")
	if err != nil {
		return nil, err
	}
	r := &REST{base: base, key: o.APIKey, connection: strings.TrimSpace(o.ConnectionID),
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

// do sends one request to path (under the base, starting with /) with in as its JSON body
// (nil: none) and decodes the JSON answer into out (nil: ignored); its failures are
// *voice.ProviderError.
func (r *REST) do(ctx context.Context, op, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: fmt.Errorf("encode request: %w", err)}
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, r.base+path, body)
	if err != nil {
		return &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: fmt.Errorf("build request: %w", err)}
	}
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "handset (telnyx-rest)")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	call := carrier.APICall{Provider: restProvider, Client: r.client, Timeout: r.timeout, Limit: maxResponse,
		Refusal: func(status int, body []byte) error { return restErrorOf(status, body) }}
	return call.JSON(ctx, op, req, out)
}
