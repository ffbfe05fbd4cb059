package twilio

import (
	"errors"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// numbers is what `handset numbers` and `handset attach-number` need of Twilio.
var numbers = registry.Numbers{
	Webhooks:        carrier.Webhooks{VoicePath: VoicePath, StatusPath: StatusPath, Same: carrier.SameWebhookURL},
	Open:            openAccount,
	Explain:         explain,
	AccountID:       func(s registry.Settings) string { return strings.TrimSpace(s.Value("TWILIO_ACCOUNT_SID")) },
	Override:        "TwiML app",
	Console:         "the Twilio console",
	BuyNumbers:      "the Twilio console (Phone Numbers > Manage > Buy a number)",
	SignatureHeader: "X-Twilio-Signature",
}

// openAccount is the control of the account the settings name, with errors that say
// which of TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN to set and where to copy them from.
func openAccount(s registry.Settings) (carrier.Carrier, error) {
	sid, token := s.Value("TWILIO_ACCOUNT_SID"), s.Value("TWILIO_AUTH_TOKEN")
	switch {
	case sid == "" && token == "":
		return nil, fmt.Errorf("Twilio is not configured: set TWILIO_ACCOUNT_SID (AC…) and TWILIO_AUTH_TOKEN, in the environment or .env; copy both from %s", ConsoleAccountInfo)
	case sid == "":
		return nil, fmt.Errorf("TWILIO_ACCOUNT_SID is not set: copy the Account SID (AC…) that goes with TWILIO_AUTH_TOKEN from %s", ConsoleAccountInfo)
	case token == "":
		return nil, fmt.Errorf("TWILIO_AUTH_TOKEN is not set: copy the Auth Token of account %s from %s", sid, ConsoleAccountInfo)
	}
	c, err := NewControl(restOptions(s))
	if err != nil {
		return nil, fmt.Errorf("%w (the Account SID and Auth Token are under Account Info at https://console.twilio.com)", err)
	}
	return c, nil
}

// explain turns a failure of the account's control into an error that says what to do.
func explain(s registry.Settings, err error) error {
	var nf *NumberNotFoundError
	if errors.As(err, &nf) {
		hint := "run `handset numbers` to see them with their voice URLs"
		if len(nf.Have) == 0 {
			hint = "buy a number with voice capability in the Twilio console, then run `handset numbers`"
		}
		return fmt.Errorf("%s\nhint: %s", nf.Error(), hint)
	}
	rest, rerr := NewREST(restOptions(s))
	if rerr != nil { // not the settings the control was opened with: nothing more to say
		return err
	}
	at := ""
	if rest.BaseURL() != DefaultRESTURL {
		at = " at " + rest.BaseURL() + " (HANDSET_TWILIO_API_URL)"
	}
	switch voice.KindOf(err) {
	case voice.KindAuth:
		return fmt.Errorf("Twilio%s refused the credentials: the auth token (TWILIO_AUTH_TOKEN, from %s) was rejected for account %s (TWILIO_ACCOUNT_SID, from %s)\n"+
			"hint: copy the Account SID and the Auth Token of the same account from %s; after rotating the token, use the new primary one\n(%v)",
			at, s.Source("TWILIO_AUTH_TOKEN"), rest.AccountSID(), s.Source("TWILIO_ACCOUNT_SID"), ConsoleAccountInfo, err)
	case voice.KindTimeout, voice.KindTransient:
		return fmt.Errorf("could not reach Twilio%s: %w\nhint: check the network, https://status.twilio.com, and HANDSET_TWILIO_API_URL if you set it; then try again", at, err)
	case voice.KindQuota:
		return fmt.Errorf("Twilio%s is refusing requests for now (rate limit or account balance): %w\nhint: wait a minute and try again; check the balance in the Twilio console", at, err)
	}
	return err
}
