// Package session owns caller identity as agent runtimes see it: the caller hash (an HMAC
// of the normalised number, so the same caller is recognised across calls while the raw
// number never reaches a journal, log or runtime) and the secret behind it.
package session

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// NormalizeNumber reduces a phone number to E.164 digits with a leading +: spaces, dashes,
// dots and brackets go; a leading 00 becomes +. Anything else (a SIP user, "anonymous")
// is kept lower-cased so it still hashes consistently.
func NormalizeNumber(n string) string {
	n = strings.TrimSpace(n)
	var b strings.Builder
	for i, r := range n {
		switch {
		case r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '+' && i == 0:
			b.WriteRune(r)
		case strings.ContainsRune(" -.()/", r):
		default:
			return strings.ToLower(n)
		}
	}
	s := b.String()
	if strings.HasPrefix(s, "00") {
		s = "+" + s[2:]
	}
	return s
}

// CallerHash is the caller's stable pseudonym: "ch_" and 24 hex digits of
// HMAC-SHA256(secret, normalised number). Empty for a withheld number (see Withheld):
// everyone who withholds theirs would otherwise share one pseudonym, and one memory.
func CallerHash(secret []byte, number string) string {
	n := NormalizeNumber(number)
	if n == "" || Withheld(number) {
		return ""
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(n))
	return "ch_" + hex.EncodeToString(mac.Sum(nil))[:24]
}

// legacySecretFile is where Handset before the shared store kept its generated secret.
const legacySecretFile = "caller-hash-secret"

// SecretCandidate proposes a caller-hash secret when none is configured: the one an older
// Handset generated into dataDir (so hashes stay stable across the upgrade), else a new
// random one. The store decides which candidate every node uses (store.SharedSecret).
func SecretCandidate(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, legacySecretFile))
	if err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("caller hash secret: %w", err)
	}
	return RandomSecret()
}

// RandomSecret is 32 random bytes in hex.
func RandomSecret() (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(raw[:]), nil
}
