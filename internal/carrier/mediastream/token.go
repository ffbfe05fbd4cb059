package mediastream

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
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
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("handset " + carrier + " stream token v1"))
	return &Tokens{key: mac.Sum(nil), enc: enc}
}

// Mint returns a token for c, expiring TokenTTL after now, with a fresh nonce.
func (t *Tokens) Mint(c Claims, now time.Time) (string, error) {
	var nonce [nonceBytes]byte
	_, _ = rand.Read(nonce[:])
	c.Nonce = hex.EncodeToString(nonce[:])
	c.Expires = now.Add(TokenTTL).Unix()
	if t.enc == EncodingAlphanumeric {
		return t.mintAlphanumeric(c)
	}
	body, _ := json.Marshal(c)
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + base64.RawURLEncoding.EncodeToString(t.sign([]byte(payload))), nil
}

// nonceBytes makes every token unique even for claims minted in the same second.
const nonceBytes = 12

func (t *Tokens) sign(payload []byte) []byte {
	mac := hmac.New(sha256.New, t.key)
	mac.Write(payload)
	return mac.Sum(nil)
}

// Verify checks a token for callRef: signed by us, not expired, for this call.
func (t *Tokens) Verify(token, callRef string, now time.Time) (Claims, error) {
	if token == "" {
		return Claims{}, ErrTokenMissing
	}
	var c Claims
	var err error
	if t.enc == EncodingAlphanumeric {
		c, err = t.verifyAlphanumeric(token)
	} else {
		c, err = t.verifyJSON(token)
	}
	if err != nil {
		return c, err
	}
	if now.Unix() > c.Expires {
		return c, ErrTokenExpired
	}
	if c.CallRef != callRef {
		return c, ErrTokenCall
	}
	return c, nil
}

func (t *Tokens) verifyJSON(token string) (Claims, error) {
	var c Claims
	payload, sig, ok := strings.Cut(token, ".")
	want := base64.RawURLEncoding.EncodeToString(t.sign([]byte(payload)))
	if !ok || !hmac.Equal([]byte(want), []byte(sig)) {
		return c, ErrTokenForged
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(body, &c) != nil || c.Nonce == "" {
		return c, ErrTokenForged
	}
	return c, nil
}
