package twilio

import (
	"net/url"
	"testing"
)

// The example from Twilio's webhook-security documentation.
func TestSignatureMatchesTwilioDocumentedExample(t *testing.T) {
	params := url.Values{
		"CallSid": {"CA1234567890ABCDE"},
		"Caller":  {"+12349013030"},
		"Digits":  {"1234"},
		"From":    {"+12349013030"},
		"To":      {"+18005551212"},
	}
	const u = "https://mycompany.com/myapp.php?foo=1&bar=2"
	if got, want := Signature("12345", u, params), "0/KCTR6DLpKmkAf8muzZqo1nDgQ="; got != want {
		t.Fatalf("Signature = %q, want %q", got, want)
	}
	if !ValidSignature("12345", u, params, "0/KCTR6DLpKmkAf8muzZqo1nDgQ=") {
		t.Fatal("documented signature rejected")
	}
}

func TestValidSignature(t *testing.T) {
	params := url.Values{"CallSid": {"CA1"}, "From": {"+15551234567"}}
	sig := Signature("secret", "https://example.com/twilio/voice", params)
	tests := []struct {
		name   string
		token  string
		url    string
		params url.Values
		sig    string
		want   bool
	}{
		{"exact", "secret", "https://example.com/twilio/voice", params, sig, true},
		{"explicit default port", "secret", "https://example.com:443/twilio/voice", params, sig, true},
		{"wrong token", "other", "https://example.com/twilio/voice", params, sig, false},
		{"other url", "secret", "https://evil.example/twilio/voice", params, sig, false},
		{"tampered param", "secret", "https://example.com/twilio/voice", url.Values{"CallSid": {"CA2"}, "From": {"+15551234567"}}, sig, false},
		{"empty signature", "secret", "https://example.com/twilio/voice", params, "", false},
		{"no auth token configured", "", "https://example.com/twilio/voice", params, Signature("", "https://example.com/twilio/voice", params), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ValidSignature(tt.token, tt.url, tt.params, tt.sig); got != tt.want {
				t.Errorf("ValidSignature = %v, want %v", got, tt.want)
			}
		})
	}
}
