package carrier

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// Webhooks are the routes a carrier serves under Handset's public URL, which its numbers
// are pointed at.
type Webhooks struct {
	VoicePath  string // where a number's incoming calls are sent ("/twilio/voice")
	StatusPath string // where their progress is sent
	// Same reports whether a number's webhook URL and Handset's reach the same place, as
	// the carrier compares them.
	Same func(numberURL, handsetURL string) bool
}

// VoiceURL is the voice webhook under publicURL; "" when publicURL is.
func (w Webhooks) VoiceURL(publicURL string) string { return under(publicURL, w.VoicePath) }

// StatusURL is the status webhook under publicURL; "" when publicURL is.
func (w Webhooks) StatusURL(publicURL string) string { return under(publicURL, w.StatusPath) }

func under(publicURL, path string) string {
	base := strings.TrimRight(publicURL, "/")
	if base == "" {
		return ""
	}
	return base + path
}

// NormalizeNumber writes a phone number in E.164 form: "+1 (415) 555-0100",
// "+1.415.555.0100" and "0014155550100" all become "+14155550100". A number without + or
// 00 is taken as North American when it has 10 digits, or 11 starting with 1; any other
// is refused, since its country is unknown.
func NormalizeNumber(s string) (string, error) {
	in := strings.TrimSpace(s)
	var digits strings.Builder
	plus := false
	for i, c := range in {
		switch {
		case c >= '0' && c <= '9':
			digits.WriteRune(c)
		case c == '+' && i == 0:
			plus = true
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' || c == '\u00a0':
		default:
			return "", fmt.Errorf("%q is not a phone number: write it in E.164 form, like +14155550100", voice.Clip(s, 64))
		}
	}
	d := digits.String()
	switch {
	case plus:
	case strings.HasPrefix(d, "00"):
		d = d[2:]
	case len(d) == 10 && d[0] != '0' && d[0] != '1':
		d = "1" + d
	case len(d) == 11 && d[0] == '1':
	default:
		return "", fmt.Errorf("%q has no country code: write it in E.164 form with + and the country code, like +14155550100", voice.Clip(s, 64))
	}
	if len(d) < 8 || len(d) > 15 || d[0] == '0' {
		return "", fmt.Errorf("%q is not an E.164 number: + then 8 to 15 digits, like +14155550100", voice.Clip(s, 64))
	}
	return "+" + d, nil
}

// SameWebhookURL compares two URLs as a carrier reaches them: scheme and host ignore
// case and default ports, a trailing slash does not count, and neither does the query.
func SameWebhookURL(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	if errA != nil || errB != nil {
		return a == b
	}
	norm := func(u *url.URL) string {
		scheme := strings.ToLower(u.Scheme)
		host := strings.ToLower(u.Hostname())
		port := u.Port()
		if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
			port = ""
		}
		if port != "" {
			host += ":" + port
		}
		return scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/")
	}
	return norm(ua) == norm(ub)
}
