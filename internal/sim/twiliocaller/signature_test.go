package twiliocaller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"
)

// The worked example on Twilio's webhook security page
// (https://www.twilio.com/docs/usage/webhooks/webhooks-security), also quoted by the
// twilio-php validation guide: auth token 12345 and these parameters sign to
// 0/KCTR6DLpKmkAf8muzZqo1nDgQ=.
func TestSignatureMatchesTwilioPublishedExample(t *testing.T) {
	params := url.Values{
		"CallSid": {"CA1234567890ABCDE"},
		"Caller":  {"+12349013030"},
		"Digits":  {"1234"},
		"From":    {"+12349013030"},
		"To":      {"+18005551212"},
	}
	got := Signature("12345", "https://mycompany.com/myapp.php?foo=1&bar=2", params)
	if want := "0/KCTR6DLpKmkAf8muzZqo1nDgQ="; got != want {
		t.Fatalf("Signature = %q, want Twilio's published %q", got, want)
	}
	if ind := independentSignature("12345", "https://mycompany.com/myapp.php?foo=1&bar=2", params); ind != got {
		t.Fatalf("independent computation %q disagrees with Signature %q", ind, got)
	}
}

func TestSignatureCoversURLParamsAndToken(t *testing.T) {
	base := url.Values{"CallSid": {"CA1"}, "From": {"+1"}}
	ref := Signature("tok", "https://h.example/twilio/voice", base)
	for name, sig := range map[string]string{
		"other url":   Signature("tok", "https://h.example/twilio/voice2", base),
		"other port":  Signature("tok", "https://h.example:443/twilio/voice", base),
		"other token": Signature("tok2", "https://h.example/twilio/voice", base),
		"other value": Signature("tok", "https://h.example/twilio/voice", url.Values{"CallSid": {"CA2"}, "From": {"+1"}}),
		"extra param": Signature("tok", "https://h.example/twilio/voice", url.Values{"CallSid": {"CA1"}, "From": {"+1"}, "To": {""}}),
		"no params":   Signature("tok", "https://h.example/twilio/voice", nil),
	} {
		if sig == ref {
			t.Errorf("%s: signature unchanged", name)
		}
	}
	// A WebSocket upgrade is signed over the bare URL: HMAC of the URL alone.
	if got, want := Signature("tok", "wss://h.example/twilio/stream", nil), independentSignature("tok", "wss://h.example/twilio/stream", nil); got != want {
		t.Errorf("upgrade signature %q, want %q", got, want)
	}
}

func TestNewSidShape(t *testing.T) {
	re := regexp.MustCompile(`^CA[0-9a-f]{32}$`)
	a, b := NewSid("CA"), NewSid("CA")
	if !re.MatchString(a) || a == b {
		t.Fatalf("NewSid gave %q and %q", a, b)
	}
}

// TestWebhookIdempotencyToken: the webhook carries I-Twilio-Idempotency-Token, as Twilio's
// do: the one given (a retry repeats it), or a fresh one per request.
func TestWebhookIdempotencyToken(t *testing.T) {
	got := make(chan string, 3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get(IdempotencyHeader)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	opts := Options{BaseURL: srv.URL, AuthToken: "tok"}
	for range 2 {
		if _, err := PostWebhook(context.Background(), opts, nil); err != nil {
			t.Fatal(err)
		}
	}
	opts.IdempotencyToken = "retry-me"
	if _, err := PostWebhook(context.Background(), opts, nil); err != nil {
		t.Fatal(err)
	}
	a, b, c := <-got, <-got, <-got
	if a == "" || b == "" || a == b || c != "retry-me" {
		t.Errorf("idempotency tokens %q, %q, %q: want two fresh ones, then the one given", a, b, c)
	}
}
