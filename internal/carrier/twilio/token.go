package twilio

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
)

// tokenTTL is how long Twilio has to open the stream after our TwiML answer.
const tokenTTL = 2 * time.Minute

// streamClaims is what a stream token vouches for. The webhook is the only place Twilio
// tells us who is calling, so the token carries it to the media stream, signed.
type streamClaims struct {
	CallSid   string `json:"c"`
	From      string `json:"f"`
	To        string `json:"t"`
	Direction string `json:"d"`
	// CallID is Handset's id for an outbound call it placed (from the webhook URL).
	CallID string `json:"i,omitempty"`
	// AnsweredBy is Twilio's answering-machine verdict, when detection was asked for.
	AnsweredBy string `json:"a,omitempty"`
	// Attestation is the STIR/SHAKEN verification of From (StirVerstat), inbound calls only.
	Attestation string `json:"s,omitempty"`
	Expires     int64  `json:"e"`
	Nonce       string `json:"n"`
}

// tokens mints and checks stream tokens. Tokens are HMAC-signed with a key derived from
// the auth token, so any node sharing the credentials can verify them. A token is one-time
// because its call's stream opens once: the carrier's Memory, shared by every node, says so.
type tokens struct {
	key []byte
}

func newTokens(authToken string) *tokens {
	mac := hmac.New(sha256.New, []byte(authToken))
	mac.Write([]byte("handset twilio stream token v1"))
	return &tokens{key: mac.Sum(nil)}
}

func (t *tokens) mint(c streamClaims, now time.Time) string {
	var nonce [12]byte
	_, _ = rand.Read(nonce[:])
	c.Nonce = hex.EncodeToString(nonce[:])
	c.Expires = now.Add(tokenTTL).Unix()
	body, _ := json.Marshal(c)
	payload := base64.RawURLEncoding.EncodeToString(body)
	return payload + "." + t.sign(payload)
}

func (t *tokens) sign(payload string) string {
	mac := hmac.New(sha256.New, t.key)
	mac.Write([]byte(payload))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// verify checks a token for callSid: signed by us, not expired, for this call.
func (t *tokens) verify(token, callSid string, now time.Time) (streamClaims, error) {
	var c streamClaims
	if token == "" {
		return c, ErrTokenMissing
	}
	payload, sig, ok := strings.Cut(token, ".")
	if !ok || !hmac.Equal([]byte(t.sign(payload)), []byte(sig)) {
		return c, ErrTokenForged
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(body, &c) != nil || c.Nonce == "" {
		return c, ErrTokenForged
	}
	if now.Unix() > c.Expires {
		return c, ErrTokenExpired
	}
	if c.CallSid != callSid {
		return c, ErrTokenCall
	}
	return c, nil
}
