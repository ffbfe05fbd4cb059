package carrier

import (
	"strings"
	"testing"
)

func TestNormalizeNumber(t *testing.T) {
	good := map[string]string{
		"+14155550100":       "+14155550100",
		" +1 415 555 0100 ":  "+14155550100",
		"+1-415-555-0100":    "+14155550100",
		"(415) 555-0100":     "+14155550100",
		"14155550100":        "+14155550100",
		"0044 20 7183 8750":  "+442071838750",
		"+44 (20) 7183 8750": "+442071838750",
	}
	for in, want := range good {
		if got, err := NormalizeNumber(in); err != nil || got != want {
			t.Errorf("NormalizeNumber(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "+", "abc", "020 7183 8750", "+1415", "+1234567890123456", "++14155550100", "+1 415 555 0100 ext 2"} {
		if got, err := NormalizeNumber(bad); err == nil {
			t.Errorf("NormalizeNumber(%q) = %q, want an error", bad, got)
		}
	}
	// A huge input is quoted in the error only in part: the error reaches API answers.
	for _, huge := range []string{strings.Repeat("x", 100_000), "+" + strings.Repeat("1", 100_000), strings.Repeat("2", 100_000)} {
		if _, err := NormalizeNumber(huge); err == nil || len(err.Error()) > 200 || !strings.Contains(err.Error(), "…") {
			t.Errorf("NormalizeNumber(100 KB): %d bytes of error", len(err.Error()))
		}
	}
}

// A carrier's webhook URLs hang under Handset's public URL, trailing slash or not, and
// there are none without one.
func TestWebhookURLs(t *testing.T) {
	w := Webhooks{VoicePath: "/c/voice", StatusPath: "/c/status"}
	for _, base := range []string{"https://h.example", "https://h.example/"} {
		if v, s := w.VoiceURL(base), w.StatusURL(base); v != "https://h.example/c/voice" || s != "https://h.example/c/status" {
			t.Errorf("%s: %s, %s", base, v, s)
		}
	}
	if v, s := w.VoiceURL(""), w.StatusURL(""); v != "" || s != "" {
		t.Errorf("without a public URL: %q, %q", v, s)
	}
}

func TestSameWebhookURL(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"https://Example.com/telnyx/webhook", "https://example.com:443/telnyx/webhook/", true},
		{"https://example.com/twilio/voice?x=1", "https://example.com/twilio/voice", true},
		{"http://example.com/twilio/voice", "https://example.com/twilio/voice", false},
		{"https://example.com:8443/a", "https://example.com/a", false},
		{"https://example.com/a", "https://example.com/b", false},
	} {
		if got := SameWebhookURL(c.a, c.b); got != c.same {
			t.Errorf("SameWebhookURL(%q, %q) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
