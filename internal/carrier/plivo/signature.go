package plivo

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// Plivo signs every request it makes to Handset with signature V3: HMAC-SHA256 with the
// account's auth token over the URL it called, its parameters and a nonce.
const (
	// SignatureHeader holds one or more base64 signatures separated by commas.
	SignatureHeader = "X-Plivo-Signature-V3"
	// NonceHeader holds the request's nonce, which is part of what is signed.
	NonceHeader = "X-Plivo-Signature-V3-Nonce"
)

// Bounds on what a request may claim, against a flood of candidates to check.
const (
	maxSignatures     = 8
	maxSignatureBytes = 1024
	maxNonceBytes     = 256
)

// SignatureV3 is the signature of a request to fullURL with method and params (the form
// body of a POST; merged into the query of a GET) and nonce: base64(HMAC-SHA256(authToken,
// signed)), where signed is, for POST, the URL (scheme://host/path, then "?" and its query
// sorted by key as k=v&k=v when it has one), "." and the params sorted by key as keyvalue
// (when there are any), then "." and the nonce; for GET, the URL with the params merged
// into its sorted query, then "." and the nonce. Only a key's first value counts.
func SignatureV3(authToken, method, fullURL string, params url.Values, nonce string) string {
	return sign(authToken, signedStringV3(method, fullURL, params, nonce, true, false))
}

// ValidSignatureV3 reports whether header (the X-Plivo-Signature-V3 value, one or more
// signatures separated by ",") holds a signature of the request, trying the URL with and
// without its trailing slash and default port, and its query sorted or as sent, as Plivo's
// libraries differ on those. The comparison is constant-time.
func ValidSignatureV3(authToken, method, fullURL string, params url.Values, nonce, header string) bool {
	if authToken == "" || nonce == "" || header == "" || len(header) > maxSignatureBytes || len(nonce) > maxNonceBytes {
		return false
	}
	parts := strings.Split(header, ",")
	if len(parts) > maxSignatures {
		return false
	}
	var sigs [][]byte
	for _, s := range parts {
		if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s)); err == nil && len(b) == sha256.Size {
			sigs = append(sigs, b)
		}
	}
	if len(sigs) == 0 {
		return false
	}
	found := false
	for _, u := range urlVariants(fullURL) {
		for _, sorted := range []bool{true, false} {
			for _, emptyDot := range []bool{false, true} {
				mac := macOf(authToken, signedStringV3(method, u, params, nonce, sorted, emptyDot))
				for _, s := range sigs {
					// every candidate is compared, so the time taken says nothing of which matched
					if hmac.Equal(mac, s) {
						found = true
					}
				}
			}
		}
	}
	return found
}

// signedStringV3 is what V3 signs. sortQuery false keeps the URL's query as sent;
// emptyDot true writes the "." before the params even when a POST has none (the SDKs
// differ).
func signedStringV3(method, fullURL string, params url.Values, nonce string, sortQuery, emptyDot bool) string {
	base, rawQuery, _ := strings.Cut(fullURL, "?")
	if i := strings.IndexByte(rawQuery, '#'); i >= 0 {
		rawQuery = rawQuery[:i]
	}
	query, _ := url.ParseQuery(rawQuery)
	var b strings.Builder
	b.WriteString(base)
	if method == http.MethodGet {
		merged := url.Values{}
		for k, v := range query {
			merged[k] = v[:1]
		}
		for k, v := range params {
			if len(v) > 0 {
				merged[k] = v[:1]
			}
		}
		if len(merged) > 0 {
			b.WriteByte('?')
			b.WriteString(sortedQuery(merged))
		}
	} else {
		if rawQuery != "" {
			b.WriteByte('?')
			if sortQuery {
				b.WriteString(sortedQuery(query))
			} else {
				b.WriteString(rawQuery)
			}
		}
		if len(params) > 0 || emptyDot {
			b.WriteByte('.')
			for _, k := range sortedKeys(params) {
				if len(params[k]) > 0 {
					b.WriteString(k)
					b.WriteString(params[k][0])
				}
			}
		}
	}
	b.WriteByte('.')
	b.WriteString(nonce)
	return b.String()
}

// sortedQuery writes q sorted by key as k=v&k=v, each key's first value, unescaped.
func sortedQuery(q url.Values) string {
	var b strings.Builder
	for i, k := range sortedKeys(q) {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		if len(q[k]) > 0 {
			b.WriteString(q[k][0])
		}
	}
	return b.String()
}

func sortedKeys(v url.Values) []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func macOf(key, s string) []byte {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(s))
	return mac.Sum(nil)
}

func sign(key, s string) string { return base64.StdEncoding.EncodeToString(macOf(key, s)) }

// urlVariants are the forms of raw Plivo may have signed: as given, with its path's
// trailing slash added or removed, each with and without the scheme's default port.
func urlVariants(raw string) []string {
	base, query, hasQuery := strings.Cut(raw, "?")
	withQuery := func(b string) string {
		if hasQuery {
			return b + "?" + query
		}
		return b
	}
	slashed := []string{base}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return []string{raw}
	}
	if strings.HasSuffix(u.Path, "/") {
		slashed = append(slashed, strings.TrimSuffix(base, "/"))
	} else {
		slashed = append(slashed, base+"/")
	}
	var out []string
	for _, b := range slashed {
		out = append(out, withQuery(b))
		if p, ok := portVariant(b); ok {
			out = append(out, withQuery(p))
		}
	}
	return out
}

// portVariant is base with its scheme's default port written out, or taken away.
func portVariant(base string) (string, bool) {
	u, err := url.Parse(base)
	if err != nil {
		return "", false
	}
	def := map[string]string{"https": "443", "wss": "443", "http": "80", "ws": "80"}[u.Scheme]
	if def == "" {
		return "", false
	}
	v := *u
	switch u.Port() {
	case "":
		v.Host = u.Host + ":" + def
	case def:
		v.Host = u.Hostname()
	default:
		return "", false
	}
	return v.String(), true
}
