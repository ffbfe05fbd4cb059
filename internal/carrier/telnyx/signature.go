package telnyx

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The headers Telnyx signs every webhook with.
const (
	SignatureHeader = "telnyx-signature-ed25519" // base64 of the 64-byte Ed25519 signature
	TimestampHeader = "telnyx-timestamp"         // Unix seconds
)

// SignatureTolerance is how far a webhook's timestamp may be from now, either way: an
// older one is a replay, a newer one a forgery prepared in advance.
const SignatureTolerance = 300 * time.Second

// Signature errors.
var (
	ErrUnsigned       = errors.New("telnyx: request is not signed")
	ErrBadSignature   = errors.New("telnyx: signature does not match")
	ErrBadTimestamp   = errors.New("telnyx: timestamp is not a number of seconds")
	ErrStaleTimestamp = errors.New("telnyx: timestamp is outside the tolerance")
	ErrBadPublicKey   = errors.New("telnyx: public key is not base64 of a 32-byte Ed25519 key")
)

// ParsePublicKey decodes TELNYX_PUBLIC_KEY: the account's webhook public key, base64 of
// the raw 32-byte Ed25519 key.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, ErrBadPublicKey
	}
	return ed25519.PublicKey(raw), nil
}

// VerifySignature checks a webhook: signature must be key's Ed25519 signature of
// timestamp + "|" + body, the raw body byte for byte, and timestamp within
// SignatureTolerance of now.
func VerifySignature(key ed25519.PublicKey, timestamp, signature string, body []byte, now time.Time) error {
	if len(key) != ed25519.PublicKeySize {
		return ErrBadPublicKey
	}
	if timestamp == "" || signature == "" {
		return ErrUnsigned
	}
	if len(timestamp) > 19 {
		return ErrBadTimestamp
	}
	secs, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || secs < 0 || timestamp[0] == '+' {
		return ErrBadTimestamp
	}
	skew := now.Sub(time.Unix(secs, 0))
	if skew > SignatureTolerance || skew < -SignatureTolerance {
		return fmt.Errorf("%w (%s off)", ErrStaleTimestamp, skew.Round(time.Second))
	}
	if base64.StdEncoding.DecodedLen(len(signature)) > 2*ed25519.SignatureSize {
		return fmt.Errorf("%w: not base64 of 64 bytes", ErrBadSignature)
	}
	sig, err := base64.StdEncoding.DecodeString(signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: not base64 of 64 bytes", ErrBadSignature)
	}
	msg := make([]byte, 0, len(timestamp)+1+len(body))
	msg = append(append(append(msg, timestamp...), '|'), body...)
	if !ed25519.Verify(key, msg, sig) {
		return ErrBadSignature
	}
	return nil
}
