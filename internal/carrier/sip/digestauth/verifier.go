package digestauth

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
)

// DefaultMaxAge is how long a nonce is accepted after it was issued: long enough for a
// caller to answer the challenge, short enough that a captured one is soon worthless.
const DefaultMaxAge = 30 * time.Second

// Config is what a Verifier checks against.
type Config struct {
	Realm    string // named in the challenge; the caller hashes it into its answer
	Username string
	Password string
	// MaxAge is how long a nonce stays good; zero is DefaultMaxAge.
	MaxAge time.Duration
}

// Why a request's credentials were not accepted.
var (
	// ErrNoCredentials: the request carries no digest Authorization (challenge it).
	ErrNoCredentials = errors.New("digestauth: no digest credentials")
	// ErrStale: the credentials answer this call's challenge, but too late (challenge
	// again, stale=true).
	ErrStale = errors.New("digestauth: the nonce is stale")
	// ErrRefused: the credentials are wrong, malformed, or answer another call's challenge.
	ErrRefused = errors.New("digestauth: wrong credentials")
)

// Verifier issues challenges and checks the answers for one username and password.
type Verifier struct {
	cfg Config
	key [32]byte
}

// New is a Verifier with a fresh random nonce key.
func New(c Config) (*Verifier, error) {
	if c.Username == "" || c.Password == "" {
		return nil, errors.New("digestauth: a username and a password are needed")
	}
	if c.Realm == "" || strings.ContainsAny(c.Realm, "\"\\\r\n") {
		return nil, fmt.Errorf("digestauth: the realm %q is empty or holds a quote, backslash or line break", c.Realm)
	}
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultMaxAge
	}
	v := &Verifier{cfg: c}
	if _, err := rand.Read(v.key[:]); err != nil {
		return nil, fmt.Errorf("digestauth: the nonce key: %w", err)
	}
	return v, nil
}

// Challenges are the WWW-Authenticate header values for a request of the call callID:
// MD5, then SHA-256 (RFC 8760). MD5 comes first because many callers (sipp, older PBXes)
// read only the first challenge and know no other; a caller that weighs them all may
// take SHA-256. stale says the caller's last answer was right but late.
func (v *Verifier) Challenges(callID string, now time.Time, stale bool) []string {
	nonce := v.nonce(callID, now)
	extra := ""
	if stale {
		extra = ", stale=true"
	}
	out := make([]string, 0, len(algorithms))
	for _, a := range algorithms {
		out = append(out, fmt.Sprintf(`Digest realm="%s", nonce="%s", algorithm=%s, qop="auth"%s`, v.cfg.Realm, nonce, a.name, extra))
	}
	return out
}

// Check checks an Authorization header value sent with a request of method in the call
// callID: nil when the credentials are right, else ErrNoCredentials, ErrStale or
// ErrRefused.
func (v *Verifier) Check(authorization, method, callID string, now time.Time) error {
	if strings.TrimSpace(authorization) == "" {
		return ErrNoCredentials
	}
	c, err := ParseCredentials(authorization)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	alg, ok := algorithmOf(c.Algorithm)
	if !ok {
		return fmt.Errorf("%w: algorithm %q", ErrRefused, c.Algorithm)
	}
	if c.QOP != "auth" || c.CNonce == "" || len(c.NC) != 8 || c.URI == "" {
		return fmt.Errorf("%w: qop=auth with cnonce and nc is required", ErrRefused)
	}
	if c.Realm != v.cfg.Realm {
		return fmt.Errorf("%w: realm %q", ErrRefused, c.Realm)
	}
	issued, ok := v.issued(c.Nonce, callID)
	if !ok {
		return fmt.Errorf("%w: the nonce is not this call's", ErrRefused)
	}
	// The response is checked before the nonce's age: only a caller who knows the
	// password learns that its answer was late.
	want := alg.response(v.cfg.Username, v.cfg.Realm, v.cfg.Password, method, c)
	userOK := subtle.ConstantTimeCompare([]byte(c.Username), []byte(v.cfg.Username))
	respOK := subtle.ConstantTimeCompare([]byte(strings.ToLower(c.Response)), []byte(want))
	if userOK&respOK != 1 {
		return ErrRefused
	}
	if age := now.Sub(issued); age > v.cfg.MaxAge || age < -time.Second {
		return ErrStale
	}
	return nil
}

// A nonce is base64url of 8 bytes of issue time (Unix nanoseconds) and the first 16 bytes
// of HMAC-SHA256(key, time || Call-ID): it proves Handset issued it, when, and for which
// call, with nothing remembered.
const (
	nonceTime = 8
	nonceMAC  = 16
)

func (v *Verifier) nonce(callID string, now time.Time) string {
	var b [nonceTime + nonceMAC]byte
	binary.BigEndian.PutUint64(b[:nonceTime], uint64(now.UnixNano()))
	copy(b[nonceTime:], v.mac(b[:nonceTime], callID))
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// issued is when nonce was issued, when it is one Handset issued for callID.
func (v *Verifier) issued(nonce, callID string) (time.Time, bool) {
	b, err := base64.RawURLEncoding.DecodeString(nonce)
	if err != nil || len(b) != nonceTime+nonceMAC {
		return time.Time{}, false
	}
	if !hmac.Equal(b[nonceTime:], v.mac(b[:nonceTime], callID)) {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b[:nonceTime]))), true
}

func (v *Verifier) mac(stamp []byte, callID string) []byte {
	m := hmac.New(sha256.New, v.key[:])
	m.Write(stamp)
	m.Write([]byte(callID))
	return m.Sum(nil)[:nonceMAC]
}

// algorithm is a digest hash: its name as the headers write it, and the hash.
type algorithm struct {
	name string
	hash func() hash.Hash
}

// algorithms are the ones Handset challenges with, in the order it offers them.
var algorithms = []algorithm{{"MD5", md5.New}, {"SHA-256", sha256.New}}

func algorithmOf(name string) (algorithm, bool) {
	if name == "" {
		name = "MD5" // RFC 2617: no algorithm is MD5
	}
	for _, a := range algorithms {
		if strings.EqualFold(a.name, name) {
			return a, true
		}
	}
	return algorithm{}, false
}

// response is the digest a caller who knows the password sends (RFC 3261 22.4, RFC 8760
// with qop=auth): H(H(user:realm:password):nonce:nc:cnonce:auth:H(method:uri)).
func (a algorithm) response(user, realm, password, method string, c Credentials) string {
	ha1 := a.sum(user, realm, password)
	ha2 := a.sum(method, c.URI)
	return a.sum(ha1, c.Nonce, c.NC, c.CNonce, c.QOP, ha2)
}

func (a algorithm) sum(parts ...string) string {
	h := a.hash()
	h.Write([]byte(strings.Join(parts, ":")))
	return hex.EncodeToString(h.Sum(nil))
}
