package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/doctor"
)

// The doctor tests' TLS fake answers as example.com (the name httptest's certificate
// carries), standing in for a real public address; for them example.com is no placeholder.
// withPlaceholderDomains puts it back for the tests of the placeholder itself.
func init() {
	placeholderDomains = slices.DeleteFunc(slices.Clone(placeholderDomains), func(d string) bool { return d == "example.com" })
}

func withPlaceholderDomains(t *testing.T) {
	saved := placeholderDomains
	placeholderDomains = []string{"example.com", "example.net", "example.org"}
	t.Cleanup(func() { placeholderDomains = saved })
}

// TestDoctorPlaceholderPublicURL: the public URL handset setup writes, and every other
// name reserved for examples and tests, is reported as a placeholder to replace (a
// failure when Twilio needs it, a warning otherwise), with no lookup of the name; a real
// name or an address on this machine is not.
func TestDoctorPlaceholderPublicURL(t *testing.T) {
	withPlaceholderDomains(t)
	r := newDocRig(t)
	for _, tc := range []struct {
		url    string
		twilio bool
		want   doctor.Status
	}{
		{"https://voice.example.com", false, doctor.Warn},
		{"https://voice.example.com", true, doctor.Fail},
		{"https://example.org/", true, doctor.Fail},
		{"https://a.b.example.net", false, doctor.Warn},
		{"https://voice.example", true, doctor.Fail},
		{"https://phone.invalid", false, doctor.Warn},
		{"https://handset.test:8443", true, doctor.Fail},
		{"http://localhost:8080", false, doctor.Warn},
	} {
		extra := []string{"HANDSET_PUBLIC_URL=" + tc.url}
		if !tc.twilio {
			extra = append(extra, noTwilio...)
		}
		_, rep := r.report(extra)
		addr := findResult(t, rep, "public_url", "address")
		if addr.Status != tc.want || !strings.Contains(addr.Detail, "placeholder") || !strings.Contains(addr.Fix, "HANDSET_PUBLIC_URL") {
			t.Errorf("%s (twilio %v): address %s %q (fix %q), want %s naming the placeholder", tc.url, tc.twilio, addr.Status, addr.Detail, addr.Fix, tc.want)
		}
		if reach := findResult(t, rep, "public_url", "reachable"); !isLocalhostName(strings.Split(strings.Split(tc.url, "//")[1], ":")[0]) &&
			(reach.Status != doctor.Skip || !strings.Contains(reach.Detail, "placeholder")) {
			t.Errorf("%s: reachable %s %q, want skipped as a placeholder (no lookup)", tc.url, reach.Status, reach.Detail)
		}
	}
	// With Twilio, the number's webhook is not compared with a placeholder (attaching
	// then would point the number at it).
	_, rep := r.report([]string{"HANDSET_PUBLIC_URL=https://voice.example.com"})
	if wh := findResult(t, rep, "carrier", "voice webhook"); wh.Status != doctor.Warn || !strings.Contains(wh.Detail, "placeholder") {
		t.Errorf("voice webhook %s %q, want a warning about the placeholder", wh.Status, wh.Detail)
	}
	// Real names and addresses are not placeholders.
	for _, u := range []string{"https://voice.acme.com", "https://examples.com", "https://my-example.com", "https://127.0.0.1:8443"} {
		if why, ok := placeholderURL(u); ok {
			t.Errorf("%s taken for a placeholder: %s", u, why)
		}
	}
}
