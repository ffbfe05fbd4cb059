package twilio

import (
	"errors"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/registry/registrytest"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/voice"
)

// The number commands' control is Twilio's REST API at its usual address unless
// HANDSET_TWILIO_API_URL says otherwise, and its explained errors name that address.
func TestNumbersOpenAndExplain(t *testing.T) {
	s := registrytest.Settings{"TWILIO_ACCOUNT_SID": faketwilio.DefaultAccountSID, "TWILIO_AUTH_TOKEN": "tok"}
	c, err := numbers.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	if rest := c.(*Control).REST(); rest.BaseURL() != DefaultRESTURL || rest.AccountSID() != numbers.AccountID(s) {
		t.Errorf("opened %s for %s, account %s", rest.BaseURL(), rest.AccountSID(), numbers.AccountID(s))
	}
	slow := &voice.ProviderError{Provider: "twilio", Op: "list numbers", Kind: voice.KindTimeout, Err: errors.New("deadline")}
	if got := numbers.Explain(s, slow).Error(); !strings.HasPrefix(got, "could not reach Twilio: ") {
		t.Errorf("at the usual address: %s", got)
	}
	s["HANDSET_TWILIO_API_URL"] = "http://127.0.0.1:8081"
	if got := numbers.Explain(s, slow).Error(); !strings.Contains(got, "Twilio at http://127.0.0.1:8081 (HANDSET_TWILIO_API_URL)") {
		t.Errorf("at a fake: %s", got)
	}
	other := errors.New("something else")
	if got := numbers.Explain(s, other); got != other {
		t.Errorf("an error with nothing to add became %v", got)
	}
}
