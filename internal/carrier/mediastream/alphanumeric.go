package mediastream

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math/big"
)

// An alphanumeric token is base 62 (math/big's digits: 0-9, a-z, A-Z) of a compact binary
// body and its HMAC: a version byte (never 0, so no leading digit is lost), the string
// claims each after a one-byte length, Expires as 8 bytes, the nonce's 12 bytes.
const alphanumericVersion = 1

// alphanumericStrings are the string claims in the order the body carries them.
func alphanumericStrings(c *Claims) [7]*string {
	return [7]*string{&c.CallRef, &c.From, &c.To, &c.Direction, &c.CallID, &c.AnsweredBy, &c.Attestation}
}

func (t *Tokens) mintAlphanumeric(c Claims) (string, error) {
	body := make([]byte, 0, 256)
	body = append(body, alphanumericVersion)
	for _, s := range alphanumericStrings(&c) {
		if len(*s) > 255 {
			return "", ErrTokenTooLong
		}
		body = append(body, byte(len(*s)))
		body = append(body, *s...)
	}
	body = binary.BigEndian.AppendUint64(body, uint64(c.Expires))
	body, _ = hex.AppendDecode(body, []byte(c.Nonce))
	body = append(body, t.sign(body)...)
	token := new(big.Int).SetBytes(body).Text(62)
	if len(token) > MaxAlphanumericToken {
		return "", ErrTokenTooLong
	}
	return token, nil
}

func (t *Tokens) verifyAlphanumeric(token string) (Claims, error) {
	var c Claims
	if len(token) > MaxAlphanumericToken || token[0] == '0' {
		return c, ErrTokenForged
	}
	for i := 0; i < len(token); i++ {
		if b := token[i]; !('0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z') {
			return c, ErrTokenForged
		}
	}
	n, ok := new(big.Int).SetString(token, 62)
	if !ok {
		return c, ErrTokenForged
	}
	raw := n.Bytes()
	if len(raw) < 1+sha256.Size {
		return c, ErrTokenForged
	}
	body, sig := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if !hmac.Equal(t.sign(body), sig) || body[0] != alphanumericVersion {
		return c, ErrTokenForged
	}
	rest := body[1:]
	for _, s := range alphanumericStrings(&c) {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return c, ErrTokenForged
		}
		*s, rest = string(rest[1:1+int(rest[0])]), rest[1+int(rest[0]):]
	}
	if len(rest) != 8+nonceBytes {
		return c, ErrTokenForged
	}
	c.Expires = int64(binary.BigEndian.Uint64(rest))
	c.Nonce = hex.EncodeToString(rest[8:])
	return c, nil
}
