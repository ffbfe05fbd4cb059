package twilio

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
)

// TestChecks runs doctor's Twilio checks against the fake account, one setting wrong at a
// time, and reads what each check concludes.
func TestChecks(t *testing.T) {
	const public = "https://voice.handset.dev"
	fake := faketwilio.New(faketwilio.Options{Numbers: []faketwilio.Number{
		{PhoneNumber: "+14155550100", VoiceURL: public + "/twilio/voice/"}, // a trailing slash is the same URL
		{PhoneNumber: "+14155550111", VoiceURL: "https://elsewhere.example/voice"},
		{PhoneNumber: "+14155550122", VoiceURL: public + "/twilio/voice", VoiceApplicationSID: "AP0123456789abcdef0123456789abcdef"},
	}})
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	good := CheckSettings{Section: "carrier", PhoneNumber: "+14155550100", PublicURL: public,
		REST: RESTOptions{BaseURL: api.URL, AccountSID: fake.AccountSID(), AuthToken: fake.AuthToken()}}

	for _, c := range []struct {
		name   string
		change func(*CheckSettings)
		want   map[string]doctor.Status // by check name
		says   string                   // in some result's detail
	}{
		{"all well", func(*CheckSettings) {},
			map[string]doctor.Status{"twilio credentials": doctor.OK, "phone number": doctor.OK, "voice webhook": doctor.OK}, "calls to +14155550100 go to"},
		{"not configured", func(s *CheckSettings) { s.REST.AccountSID, s.REST.AuthToken = "", "" },
			map[string]doctor.Status{"twilio": doctor.Skip}, "not configured"},
		{"no token", func(s *CheckSettings) { s.REST.AuthToken = "" },
			map[string]doctor.Status{"twilio": doctor.Skip}, "incomplete"},
		{"wrong token", func(s *CheckSettings) { s.REST.AuthToken = "0000000000000000000000000000000a" },
			map[string]doctor.Status{"twilio credentials": doctor.Fail, "phone number": doctor.Skip, "voice webhook": doctor.Skip}, "rejects the auth token"},
		{"malformed account SID", func(s *CheckSettings) { s.REST.AccountSID = "SK0123" },
			map[string]doctor.Status{"twilio credentials": doctor.Fail}, "API key SID"},
		{"number not on the account", func(s *CheckSettings) { s.PhoneNumber = "+14155550199" },
			map[string]doctor.Status{"twilio credentials": doctor.OK, "phone number": doctor.Fail, "voice webhook": doctor.Skip}, "its numbers are"},
		{"number sent elsewhere", func(s *CheckSettings) { s.PhoneNumber = "+14155550111" },
			map[string]doctor.Status{"phone number": doctor.OK, "voice webhook": doctor.Fail}, "elsewhere.example"},
		{"number behind a TwiML app", func(s *CheckSettings) { s.PhoneNumber = "+14155550122" },
			map[string]doctor.Status{"voice webhook": doctor.Fail}, "TwiML app"},
		{"placeholder public URL", func(s *CheckSettings) { s.PublicPlaceholder = true },
			map[string]doctor.Status{"voice webhook": doctor.Warn}, "placeholder"},
		{"no phone number", func(s *CheckSettings) { s.PhoneNumber = "" },
			map[string]doctor.Status{"phone number": doctor.Warn, "voice webhook": doctor.Skip}, "HANDSET_PHONE_NUMBER is not set"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := good
			c.change(&s)
			results := doctor.Run(context.Background(), Checks(s), doctor.Options{})
			said := false
			for _, r := range results {
				if want, ok := c.want[r.Name]; ok && r.Status != want {
					t.Errorf("%s: %s (%s), want %s", r.Name, r.Status, r.Detail, want)
				}
				if r.Section != "carrier" {
					t.Errorf("%s is in section %q", r.Name, r.Section)
				}
				said = said || strings.Contains(r.Detail, c.says)
			}
			if !said {
				t.Errorf("no result says %q: %+v", c.says, results)
			}
		})
	}
}
