package telnyx

import (
	"errors"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// Where the settings are found, for hints.
const (
	// PortalKeys is where an API key and the public key are.
	PortalKeys = "the Telnyx Mission Control Portal (Account Settings > Keys & Credentials)"
	// PortalApplications is where a Call Control Application and its id are.
	PortalApplications = "the Telnyx Mission Control Portal (Voice > Programmable Voice > Call Control Applications)"
	// Portal is where the account is managed.
	Portal = "the Telnyx Mission Control Portal"
	// PortalBuyNumbers is where a number is bought.
	PortalBuyNumbers = "the Telnyx Mission Control Portal (Numbers > Search & Buy Numbers)"
)

// numbers is Telnyx's number management: one webhook URL per application carries every
// event, so the voice and status paths are the same.
var numbers = registry.Numbers{
	Webhooks:        carrier.Webhooks{VoicePath: WebhookPath, StatusPath: WebhookPath, Same: carrier.SameWebhookURL},
	Open:            openAccount,
	Explain:         explain,
	AccountID:       func(s registry.Settings) string { return strings.TrimSpace(s.Value("TELNYX_CONNECTION_ID")) },
	Override:        "different connection",
	Console:         Portal,
	BuyNumbers:      PortalBuyNumbers,
	SignatureHeader: "telnyx-signature-ed25519",
}

// restOptions are the REST client's settings.
func restOptions(s registry.Settings) RESTOptions {
	return RESTOptions{BaseURL: s.Value("HANDSET_TELNYX_API_URL"), APIKey: s.Value("TELNYX_API_KEY"),
		ConnectionID: s.Value("TELNYX_CONNECTION_ID")}
}

// newControl is the control jobs and transfers use.
func newControl(b registry.Build) (carrier.Carrier, error) {
	var memory carrier.Memory
	if b.Memory != nil {
		memory = b.Memory(Name)
	}
	return NewControl(restOptions(b.Settings), memory)
}

// openAccount is the control of the account the settings name, with errors that say
// which setting to set and where its value is found.
func openAccount(s registry.Settings) (carrier.Carrier, error) {
	key, conn := s.Value("TELNYX_API_KEY"), s.Value("TELNYX_CONNECTION_ID")
	switch {
	case key == "" && conn == "":
		return nil, fmt.Errorf("Telnyx is not configured: set TELNYX_API_KEY (from %s) and TELNYX_CONNECTION_ID (from %s), in the environment or .env", PortalKeys, PortalApplications)
	case key == "":
		return nil, fmt.Errorf("TELNYX_API_KEY is not set: create one in %s", PortalKeys)
	case conn == "":
		return nil, fmt.Errorf("TELNYX_CONNECTION_ID is not set: copy the id of the Call Control Application from %s", PortalApplications)
	}
	return NewControl(restOptions(s), nil)
}

// explain turns a failure of the account's control into an error that says what to do.
func explain(s registry.Settings, err error) error {
	rest, rerr := NewREST(restOptions(s))
	if rerr != nil {
		return err
	}
	at := ""
	if rest.BaseURL() != DefaultRESTURL {
		at = " at " + rest.BaseURL() + " (HANDSET_TELNYX_API_URL)"
	}
	switch {
	case errors.Is(err, carrier.ErrNotFound) && strings.Contains(err.Error(), "application"):
		return fmt.Errorf("Telnyx%s has no Call Control Application %s (TELNYX_CONNECTION_ID, from %s): %w\nhint: copy the application's id from %s",
			at, rest.ConnectionID(), s.Source("TELNYX_CONNECTION_ID"), err, PortalApplications)
	case errors.Is(err, carrier.ErrNotFound):
		return fmt.Errorf("%w\nhint: run `handset numbers` to see the account's numbers, or buy one in %s", err, PortalBuyNumbers)
	}
	switch voice.KindOf(err) {
	case voice.KindAuth:
		return fmt.Errorf("Telnyx%s refused the API key (TELNYX_API_KEY, from %s)\nhint: create a new API key in %s\n(%v)",
			at, s.Source("TELNYX_API_KEY"), PortalKeys, err)
	case voice.KindTimeout, voice.KindTransient:
		return fmt.Errorf("could not reach Telnyx%s: %w\nhint: check the network, https://status.telnyx.com, and HANDSET_TELNYX_API_URL if you set it; then try again", at, err)
	case voice.KindQuota:
		return fmt.Errorf("Telnyx%s is refusing requests for now (rate limit or account balance): %w\nhint: wait a minute and try again; check the balance in %s", at, err, Portal)
	}
	return err
}
