package twiliocaller

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"io"
	"maps"
	"net/url"
	"slices"
)

// SignatureHeader is the header Twilio signs its webhooks and WebSocket upgrades with.
const SignatureHeader = "X-Twilio-Signature"

// IdempotencyHeader carries a webhook request's idempotency token: the same on each of
// its retries, a new one for every other request.
const IdempotencyHeader = "I-Twilio-Idempotency-Token"

// Signature is the X-Twilio-Signature value for a request to fullURL carrying the form
// params (nil for none, as on a WebSocket upgrade): base64 of HMAC-SHA1 keyed with the auth
// token over the URL followed by every parameter name and value, sorted by name, with no
// separators. fullURL must be the URL exactly as requested, query string included. A name
// that repeats contributes each of its values, in sorted order.
func Signature(authToken, fullURL string, params url.Values) string {
	mac := hmac.New(sha1.New, []byte(authToken))
	_, _ = io.WriteString(mac, fullURL)
	for _, name := range slices.Sorted(maps.Keys(params)) {
		values := slices.Clone(params[name])
		slices.Sort(values)
		for _, v := range values {
			_, _ = io.WriteString(mac, name)
			_, _ = io.WriteString(mac, v)
		}
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// NewSid returns a Twilio-style identifier: prefix ("CA", "AC", "MZ") and 32 lowercase hex
// digits from a cryptographic source.
func NewSid(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b[:])
}
