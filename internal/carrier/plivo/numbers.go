package plivo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// Account is the Plivo account the credentials belong to (GET the account resource).
type Account struct {
	AuthID      string `json:"auth_id"`
	Name        string `json:"name"`
	AccountType string `json:"account_type"` // standard, trial, … (words unconfirmed)
	State       string `json:"state"`        // field unconfirmed: empty when Plivo has none
	CashCredits string `json:"cash_credits"`
}

// Number is one of the account's phone numbers. Its calls go to the application it is
// linked to.
type Number struct {
	Number string `json:"number"` // E.164 without the "+"
	Alias  string `json:"alias"`
	// Application is the linked application's resource URI (…/Application/{app_id}/);
	// empty when none.
	Application  string `json:"application"`
	VoiceEnabled bool   `json:"voice_enabled"`
}

// AppID is the id of the application the number is linked to; "" when none.
func (n Number) AppID() string {
	parts := strings.Split(strings.TrimRight(n.Application, "/"), "/")
	if len(parts) < 2 || parts[len(parts)-2] != "Application" {
		return ""
	}
	return parts[len(parts)-1]
}

// Application is a Plivo application: where its numbers' calls are answered.
type Application struct {
	AppID        string `json:"app_id"`
	AppName      string `json:"app_name"`
	AnswerURL    string `json:"answer_url"`
	AnswerMethod string `json:"answer_method"`
	HangupURL    string `json:"hangup_url"`
	HangupMethod string `json:"hangup_method"`
}

// Account fetches the account the credentials belong to: the cheapest check that they
// work.
func (r *REST) Account(ctx context.Context) (Account, error) {
	var a Account
	err := r.do(ctx, "get account", http.MethodGet, "", nil, &a)
	return a, err
}

// numbersPageSize is the limit the client asks for per page.
const numbersPageSize = 20

// maxPages bounds how many pages a list follows, against a server that pages forever.
const maxPages = 1000

// Numbers lists all of the account's phone numbers, page by page (limit and offset).
func (r *REST) Numbers(ctx context.Context) ([]Number, error) {
	const op = "list numbers"
	var all []Number
	for page := range maxPages {
		var p struct {
			Meta struct {
				TotalCount int     `json:"total_count"`
				Next       *string `json:"next"`
			} `json:"meta"`
			Objects []Number `json:"objects"`
		}
		q := url.Values{"limit": {strconv.Itoa(numbersPageSize)}, "offset": {strconv.Itoa(page * numbersPageSize)}}
		if err := r.do(ctx, op, http.MethodGet, "Number/?"+q.Encode(), nil, &p); err != nil {
			return nil, err
		}
		all = append(all, p.Objects...)
		if len(p.Objects) == 0 || p.Meta.Next == nil || *p.Meta.Next == "" || len(all) >= p.Meta.TotalCount {
			return all, nil
		}
	}
	return nil, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindProtocol,
		Err: fmt.Errorf("more than %d pages", maxPages)}
}

// NumberNotFoundError says the account has no such number.
type NumberNotFoundError struct {
	Number  string // the number looked for, E.164
	Account string // the Auth ID
}

func (e *NumberNotFoundError) Error() string {
	return fmt.Sprintf("%s is not a phone number of Plivo account %s: buy or port one in the Plivo console (Phone Numbers)", e.Number, e.Account)
}

// ErrNumberNotFound matches a *NumberNotFoundError with errors.Is.
var ErrNumberNotFound = errors.New("phone number not found")

// Is makes errors.Is(err, ErrNumberNotFound) true.
func (e *NumberNotFoundError) Is(target error) bool { return target == ErrNumberNotFound }

// FindNumber returns the account's number e164, which may be written loosely. When the
// account has no such number the error wraps a *NumberNotFoundError.
func (r *REST) FindNumber(ctx context.Context, e164 string) (Number, error) {
	const op = "find number"
	want, err := carrier.NormalizeNumber(e164)
	if err != nil {
		return Number{}, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err}
	}
	var n Number
	err = r.do(ctx, op, http.MethodGet, "Number/"+plain(want)+"/", nil, &n)
	var pe *voice.ProviderError
	if errors.As(err, &pe) && pe.Status == http.StatusNotFound {
		return Number{}, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Status: pe.Status,
			Err: &NumberNotFoundError{Number: want, Account: r.id}}
	}
	return n, err
}

// LinkNumber links number e164 to application appID (POST Number/{number}/ app_id): its
// calls then go to the application's answer URL.
func (r *REST) LinkNumber(ctx context.Context, e164, appID string) error {
	const op = "update number"
	want, err := carrier.NormalizeNumber(e164)
	if err == nil && !validAppID(appID) {
		err = fmt.Errorf("%q is not a Plivo application id (digits)", voice.Clip(appID, 40))
	}
	if err != nil {
		return &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err}
	}
	return r.do(ctx, op, http.MethodPost, "Number/"+plain(want)+"/", url.Values{"app_id": {appID}}, nil)
}

// Application fetches application appID.
func (r *REST) Application(ctx context.Context, appID string) (Application, error) {
	const op = "get application"
	if !validAppID(appID) {
		return Application{}, &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput,
			Err: fmt.Errorf("%q is not a Plivo application id (digits)", voice.Clip(appID, 40))}
	}
	var a Application
	err := r.do(ctx, op, http.MethodGet, "Application/"+appID+"/", nil, &a)
	return a, err
}

// SetApplicationURLs points application appID's answer URL (POST) at answerURL and, when
// hangupURL is set, its hangup URL (POST) at hangupURL. Every number linked to the
// application follows.
func (r *REST) SetApplicationURLs(ctx context.Context, appID, answerURL, hangupURL string) error {
	const op = "update application"
	err := absoluteURL("answer_url", answerURL)
	if err == nil && hangupURL != "" {
		err = absoluteURL("hangup_url", hangupURL)
	}
	if err == nil && !validAppID(appID) {
		err = fmt.Errorf("%q is not a Plivo application id (digits)", voice.Clip(appID, 40))
	}
	if err != nil {
		return &voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err}
	}
	form := url.Values{"answer_url": {answerURL}, "answer_method": {http.MethodPost}}
	if hangupURL != "" {
		form.Set("hangup_url", hangupURL)
		form.Set("hangup_method", http.MethodPost)
	}
	return r.do(ctx, op, http.MethodPost, "Application/"+appID+"/", form, nil)
}

// validAppID reports whether id is an application id: digits, bounded.
func validAppID(id string) bool {
	if id == "" || len(id) > 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return false
		}
	}
	return true
}
