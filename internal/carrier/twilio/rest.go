package twilio

import (
	"context"
	"encoding/hex"
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
	// DefaultRESTURL is Twilio's REST API root; the client appends /2010-04-01/….
	DefaultRESTURL = "https://api.twilio.com"
	// DefaultRESTTimeout bounds each request, paging included one page at a time.
	DefaultRESTTimeout = 10 * time.Second
)

// restVersion is the API version path every resource lives under.
const restVersion = "/2010-04-01"

// restProvider names Twilio in errors.
const restProvider = "twilio"

// Twilio error codes the client and its callers look for
// (https://www.twilio.com/docs/api/errors).
const (
	ErrorCodeAuthenticate = 20003 // wrong account SID or auth token
	ErrorCodeNotFound     = 20404 // no such resource
)

// RESTOptions configure a REST client.
type RESTOptions struct {
	// BaseURL is the API root (HANDSET_TWILIO_API_URL), default DefaultRESTURL; the client
	// appends /2010-04-01/…. A root that already ends in /2010-04-01 is accepted.
	BaseURL string
	// AccountSID (TWILIO_ACCOUNT_SID, AC + 32 hex digits) and AuthToken
	// (TWILIO_AUTH_TOKEN) authenticate every request with HTTP basic auth.
	AccountSID, AuthToken string
	// HTTPClient sends the requests (default a client on http.DefaultTransport).
	HTTPClient *http.Client
	// Timeout bounds each request (default DefaultRESTTimeout).
	Timeout time.Duration
}

// REST is a small client of Twilio's REST API: the account and its incoming phone
// numbers. Its errors are *voice.ProviderError (Provider "twilio") wrapping an *APIError
// when Twilio answered one; they never carry the auth token. Safe for concurrent use.
type REST struct {
	base       string // scheme://host[/prefix], without /2010-04-01
	sid, token string
	client     *http.Client
	timeout    time.Duration
}

// NewREST checks o and returns a client. It makes no request.
func NewREST(o RESTOptions) (*REST, error) {
	sid := strings.TrimSpace(o.AccountSID)
	switch {
	case sid == "":
		return nil, errors.New("TWILIO_ACCOUNT_SID is not set: copy the Account SID (AC…) from the Twilio console")
	case strings.HasPrefix(sid, "SK"):
		return nil, fmt.Errorf("TWILIO_ACCOUNT_SID %q is an API key SID: set the Account SID (AC…) from the Twilio console, and its auth token in TWILIO_AUTH_TOKEN", sid)
	case !validSID(sid, "AC"):
		return nil, fmt.Errorf("TWILIO_ACCOUNT_SID %q is not an Account SID: it is AC followed by 32 hexadecimal digits (34 characters), as shown in the Twilio console", sid)
	}
	switch {
	case o.AuthToken == "":
		return nil, errors.New("TWILIO_AUTH_TOKEN is not set: copy the Auth Token from the Twilio console")
	case strings.TrimSpace(o.AuthToken) != o.AuthToken || strings.ContainsAny(o.AuthToken, " \t\r\n"):
		return nil, errors.New("TWILIO_AUTH_TOKEN contains spaces or line breaks: copy the Auth Token from the Twilio console again")
	}
	base, err := carrier.APIRoot("HANDSET_TWILIO_API_URL", o.BaseURL, DefaultRESTURL, "http://127.0.0.1:8081")
	if err != nil {
		return nil, err
	}
	base = strings.TrimRight(strings.TrimSuffix(base, restVersion), "/")
	r := &REST{base: base, sid: sid, token: o.AuthToken, client: o.HTTPClient, timeout: o.Timeout}
	if r.client == nil {
		r.client = &http.Client{}
	}
	if r.timeout <= 0 {
		r.timeout = DefaultRESTTimeout
	}
	return r, nil
}

// AccountSID is the account the client acts for.
func (r *REST) AccountSID() string { return r.sid }

// BaseURL is the API root the client talks to, without /2010-04-01.
func (r *REST) BaseURL() string { return r.base }

// String describes the client without its auth token, so printing one is safe.
func (r *REST) String() string { return "twilio.REST(" + r.base + ", " + r.sid + ")" }

