package telnyx

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/voice"
)

// PhoneNumber is one of the account's numbers (GET /phone_numbers).
type PhoneNumber struct {
	ID             string `json:"id"`
	PhoneNumber    string `json:"phone_number"`
	ConnectionID   string `json:"connection_id"`
	ConnectionName string `json:"connection_name"`
	Status         string `json:"status"`
}

// Application is a Call Control Application: where its numbers' calls' events go.
type Application struct {
	ID                      string `json:"id"`
	ApplicationName         string `json:"application_name"`
	WebhookEventURL         string `json:"webhook_event_url"`
	WebhookEventFailoverURL string `json:"webhook_event_failover_url"`
	WebhookAPIVersion       string `json:"webhook_api_version"`
	WebhookTimeoutSecs      int    `json:"webhook_timeout_secs"`
	FirstCommandTimeout     bool   `json:"first_command_timeout"`
	FirstCommandTimeoutSecs int    `json:"first_command_timeout_secs"`
	Active                  bool   `json:"active"`
}

// Balance is the account's balance (GET /balance): the cheapest check that a key works.
type Balance struct {
	Balance         string `json:"balance"`
	AvailableCredit string `json:"available_credit"`
	Currency        string `json:"currency"`
	CreditLimit     string `json:"credit_limit"`
	Pending         string `json:"pending"`
}

// Balance fetches the account's balance.
func (r *REST) Balance(ctx context.Context) (Balance, error) {
	var out struct {
		Data Balance `json:"data"`
	}
	err := r.do(ctx, "get balance", http.MethodGet, "/balance", nil, &out)
	return out.Data, classify(err)
}

// Application fetches Call Control Application id.
func (r *REST) Application(ctx context.Context, id string) (Application, error) {
	const op = "get application"
	if err := checkID(id); err != nil {
		return Application{}, classify(&voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput,
			Err: fmt.Errorf("TELNYX_CONNECTION_ID: %w", err)})
	}
	var out struct {
		Data Application `json:"data"`
	}
	err := r.do(ctx, op, http.MethodGet, "/call_control_applications/"+url.PathEscape(id), nil, &out)
	return out.Data, classify(err)
}

// SetWebhookURL points application id's events at webhookURL with webhook_api_version 2
// (the envelope Handset reads). Every number on the application follows.
func (r *REST) SetWebhookURL(ctx context.Context, id, webhookURL string) (Application, error) {
	const op = "update application"
	if err := checkID(id); err != nil {
		return Application{}, classify(&voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput,
			Err: fmt.Errorf("TELNYX_CONNECTION_ID: %w", err)})
	}
	var out struct {
		Data Application `json:"data"`
	}
	body := map[string]string{"webhook_event_url": webhookURL, "webhook_api_version": "2"}
	err := r.do(ctx, op, http.MethodPatch, "/call_control_applications/"+url.PathEscape(id), body, &out)
	return out.Data, classify(err)
}

// SetConnection assigns number id to connection (PATCH /phone_numbers/{id}).
func (r *REST) SetConnection(ctx context.Context, id, connection string) (PhoneNumber, error) {
	const op = "update number"
	if err := checkID(id); err != nil {
		return PhoneNumber{}, classify(&voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err})
	}
	var out struct {
		Data PhoneNumber `json:"data"`
	}
	err := r.do(ctx, op, http.MethodPatch, "/phone_numbers/"+url.PathEscape(id), map[string]string{"connection_id": connection}, &out)
	return out.Data, classify(err)
}

// Numbers lists every one of the account's numbers, following the pages.
func (r *REST) Numbers(ctx context.Context) ([]PhoneNumber, error) {
	return r.listNumbers(ctx, "list numbers", "")
}

// FindNumber is the account's number e164 (written loosely is fine); an error wrapping
// carrier.ErrNotFound when there is none.
func (r *REST) FindNumber(ctx context.Context, e164 string) (PhoneNumber, error) {
	const op = "find number"
	want, err := carrier.NormalizeNumber(e164)
	if err != nil {
		return PhoneNumber{}, classify(&voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindBadInput, Err: err})
	}
	found, err := r.listNumbers(ctx, op, want)
	if err != nil {
		return PhoneNumber{}, err
	}
	for _, n := range found {
		if n.PhoneNumber == want {
			return n, nil
		}
	}
	return PhoneNumber{}, carrier.Classify(carrier.ErrNotFound, &voice.ProviderError{Provider: restProvider, Op: op,
		Kind: voice.KindBadInput, Err: fmt.Errorf("%s is not a phone number of this Telnyx account", want)})
}

// Paging of the numbers list.
const (
	numbersPageSize = 250
	maxPages        = 1000 // against a server that pages forever
)

// listNumbers reads every page of /phone_numbers, filtered to one number when filter is set.
func (r *REST) listNumbers(ctx context.Context, op, filter string) ([]PhoneNumber, error) {
	var all []PhoneNumber
	for page := 1; page <= maxPages; page++ {
		q := url.Values{"page[number]": {strconv.Itoa(page)}, "page[size]": {strconv.Itoa(numbersPageSize)}}
		if filter != "" {
			q.Set("filter[phone_number]", filter)
		}
		var out struct {
			Data []PhoneNumber `json:"data"`
			Meta struct {
				TotalPages int `json:"total_pages"`
				PageNumber int `json:"page_number"`
			} `json:"meta"`
		}
		if err := r.do(ctx, op, http.MethodGet, "/phone_numbers?"+q.Encode(), nil, &out); err != nil {
			return nil, classify(err)
		}
		all = append(all, out.Data...)
		if page >= out.Meta.TotalPages || len(out.Data) == 0 {
			return all, nil
		}
	}
	return nil, classify(&voice.ProviderError{Provider: restProvider, Op: op, Kind: voice.KindProtocol,
		Err: fmt.Errorf("more than %d pages", maxPages)})
}
