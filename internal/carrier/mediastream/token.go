package mediastream

import (
	"errors"
	"time"
)

// Stream token errors: each names why a media stream was refused.
var (
	ErrTokenMissing = errors.New("missing stream token")
	ErrTokenForged  = errors.New("forged or malformed stream token")
	ErrTokenExpired = errors.New("expired stream token")
	ErrTokenReused  = errors.New("stream token already used")
	ErrTokenCall    = errors.New("stream token belongs to another call")
	// ErrTokenTooLong: the claims do not fit the encoding's bound (MaxAlphanumericToken).
	ErrTokenTooLong = errors.New("stream token claims too long for the encoding")
)

// TokenTTL is how long a carrier has to open the stream after Handset's answer.
const TokenTTL = 2 * time.Minute

// Claims is what a stream token vouches for. The webhook is often the only place a carrier
// says who is calling, so the token carries it to the media stream, signed.
type Claims struct {
	// CallRef is the carrier's id of the call (Twilio's CallSid, Telnyx's call_control_id…).
	CallRef   string `json:"c"`
	From      string `json:"f"`
	To        string `json:"t"`
	Direction string `json:"d"`
	// CallID is Handset's id for an outbound call it placed.
	CallID string `json:"i,omitempty"`
	// AnsweredBy is the carrier's answering-machine verdict, when detection was asked for.
	AnsweredBy string `json:"a,omitempty"`
	// Attestation is the STIR/SHAKEN verification of From, inbound calls only.
	Attestation string `json:"s,omitempty"`
	Expires     int64  `json:"e"`
	Nonce       string `json:"n"`
}

// Encoding is how a token is spelled.
type Encoding int

const (
	// EncodingJSON: base64url JSON claims, ".", base64url signature (Twilio's <Parameter>).
	EncodingJSON Encoding = iota
	// EncodingAlphanumeric: [0-9A-Za-z] only, at most MaxAlphanumericToken characters, for
	// carriers whose headers allow nothing else (Plivo's extraHeaders).
	EncodingAlphanumeric
)

// MaxAlphanumericToken bounds an EncodingAlphanumeric token: E.164 numbers and ids of up
// to 64 characters fit.
const MaxAlphanumericToken = 400

// Tokens mints and checks stream tokens. They are HMAC-signed with a key derived from a
// carrier secret and the carrier's name, so any node sharing the credentials can verify
// them and no carrier's token opens another's stream. A token is one-time because its
// call's stream opens once: the carrier's Memory says so (Once.StreamOnce).
type Tokens struct {
	key []byte
	enc Encoding
}

// NewTokens returns tokens for carrier (its registry name) signed with a key derived from
// secret.
func NewTokens(secret, carrier string, enc Encoding) *Tokens {
	panic("not yet")
}

// Mint returns a token for c, expiring TokenTTL after now, with a fresh nonce.
func (t *Tokens) Mint(c Claims, now time.Time) (string, error) {
	panic("not yet")
}

// Verify checks a token for callRef: signed by us, not expired, for this call.
func (t *Tokens) Verify(token, callRef string, now time.Time) (Claims, error) {
	panic("not yet")
}
