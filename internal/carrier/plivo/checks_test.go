package plivo_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/carrier/plivo"
	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
	"github.com/handset-voice/handset/internal/doctor"
)

const handsetAt = "https://handset.example.org"

// runChecks runs the checks against a fake holding o, with edit applied to the settings.
func runChecks(t *testing.T, o plivosim.Options, edit func(*plivo.CheckSettings)) map[string]doctor.Result {
	t.Helper()
	fake := plivosim.New(o)
	api := httptest.NewServer(fake)
	t.Cleanup(func() { fake.Close(); api.Close() })
	s := plivo.CheckSettings{Section: "carrier", AppID: plivosim.DefaultAppID, PhoneNumber: ourNumber, PublicURL: handsetAt,
		REST: plivo.RESTOptions{BaseURL: api.URL, AuthID: fake.AuthID(), AuthToken: fake.AuthToken()}}
	if edit != nil {
		edit(&s)
	}
	out := map[string]doctor.Result{}
	for _, c := range plivo.Checks(s) {
		out[c.Name] = c.Run(context.Background())
	}
	return out
}

// healthy is an account set up for Handset.
func healthy() plivosim.Options {
	return plivosim.Options{
		Applications: []plivosim.Application{{AppID: plivosim.DefaultAppID, Name: "handset", AnswerURL: handsetAt + plivo.AnswerPath, HangupURL: handsetAt + plivo.HangupPath}},
		Numbers:      []plivosim.Number{{Number: ourNumber, AppID: plivosim.DefaultAppID}},
	}
}

func TestChecksPassOnAHealthyAccount(t *testing.T) {
	got := runChecks(t, healthy(), nil)
	if len(got) != 4 {
		t.Errorf("%d checks: %v", len(got), got)
	}
	for name, r := range got {
		if r.Status != doctor.OK {
			t.Errorf("%s: %s %s (fix: %s)", name, r.Status, r.Detail, r.Fix)
		}
	}
}

func TestChecksFindEachProblem(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   func(*plivosim.Options)
		edit   func(*plivo.CheckSettings)
		check  string
		status doctor.Status
		says   string
	}{
		{"wrong token", nil, func(s *plivo.CheckSettings) { s.REST.AuthToken = "wrong" }, "plivo credentials", doctor.Fail, "refuses the credentials"},
		{"no app id", nil, func(s *plivo.CheckSettings) { s.AppID = "" }, "plivo application", doctor.Fail, "not set"},
		{"unknown application", nil, func(s *plivo.CheckSettings) { s.AppID = "12345678901234567" }, "plivo application", doctor.Fail, "no application"},
		{"answers elsewhere", func(o *plivosim.Options) { o.Applications[0].AnswerURL = "https://old.example.com/answer" }, nil, "plivo application", doctor.Fail, "answer URL"},
		{"hangs up elsewhere", func(o *plivosim.Options) { o.Applications[0].HangupURL = "" }, nil, "plivo application", doctor.Fail, "hangup URL"},
		{"no public url", nil, func(s *plivo.CheckSettings) { s.PublicURL = "" }, "plivo application", doctor.Warn, "HANDSET_PUBLIC_URL"},
		{"number on no application", func(o *plivosim.Options) { o.Numbers[0].AppID = "" }, nil, "phone number", doctor.Fail, "not " + plivosim.DefaultAppID},
		{"number not ours", nil, func(s *plivo.CheckSettings) { s.PhoneNumber = "+14155550199" }, "phone number", doctor.Fail, "not a number of the account"},
		{"plain http", nil, func(s *plivo.CheckSettings) { s.PublicURL = "http://handset.example.org" }, "public url", doctor.Warn, "not https"},
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

func TestChecksSkipWithoutPlivo(t *testing.T) {
	checks := plivo.Checks(plivo.CheckSettings{Section: "carrier"})
	if len(checks) != 1 || checks[0].Run(context.Background()).Status != doctor.Skip {
		t.Errorf("unconfigured Plivo: %v", checks)
	}
}
