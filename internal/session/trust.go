package session

import (
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// Trust is HANDSET_CALLER_MEMORY_ATTESTATION: the least STIR/SHAKEN attestation an inbound
// caller's number needs before Handset keys memory (and callbacks) by it.
type Trust string

// Trust levels.
const (
	TrustAny Trust = "any" // every number keys memory (the default)
	TrustB   Trust = "B"   // attestation A or B
	TrustA   Trust = "A"   // attestation A only
)

// ParseTrust reads the setting; empty means any.
func ParseTrust(s string) (Trust, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "", "ANY":
		return TrustAny, nil
	case "A":
		return TrustA, nil
	case "B":
		return TrustB, nil
	}
	return "", fmt.Errorf("HANDSET_CALLER_MEMORY_ATTESTATION=%q is not one of any, B, A", s)
}

// Vouches reports whether attestation a is enough for t.
func (t Trust) Vouches(a voice.Attestation) bool {
	switch t {
	case TrustAny, "":
		return true
	case TrustA:
		return a == voice.AttestationA
	case TrustB:
		return a == voice.AttestationA || a == voice.AttestationB
	}
	return false // a level nobody parsed: trust nothing
}
