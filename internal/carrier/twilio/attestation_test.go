package twilio

import (
	"context"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/voice"
)

// The voice webhook's StirVerstat reaches the call's leg as its attestation, signed into
// the stream token with the numbers; outbound calls carry none.
func TestWebhookAttestation(t *testing.T) {
	const token = "attest-token"
	h, legs := handsetForFake(t, token)
	for _, tc := range []struct {
		verstat, direction string
		want               voice.Attestation
	}{
		{"TN-Validation-Passed-A", "", voice.AttestationA},
		{"TN-Validation-Passed-B", "", voice.AttestationB},
		{"TN-Validation-Passed-C", "", voice.AttestationC},
		{"tn-validation-passed-a", "", voice.AttestationA},
		{"TN-Validation-Failed-A", "", voice.AttestationFailed},
		{"TN-Validation-Failed-B", "", voice.AttestationFailed},
		{"TN-Validation-Failed-C", "", voice.AttestationFailed},
		{"TN-Validation-Failed", "", voice.AttestationFailed},
		{"No-TN-Validation", "", voice.AttestationNone},
		{"Passed-A-honest", "", voice.AttestationNone}, // unknown: vouches for nothing
		{"", "", ""},
		{"TN-Validation-Passed-A", "outbound-api", ""},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		params := map[string]string{}
		if tc.verstat != "" {
			params["StirVerstat"] = tc.verstat
		}
		if tc.direction != "" {
			params["Direction"] = tc.direction
		}
		c, err := twiliocaller.Dial(ctx, twiliocaller.Options{BaseURL: h.URL, AuthToken: token,
			InsecureStreamURL: true, From: "+15550102000", Params: params})
		if err != nil {
			cancel()
			t.Fatalf("%q: %v", tc.verstat, err)
		}
		select {
		case leg := <-legs:
			if leg.Attestation != tc.want || leg.From != "+15550102000" {
				t.Errorf("StirVerstat %q (%s): leg attestation %q, want %q", tc.verstat, tc.direction, leg.Attestation, tc.want)
			}
		case <-ctx.Done():
			t.Fatalf("%q: no leg admitted", tc.verstat)
		}
		_ = c.Hangup()
		<-c.Done()
		cancel()
	}
}