// GoString keeps %#v from printing the auth token.
func (r *REST) GoString() string { return r.String() }

// Account is the Twilio account the credentials belong to.
type Account struct {
	SID          string `json:"sid"`
	FriendlyName string `json:"friendly_name"`
	Status       string `json:"status"` // active, suspended or closed
	Type         string `json:"type"`   // Trial or Full
}

// Number is one of the account's incoming phone numbers.
type Number struct {
	SID          string `json:"sid"`          // PN…
	PhoneNumber  string `json:"phone_number"` // E.164
	FriendlyName string `json:"friendly_name"`
	VoiceURL     string `json:"voice_url"`
	VoiceMethod  string `json:"voice_method"`
	// VoiceApplicationSID (AP…), when set, overrides VoiceURL: Twilio asks the TwiML app.
	VoiceApplicationSID string `json:"voice_application_sid"`
	StatusCallback      string `json:"status_callback"`
}

// APIError is Twilio's JSON error answer.
type APIError struct {
	Status   int    // HTTP status
	Code     int    // Twilio error code, like 20003; 0 when the body was not Twilio's
	Message  string // Twilio's message, or the HTTP status text
	MoreInfo string // documentation URL of the code
}

func (e *APIError) Error() string {
	if e.Code == 0 {
		return e.Message
	}
	msg := fmt.Sprintf("Twilio error %d: %s", e.Code, e.Message)
	if e.MoreInfo != "" {
		msg += " (" + e.MoreInfo + ")"
	}
	return msg
}

// NumberNotFoundError says the account has no such number, and which numbers it has.
// FindNumber returns it inside a KindBadInput *voice.ProviderError.
type NumberNotFoundError struct {
	Number  string   // the number looked for, normalised
	Account string   // account SID
	Have    []Number // the account's numbers
}

func (e *NumberNotFoundError) Error() string {
	msg := fmt.Sprintf("%s is not a phone number of Twilio account %s", e.Number, e.Account)
	if len(e.Have) == 0 {
		return msg + ", which has no phone numbers: buy one in the Twilio console (Phone Numbers > Manage > Buy a number)"
	}
	nums := make([]string, len(e.Have))
	for i, n := range e.Have {
		nums[i] = n.PhoneNumber
	}
	return msg + "; its numbers are " + strings.Join(nums, ", ")
}

// ErrNumberNotFound matches a *NumberNotFoundError with errors.Is.
var ErrNumberNotFound = errors.New("phone number not found")

// Is makes errors.Is(err, ErrNumberNotFound) true.
func (e *NumberNotFoundError) Is(target error) bool { return target == ErrNumberNotFound }

// Account fetches the account the credentials belong to; it is the cheapest check that
// they work.
func (r *REST) Account(ctx context.Context) (Account, error) {
	var a Account
	err := r.do(ctx, "get account", http.MethodGet, r.accountPath()+".json", nil, &a)
	return a, err
}

// Numbers lists all of the account's incoming phone numbers, following every page.
func (r *REST) Numbers(ctx context.Context) ([]Number, error) {
	return r.list(ctx, "list numbers", nil)
}

// FindNumber returns the account's number e164, which may be written loosely ("+1 (415)
// 555-0100"; see NormalizeNumber). When the account has no such number the error is a
// KindBadInput *voice.ProviderError wrapping a *NumberNotFoundError that lists the
// account's numbers.
func (r *REST) FindNumber(ctx context.Context, e164 string) (Number, error) {
	const op = "find number"
	want, err := carrier.NormalizeNumber(e164)
	if err != nil {
		return Number{}, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err}
	}
	// Twilio's PhoneNumber filter matches partial numbers, so pick the exact one.
	found, err := r.list(ctx, op, url.Values{"PhoneNumber": {want}})
	if err != nil {
		return Number{}, err
	}
	for _, n := range found {
		if n.PhoneNumber == want {
			return n, nil
		}
	}
	all, err := r.Numbers(ctx)
	if err != nil {
		return Number{}, err
	}
	return Number{}, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput,
		Err: &NumberNotFoundError{Number: want, Account: r.sid, Have: all}}
}

