package telnyxsim

import (
	"crypto/ed25519"
	"encoding/base64"
	"strconv"
	"time"
)

// Webhook signature headers: Ed25519 over "<timestamp>|<raw body>".
const (
	HeaderSignature = "telnyx-signature-ed25519"
	HeaderTimestamp = "telnyx-timestamp"
)

// PublicKeyBase64 is the webhook signing key as TELNYX_PUBLIC_KEY holds it: base64 of the
// raw 32-byte Ed25519 public key.
func (s *Server) PublicKeyBase64() string { return base64.StdEncoding.EncodeToString(s.pub) }

// Sign is the headers' values for body sent at `at`: what a test forging or replaying a
// webhook needs.
func (s *Server) Sign(body []byte, at time.Time) (timestamp, signature string) {
	timestamp = strconv.FormatInt(at.Unix(), 10)
	msg := make([]byte, 0, len(timestamp)+1+len(body))
	msg = append(append(append(msg, timestamp...), '|'), body...)
	return timestamp, base64.StdEncoding.EncodeToString(ed25519.Sign(s.priv, msg))
}
