package sip

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/carrier/sip/media"
	"github.com/handset-voice/handset/internal/carrier/sip/sdp"
)

// SRTP with SDES keys (RFC 4568): each side picks a random master key per call and writes
// it into its SDP (a=crypto); the other side decrypts with it. The keys travel in the
// signalling, so SRTP is only as private as the signalling: with TLS, nobody on the path
// can read them.

// SettingSRTP is whether calls' media must be encrypted.
const SettingSRTP = "HANDSET_SIP_SRTP"

// The values of HANDSET_SIP_SRTP.
const (
	// SRTPOffered (the default) encrypts a call's media when the caller's offer asks for
	// it (RTP/SAVP), and speaks plain RTP otherwise; outbound calls offer plain RTP.
	SRTPOffered = "offered"
	// SRTPRequired refuses plain RTP offers (488) and offers only SRTP on outbound calls.
	SRTPRequired = "required"
)

// errSRTPPolicy is an offer HANDSET_SIP_SRTP does not let Handset answer: 488.
var errSRTPPolicy = errors.New("sip: " + SettingSRTP)

// readSRTP reads HANDSET_SIP_SRTP.
func readSRTP(v string) (string, error) {
	switch v = strings.ToLower(strings.TrimSpace(v)); v {
	case "":
		return SRTPOffered, nil
	case SRTPOffered, SRTPRequired:
		return v, nil
	}
	return "", fmt.Errorf("%q is not %s or %s", v, SRTPOffered, SRTPRequired)
}

// srtpSuites are the suites Handset keys, most preferred first: the 80-bit tag is the
// stronger and what every SDES peer offers.
var srtpSuites = []string{sdp.SuiteAES128SHA1_80, sdp.SuiteAES128SHA1_32}

// freshKeys makes Handset's keys for one call: a new random master key and salt for each
// suite, never reused across calls.
// crypto/rand does not fail: the program ends if the system's source does.
func freshKeys() []sdp.Crypto {
	keys := make([]sdp.Crypto, len(srtpSuites))
	for i, suite := range srtpSuites {
		key := make([]byte, media.SRTPKeySaltLen)
		_, _ = rand.Read(key)
		keys[i] = sdp.Crypto{Tag: uint32(i + 1), Suite: suite, KeySalt: key}
	}
	return keys
}

// offerKeys are the keys an offer of Handset's carries: none unless SRTP is required.
func (t *Trunk) offerKeys() []sdp.Crypto {
	if t.opts.SRTP != SRTPRequired {
		return nil
	}
	return freshKeys()
}

// answerKeys are the keys an answer to offer may carry: none for a plain offer, whose
// call never needs them (rekey refuses a switch to SRTP inside a call).
func answerKeys(offer sdp.Media) []sdp.Crypto {
	if !offer.Secure {
		return nil
	}
	return freshKeys()
}

// checkOfferSecurity refuses a plain RTP offer when SRTP is required.
func (t *Trunk) checkOfferSecurity(offer sdp.Media) error {
	if t.opts.SRTP == SRTPRequired && !offer.Secure && offer.Addr.Port() != 0 {
		return fmt.Errorf("%w is %s and the offer is plain RTP (RTP/AVP)", errSRTPPolicy, SRTPRequired)
	}
	return nil
}

// mediaSRTP is the media session's keys for an agreed SDP: the peer's key as agreed, and
// Handset's key of the same suite. A plain agreement is the zero SRTP.
func mediaSRTP(agreed sdp.Media, ours []sdp.Crypto) (media.SRTP, error) {
	if !agreed.Secure {
		return media.SRTP{}, nil
	}
	if len(agreed.Crypto) != 1 {
		return media.SRTP{}, fmt.Errorf("%w: no agreed key", sdp.ErrSecureUnsupported)
	}
	theirs := agreed.Crypto[0]
	suite, ok := media.SuiteByName(theirs.Suite)
	if !ok {
		return media.SRTP{}, fmt.Errorf("%w: suite %s", sdp.ErrSecureUnsupported, theirs.Suite)
	}
	for _, c := range ours {
		if c.Suite == theirs.Suite {
			return media.SRTP{Suite: suite, Local: c.KeySalt, Remote: theirs.KeySalt}, nil
		}
	}
	return media.SRTP{}, fmt.Errorf("%w: no key of ours for %s", sdp.ErrSecureUnsupported, theirs.Suite)
}

// rekey applies a re-INVITE's keys to the call's media. Switching between RTP and SRTP
// inside a call is refused: a downgrade to plain RTP mid-call is what an attacker on the
// signalling path would ask for, and no trunk needs it.
func rekey(sess *media.Session, was, now sdp.Media, ours []sdp.Crypto) error {
	if was.Secure != now.Secure {
		return fmt.Errorf("%w: a re-INVITE may not switch between RTP and SRTP", errSRTPPolicy)
	}
	if !now.Secure || sameKey(was.Crypto, now.Crypto) {
		return nil
	}
	keys, err := mediaSRTP(now, ours)
	if err != nil {
		return err
	}
	return sess.SetSRTP(keys)
}

// sameKey reports whether two agreements hold the same peer key.
func sameKey(a, b []sdp.Crypto) bool {
	return len(a) == 1 && len(b) == 1 && a[0].Suite == b[0].Suite && bytes.Equal(a[0].KeySalt, b[0].KeySalt)
}
