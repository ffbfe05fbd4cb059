package digestauth

import (
	"errors"
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
func New(c Config) (*Verifier, error) { panic("not yet") }

// Challenges are the WWW-Authenticate header values for a request of the call callID:
// SHA-256 first, then MD5 (RFC 8760: a caller answers the first it can). stale says the
// caller's last answer was right but late.
func (v *Verifier) Challenges(callID string, now time.Time, stale bool) []string { panic("not yet") }

// Check checks an Authorization header value sent with a request of method in the call
// callID: nil when the credentials are right, else ErrNoCredentials, ErrStale or
// ErrRefused.
func (v *Verifier) Check(authorization, method, callID string, now time.Time) error {
	panic("not yet")
}
