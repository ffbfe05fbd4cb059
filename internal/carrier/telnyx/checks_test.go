package telnyx_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/carrier/telnyx"
	"github.com/handset-voice/handset/internal/carrier/telnyx/telnyxsim"
	"github.com/handset-voice/handset/internal/doctor"
)

const public = "https://handset.example.org"

// runChecks runs the checks against a fake holding o, with edit applied to the settings.
func runChecks(t *testing.T, o telnyxsim.Options, edit func(*telnyx.CheckSettings)) map[string]doctor.Result {
	t.Helper()
	fake := telnyxsim.New(o)
	api := httptest.NewServer(fake)
	t.Cleanup(func() { fake.Close(); api.Close() })
	s := telnyx.CheckSettings{Section: "carrier", PublicKey: fake.PublicKeyBase64(), PhoneNumber: ours, PublicURL: public,
		REST: telnyx.RESTOptions{BaseURL: api.URL + "/v2", APIKey: fake.APIKey(), ConnectionID: fake.ConnectionID()}}
	if edit != nil {
		edit(&s)
	}
	out := map[string]doctor.Result{}
	for _, c := range telnyx.Checks(s) {
		out[c.Name] = c.Run(context.Background())
	}
	return out
}

// healthy is an account set up for Handset.
func healthy() telnyxsim.Options {
	const app = "1293384261075731499"
	return telnyxsim.Options{ConnectionID: app, WebhookURL: public + "/telnyx/webhook",
		Numbers: []telnyxsim.Number{{PhoneNumber: ours, ConnectionID: app}}}
}

func TestChecksPassOnAHealthyAccount(t *testing.T) {
	got := runChecks(t, healthy(), nil)
	if len(got) != 6 {
		t.Errorf("%d checks: %v", len(got), got)
	}
	for name, r := range got {
		if r.Status != doctor.OK {
			t.Errorf("%s: %s %s (fix: %s)", name, r.Status, r.Detail, r.Fix)
		}
	}
	if d := got["call control application"].Detail; !strings.Contains(d, "10 s") {
		t.Errorf("the application check does not show the first-command timeout: %s", d)
	}
}

func TestChecksFindEachProblem(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   func(*telnyxsim.Options)
		edit   func(*telnyx.CheckSettings)
		check  string
		status doctor.Status
		says   string
	}{
		{"wrong key", nil, func(s *telnyx.CheckSettings) { s.REST.APIKey = "KEYwrong" }, "telnyx api key", doctor.Fail, "refuses the API key"},
		{"public key is the API key", nil, func(s *telnyx.CheckSettings) { s.PublicKey = "KEYabc" }, "telnyx public key", doctor.Fail, "32-byte"},
		{"short public key", nil, func(s *telnyx.CheckSettings) { s.PublicKey = "AAAA" }, "telnyx public key", doctor.Fail, "32-byte"},
		{"no public key", nil, func(s *telnyx.CheckSettings) { s.PublicKey = "" }, "telnyx public key", doctor.Fail, "not set"},
		{"unknown application", nil, func(s *telnyx.CheckSettings) { s.REST.ConnectionID = "1" }, "call control application", doctor.Fail, "no Call Control Application"},
		{"API v1", func(o *telnyxsim.Options) { o.WebhookAPIVersion = "1" }, nil, "call control application", doctor.Fail, "version 2"},
		{"webhook elsewhere", func(o *telnyxsim.Options) { o.WebhookURL = "https://old.example.com/hook" }, nil, "telnyx webhook", doctor.Fail, "not " + public},
		{"no webhook", func(o *telnyxsim.Options) { o.WebhookURL = "" }, nil, "telnyx webhook", doctor.Fail, "no webhook URL"},
		{"number on another connection", func(o *telnyxsim.Options) { o.Numbers[0].ConnectionID = "999" }, nil, "phone number", doctor.Fail, "connection 999"},
		{"number not ours", nil, func(s *telnyx.CheckSettings) { s.PhoneNumber = "+14155550199" }, "phone number", doctor.Fail, "not a number of the account"},
		{"plain http", nil, func(s *telnyx.CheckSettings) { s.PublicURL = "http://handset.example.org" }, "public url", doctor.Warn, "not https"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := healthy()
			if tc.opts != nil {
				tc.opts(&o)
			}
			r := runChecks(t, o, tc.edit)[tc.check]
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.says) || r.Fix == "" {
				t.Errorf("%s: %s %q (fix %q), want %s saying %q with a fix", tc.check, r.Status, r.Detail, r.Fix, tc.status, tc.says)
			}
		})
	}
}

func TestChecksSkipWithoutTelnyx(t *testing.T) {
	checks := telnyx.Checks(telnyx.CheckSettings{Section: "carrier"})
	if len(checks) != 1 || checks[0].Run(context.Background()).Status != doctor.Skip {
		t.Errorf("unconfigured Telnyx: %v", checks)
	}
}
