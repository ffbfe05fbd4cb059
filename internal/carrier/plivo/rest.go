package plivo

import (
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
	// DefaultRESTURL is Plivo's API root; the client appends /v1/Account/{auth_id}/….
	DefaultRESTURL = "https://api.plivo.com"
	// DefaultRESTTimeout bounds each request, paging included one page at a time.
	DefaultRESTTimeout = 10 * time.Second
)

// restVersion is the API version path every resource lives under.
const restVersion = "/v1"

// restProvider names Plivo in errors.
const restProvider = "plivo"

// RESTOptions configure a REST client.
type RESTOptions struct {
	// BaseURL is the API root (HANDSET_PLIVO_API_URL), default DefaultRESTURL; a root
	// that already ends in /v1 is accepted.
	BaseURL string
	// AuthID (PLIVO_AUTH_ID) and AuthToken (PLIVO_AUTH_TOKEN) authenticate every request
	// with HTTP basic auth; the token also keys the V3 signatures of Plivo's requests.
	AuthID, AuthToken string
	// HTTPClient sends the requests (default a client on http.DefaultTransport).
	HTTPClient *http.Client
	// Timeout bounds each request (default DefaultRESTTimeout).
	Timeout time.Duration
}

// REST is a small client of Plivo's REST API. Its errors are *voice.ProviderError
// (Provider "plivo") wrapping an *APIError when Plivo answered one; they never carry the
// auth token. Safe for concurrent use.
type REST struct {
	base        string // scheme://host[/prefix], without /v1
	id, token   string
	client      *http.Client
	timeout     time.Duration
	accountPath string // /v1/Account/{auth_id}/
}

// NewREST checks o and returns a client. It makes no request.
func NewREST(o RESTOptions) (*REST, error) {
	id := strings.TrimSpace(o.AuthID)
	switch {
	case id == "":
		return nil, errors.New("PLIVO_AUTH_ID is not set: copy the Auth ID from the Plivo console's overview page")
	case !validAuthID(id):
		return nil, fmt.Errorf("PLIVO_AUTH_ID %q is not an Auth ID: it is 20 letters and digits (MA… or SA…), as shown in the Plivo console", voice.Clip(id, 40))
	}
	switch {
	case o.AuthToken == "":
		return nil, errors.New("PLIVO_AUTH_TOKEN is not set: copy the Auth Token from the Plivo console's overview page")
	case strings.TrimSpace(o.AuthToken) != o.AuthToken || strings.ContainsAny(o.AuthToken, " \t\r\n"):
		return nil, errors.New("PLIVO_AUTH_TOKEN contains spaces or line breaks: copy the Auth Token from the Plivo console again")
	}
	base, err := carrier.APIRoot("HANDSET_PLIVO_API_URL", o.BaseURL, DefaultRESTURL, "http://127.0.0.1:8082")
	if err != nil {
		return nil, err
	}
	base = strings.TrimRight(strings.TrimSuffix(base, restVersion), "/")
	r := &REST{base: base, id: id, token: o.AuthToken, client: o.HTTPClient, timeout: o.Timeout,
		accountPath: restVersion + "/Account/" + id + "/"}
	if r.client == nil {
		r.client = &http.Client{}
	}
	if r.timeout <= 0 {
		r.timeout = DefaultRESTTimeout
	}
	return r, nil
}

// validAuthID reports whether id looks like a Plivo Auth ID: 20 ASCII letters and digits.
func validAuthID(id string) bool { return len(id) == 20 && alphanumeric(id) }

// AuthID is the account the client acts for.
func (r *REST) AuthID() string { return r.id }

// BaseURL is the API root the client talks to, without /v1.
func (r *REST) BaseURL() string { return r.base }

// String describes the client without its auth token, so printing one is safe.
func (r *REST) String() string { return "plivo.REST(" + r.base + ", " + r.id + ")" }

// GoString keeps %#v from printing the auth token.
func (r *REST) GoString() string { return r.String() }

// APIError is Plivo's error answer, {"api_id": …, "error": …}.
type APIError struct {
	Status  int    // HTTP status
	APIID   string // Plivo's id of the request, for its support; may be empty
	Message string // Plivo's error (a string, or an object written out), or the status text
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("Plivo error (HTTP %d): %s", e.Status, e.Message)
	if e.APIID != "" {
		msg += " (api_id " + e.APIID + ")"
	}
	return msg
}

// maxResponse bounds how much of an answer is read.
const maxResponse = 8 << 20

// do sends one request to path, which is relative to the account's root
// (/v1/Account/{auth_id}/) and ends in "/" before any query, and decodes the JSON answer
// into out (nil: the answer is not read). Every failure is a *voice.ProviderError.
func (r *REST) do(ctx context.Context, op, method, path string, form url.Values, out any) error {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+r.accountPath+path, body)
	if err != nil {
		return &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: fmt.Errorf("build request: %w", err)}
	}
	req.SetBasicAuth(r.id, r.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "handset (plivo-rest)")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	api := carrier.APICall{Provider: restProvider, Client: r.client, Timeout: r.timeout, Limit: maxResponse,
		Refusal: func(status int, data []byte) error { return apiError(status, data) }}
	return api.JSON(ctx, op, req, out)
}

// apiError reads Plivo's error body, whose "error" is a string or an object, or
// describes a body that is not one.
func apiError(status int, data []byte) *APIError {
	var b struct {
		APIID string          `json:"api_id"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &b) == nil && len(b.Error) > 0 {
		var text string
		if json.Unmarshal(b.Error, &text) != nil {
			text = string(b.Error)
		}
		return &APIError{Status: status, APIID: voice.Clip(b.APIID, 64), Message: voice.Clip(oneLine(text), 300)}
	}
	msg := http.StatusText(status)
	if snippet := oneLine(string(data)); snippet != "" {
		msg += ": " + voice.Clip(snippet, 200)
	}
	return &APIError{Status: status, Message: msg}
}

func oneLine(s string) string {
	return strings.ToValidUTF8(strings.Join(strings.Fields(s), " "), "?")
}
