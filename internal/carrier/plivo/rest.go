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
		return nil, fmt.Errorf("HANDSET_PLIVO_API_URL %q is not an http(s) URL without credentials: leave it empty for %s, or set the root of a proxy or fake like http://127.0.0.1:8082", shown, DefaultRESTURL)
	}
	base = strings.TrimRight(u.String(), "/")
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

// errRequestTimeout is the cause of a request cut short by the client's own Timeout.
var errRequestTimeout = errors.New("request timed out")

// do sends one request to path, which is relative to the account's root
// (/v1/Account/{auth_id}/) and ends in "/" before any query, and decodes the JSON answer
// into out (nil: the answer is not read). It classifies every failure as a
// *voice.ProviderError.
func (r *REST) do(ctx context.Context, op, method, path string, form url.Values, out any) error {
	fail := func(kind voice.ErrorKind, status int, err error) error {
		return &voice.ProviderError{Provider: restProvider, Op: op, Kind: kind, Status: status, Err: err}
	}
	rctx, cancel := context.WithTimeoutCause(ctx, r.timeout, errRequestTimeout)
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(rctx, method, r.base+r.accountPath+path, body)
	if err != nil {
		return fail(voice.KindBadInput, 0, fmt.Errorf("build request: %w", err))
	}
	req.SetBasicAuth(r.id, r.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "handset (plivo-rest)")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
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
		return fail(voice.KindFromStatus(resp.StatusCode), resp.StatusCode, apiError(resp.StatusCode, data))
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
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
