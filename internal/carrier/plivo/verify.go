package plivo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/mediastream"
)

// Verifier checks that a request to one of Handset's Plivo routes came from Plivo: its
// V3 signature over the URL Plivo called and its form, and a nonce never seen before. V3
// has no timestamp, so a replay is refused by remembering every nonce for every node
// through the calls' memory.
type Verifier struct {
	AuthToken string
	// PublicURL and TrustedProxies say which URL Plivo called (mediastream.PublicURL).
	PublicURL      string
	TrustedProxies []netip.Prefix
	Memory         carrier.Memory
	Now            func() time.Time // default time.Now
}

// Verification errors.
var (
	// ErrSignature: the request has no valid V3 signature (answer 403).
	ErrSignature = errors.New("the request has no valid Plivo signature")
	// ErrReplay: the signature is valid but its nonce was used before (answer 403).
	ErrReplay = errors.New("the request's nonce was used before: a replay")
)

// maxForm bounds a request body Plivo sends: a callback's form is a few hundred bytes.
const maxForm = 64 << 10

// nonceKey is the memory key of a nonce, apart from other carriers' keys.
const nonceKey = "plivo-v3-nonce:"

// Signed reads r's form (bounded) and checks its signature only: nil or ErrSignature.
// For routes where a repeat is harmless or handled otherwise (a callback merged into the
// ledger, an answer kept once): whether Plivo's retries reuse the nonce is unconfirmed.
func (v Verifier) Signed(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("%w: unreadable form: %v", ErrSignature, err)
	}
	full := mediastream.PublicURL(r, v.PublicURL, v.TrustedProxies, false)
	if !ValidSignatureV3(v.AuthToken, r.Method, full, r.PostForm, r.Header.Get(NonceHeader), r.Header.Get(SignatureHeader)) {
		return ErrSignature
	}
	return nil
}

// Verify is Signed and a nonce never seen before: nil, ErrSignature, ErrReplay, or an
// error wrapping mediastream.ErrMemoryUnavailable (answer 503: Plivo retries).
func (v Verifier) Verify(w http.ResponseWriter, r *http.Request) error {
	if err := v.Signed(w, r); err != nil {
		return err
	}
	nonce := r.Header.Get(NonceHeader)
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	ctx, cancel := context.WithTimeout(r.Context(), mediastream.MemoryTimeout)
	defer cancel()
	first, err := v.Memory.Once(ctx, nonceKey+nonce, now())
	switch {
	case err != nil:
		return fmt.Errorf("%w: %v", mediastream.ErrMemoryUnavailable, err)
	case !first:
		return ErrReplay
	}
	return nil
}
