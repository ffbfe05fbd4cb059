package twilio

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStreamTokens(t *testing.T) {
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tk := newTokens("auth")
	mint := func() string { return tk.mint(streamClaims{CallSid: "CA1", From: "+15550001111"}, now) }

	good := mint()
	c, err := tk.verify(good, "CA1", now.Add(time.Second))
	if err != nil || c.From != "+15550001111" {
		t.Fatalf("verify fresh token: claims %+v, err %v", c, err)
	}
	// That a token opens one stream only is the Memory's to say (TestRepeatedVoiceWebhook).

	payload, sig, _ := strings.Cut(mint(), ".")
	tests := []struct {
		name  string
		token string
		call  string
		at    time.Time
		want  error
	}{
		{"missing", "", "CA1", now, ErrTokenMissing},
		{"bad signature", payload + "." + sig[:len(sig)-2] + "AA", "CA1", now, ErrTokenForged},
		{"no signature", payload, "CA1", now, ErrTokenForged},
		{"signed by another secret", newTokens("other").mint(streamClaims{CallSid: "CA1"}, now), "CA1", now, ErrTokenForged},
		{"other call", mint(), "CA2", now, ErrTokenCall},
		{"expired", mint(), "CA1", now.Add(tokenTTL + time.Second), ErrTokenExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := tk.verify(tt.token, tt.call, tt.at); !errors.Is(err, tt.want) {
				t.Errorf("verify: err %v, want %v", err, tt.want)
			}
		})
	}
}
