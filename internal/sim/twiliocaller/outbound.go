package twiliocaller

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// What Twilio does for a call it placed itself (an outbound-api call made through the REST
// API, as internal/sim/faketwilio fakes it): it asks any webhook URL for TwiML, query string
// and all, reads the whole document itself, and connects the <Connect><Stream> it finds.

// SendWebhook makes one signed request to rawURL as Twilio makes its webhooks and status
// callbacks, and returns the answer whatever its status; an error means no answer arrived.
// With method POST (or "") params are the form body and the signature covers rawURL exactly
// as given (its own query included) followed by the params. With GET the params are added
// to the query and the signature covers the resulting URL alone. It uses o.AuthToken,
// o.HTTPClient and o.WebhookTimeout and ignores the rest of o.
func SendWebhook(ctx context.Context, o Options, method, rawURL string, params url.Values) (WebhookResponse, error) {
	o = o.withDefaults()
	switch strings.ToUpper(method) {
	case "", http.MethodPost:
		return sendWebhook(ctx, o, http.MethodPost, rawURL, params, Signature(o.AuthToken, rawURL, params))
	case http.MethodGet:
		u, err := url.Parse(rawURL)
		if err != nil {
			return WebhookResponse{}, fmt.Errorf("twiliocaller: webhook url %q: %w", rawURL, err)
		}
		if q := params.Encode(); q != "" {
			if u.RawQuery != "" {
				u.RawQuery += "&"
			}
			u.RawQuery += q
		}
		full := u.String()
		resp, err := sendWebhook(ctx, o, http.MethodGet, full, nil, Signature(o.AuthToken, full, nil))
		resp.Params = params
		return resp, err
	default:
		return WebhookResponse{}, fmt.Errorf("twiliocaller: webhook method %q: want GET or POST", method)
	}
}

// sendWebhook sends one request with X-Twilio-Signature sig (none when empty); a POST
// carries params as its form. o has its defaults.
func sendWebhook(ctx context.Context, o Options, method, target string, params url.Values, sig string) (WebhookResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, o.WebhookTimeout)
	defer cancel()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(params.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return WebhookResponse{}, fmt.Errorf("twiliocaller: webhook request: %w", err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("User-Agent", "TwilioProxy/1.1")
	if sig != "" {
		req.Header.Set(SignatureHeader, sig)
	}
	idem := o.IdempotencyToken
	if idem == "" {
		idem = NewSid("")
	}
	req.Header.Set(IdempotencyHeader, idem)
	resp, err := o.HTTPClient.Do(req)
	if err != nil {
		return WebhookResponse{}, fmt.Errorf("twiliocaller: %s webhook: %w", strings.ToLower(method), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxWebhookBody))
	if err != nil {
		return WebhookResponse{}, fmt.Errorf("twiliocaller: read webhook answer: %w", err)
	}
	return WebhookResponse{
		Status:      resp.StatusCode,
		ContentType: resp.Header.Get("Content-Type"),
		Body:        data,
		Params:      params,
	}, nil
}

// Connect opens the Media Streams WebSocket that tw names, for TwiML read some other way
// than Dial's webhook (an outbound call's Url or inline Twiml), and then behaves exactly
// like a Call from Dial: connected, start with tw.Parameters, media at real-time pace. Only
// the stream fields of opts matter (AccountSid, AuthToken, CallSid, DialURL,
// InsecureStreamURL, HTTPClient, Clock, Echo, Lean, Logger); with BaseURL empty the stream
// URL is dialled as written. Errors are *StreamDialError.
func Connect(ctx context.Context, opts Options, tw StreamTwiML) (*Call, error) {
	o := opts.withDefaults()
	if err := CheckStreamURL(tw.URL, o.InsecureStreamURL); err != nil {
		return nil, &StreamDialError{URL: tw.URL, Err: err}
	}
	return connect(ctx, o, tw)
}
