package twilio

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"net/url"
	"sort"
	"strings"
)

// Signature computes X-Twilio-Signature for a request to fullURL with form params:
// base64(HMAC-SHA1(authToken, fullURL + each param name and value, sorted by name)).
// https://www.twilio.com/docs/usage/webhooks/webhooks-security
func Signature(authToken, fullURL string, params url.Values) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(fullURL)
	for _, k := range keys {
		vals := append([]string(nil), params[k]...)
		sort.Strings(vals)
		for _, v := range vals {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ValidSignature checks sig against fullURL, also trying the URL with and without an
// explicit default port, as Twilio's own libraries do.
func ValidSignature(authToken, fullURL string, params url.Values, sig string) bool {
	if authToken == "" || sig == "" {
		return false
	}
	for _, u := range urlVariants(fullURL) {
		if hmac.Equal([]byte(Signature(authToken, u, params)), []byte(sig)) {
			return true
		}
	}
	return false
}

func urlVariants(raw string) []string {
	out := []string{raw}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	defPort := map[string]string{"https": "443", "wss": "443", "http": "80", "ws": "80"}[u.Scheme]
	if defPort == "" {
		return out
	}
	v := *u
	if u.Port() == "" {
		v.Host = u.Host + ":" + defPort
	} else if u.Port() == defPort {
		v.Host = u.Hostname()
	} else {
		return out
	}
	return append(out, v.String())
}