// SetVoiceURL points number sid (PN…) at voiceURL with method POST and clears its
// VoiceApplicationSid, which would otherwise override the URL. A non-empty statusCallback
// becomes the number's StatusCallback (method POST); an empty one leaves it alone. It
// returns the number as Twilio holds it afterwards.
func (r *REST) SetVoiceURL(ctx context.Context, sid, voiceURL, statusCallback string) (Number, error) {
	const op = "update number"
	if !validSID(sid, "PN") {
		return Number{}, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput,
			Err: fmt.Errorf("%q is not a phone number SID (PN followed by 32 hexadecimal digits): look it up with FindNumber", sid)}
	}
	form := url.Values{
		"VoiceUrl":            {voiceURL},
		"VoiceMethod":         {http.MethodPost},
		"VoiceApplicationSid": {""},
	}
	if statusCallback != "" {
		form.Set("StatusCallback", statusCallback)
		form.Set("StatusCallbackMethod", http.MethodPost)
	}
	var n Number
	err := r.do(ctx, op, http.MethodPost, r.accountPath()+"/IncomingPhoneNumbers/"+sid+".json", form, &n)
	return n, err
}

func (r *REST) accountPath() string { return restVersion + "/Accounts/" + r.sid }

// maxPages bounds how many pages a list follows, against a server that pages forever.
const maxPages = 1000

// listPageSize is the PageSize the client asks for: Twilio's maximum.
const listPageSize = 1000

// list reads every page of the IncomingPhoneNumbers list with query q.
func (r *REST) list(ctx context.Context, op string, q url.Values) ([]Number, error) {
	v := url.Values{"PageSize": {fmt.Sprint(listPageSize)}}
	for k, vs := range q {
		v[k] = vs
	}
	path := r.accountPath() + "/IncomingPhoneNumbers.json?" + v.Encode()
	var all []Number
	seen := map[string]bool{}
	for range maxPages {
		seen[path] = true
		var page struct {
			Numbers []Number `json:"incoming_phone_numbers"`
			Next    *string  `json:"next_page_uri"`
		}
		if err := r.do(ctx, op, http.MethodGet, path, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Numbers...)
		if page.Next == nil || *page.Next == "" {
			return all, nil
		}
		next := *page.Next
		if !strings.HasPrefix(next, restVersion+"/") || seen[next] {
			return nil, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindProtocol,
				Err: fmt.Errorf("unusable next_page_uri %q", next)}
		}
		path = next
	}
	return nil, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindProtocol,
		Err: fmt.Errorf("more than %d pages", maxPages)}
}

// maxResponse bounds how much of an answer is read.
const maxResponse = 8 << 20

// do sends one request to path (which starts with /2010-04-01) and decodes the JSON
// answer into out, classifying every failure as a *voice.ProviderError.
func (r *REST) do(ctx context.Context, op, method, path string, form url.Values, out any) error {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, r.base+path, body)
	if err != nil {
		return &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: fmt.Errorf("build request: %w", err)}
	}
	req.SetBasicAuth(r.sid, r.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "handset (twilio-rest)")
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	call := carrier.APICall{Provider: restProvider, Client: r.client, Timeout: r.timeout, Limit: maxResponse,
		Refusal: func(status int, body []byte) error { return apiError(status, body) }}
	return call.JSON(ctx, op, req, out)
}

// apiError reads Twilio's JSON error body, or describes a body that is not one.
func apiError(status int, data []byte) *APIError {
	var b struct {
		Code     int    `json:"code"`
		Message  string `json:"message"`
		MoreInfo string `json:"more_info"`
	}
	if json.Unmarshal(data, &b) == nil && (b.Code != 0 || b.Message != "") {
		return &APIError{Status: status, Code: b.Code, Message: b.Message, MoreInfo: b.MoreInfo}
	}
	msg := http.StatusText(status)
	if snippet := strings.TrimSpace(string(data)); snippet != "" {
		if len(snippet) > 200 {
			snippet = snippet[:200] + "…"
		}
		msg += ": " + strings.ToValidUTF8(strings.Join(strings.Fields(snippet), " "), "?")
	}
	return &APIError{Status: status, Message: msg}
}

// validSID reports whether sid is prefix followed by 32 hex digits.
func validSID(sid, prefix string) bool {
	rest, ok := strings.CutPrefix(sid, prefix)
	if !ok || len(rest) != 32 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}
