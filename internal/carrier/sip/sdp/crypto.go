package sdp

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// The SDES suites whose keys Crypto validates (RFC 4568): both take a 16-byte AES master
// key and a 14-byte salt, and differ in the length of the authentication tag.
const (
	SuiteAES128SHA1_80 = "AES_CM_128_HMAC_SHA1_80"
	SuiteAES128SHA1_32 = "AES_CM_128_HMAC_SHA1_32"
)

// aes128KeySaltLen is the master key and salt of the AES_CM_128 suites.
const aes128KeySaltLen = 16 + 14

// maxKeySaltLen bounds a decoded key of any suite (AES-256 suites take 46 bytes).
const maxKeySaltLen = 64

// Crypto is one a=crypto line (RFC 4568): an SRTP key the sender will encrypt with.
type Crypto struct {
	Tag   uint32 // the line's number; an answer repeats the tag of the offer it accepted
	Suite string // SuiteAES128SHA1_80, … (other suites are kept but not usable)
	// KeySalt is the decoded inline key: the master key followed by the master salt
	// (30 bytes for the AES_CM_128 suites).
	KeySalt []byte
	// Lifetime and MKI are the optional parts of the key parameter, verbatim ("" when
	// absent): "2^20", "1:4".
	Lifetime, MKI string
	// SessionParams are the optional session parameters after the key, verbatim.
	SessionParams []string
}

// Usable reports whether Handset's SRTP can use the key: a known suite with a key and salt
// of its length, no MKI (one key per stream) and no session parameters (each changes how
// SRTP runs: unencrypted RTP, a key derivation rate, …).
func (c Crypto) Usable() bool {
	return (c.Suite == SuiteAES128SHA1_80 || c.Suite == SuiteAES128SHA1_32) &&
		len(c.KeySalt) == aes128KeySaltLen && c.MKI == "" && len(c.SessionParams) == 0
}

// parseCrypto reads the value of an a=crypto attribute:
// "<tag> <suite> inline:<key||salt base64>[|lifetime][|MKI:length] [session params]".
func parseCrypto(value string) (Crypto, error) {
	fields := strings.Fields(value)
	if len(fields) < 3 || len(fields) > 8 {
		return Crypto{}, fmt.Errorf("%w: %q", ErrBadCrypto, clip(value))
	}
	tag, err := strconv.ParseUint(fields[0], 10, 32)
	if err != nil || len(fields[0]) > 10 {
		return Crypto{}, fmt.Errorf("%w: tag %q", ErrBadCrypto, clip(fields[0]))
	}
	c := Crypto{Tag: uint32(tag), Suite: fields[1], SessionParams: fields[3:]}
	if len(c.SessionParams) == 0 {
		c.SessionParams = nil
	}
	// Several keys (";"-separated) come only with MKIs: the first is read, and its MKI
	// makes the line unusable.
	first, _, _ := strings.Cut(fields[2], ";")
	info, ok := strings.CutPrefix(first, "inline:")
	if !ok {
		return Crypto{}, fmt.Errorf("%w: key method of %q is not inline", ErrBadCrypto, clip(fields[2]))
	}
	parts := strings.Split(info, "|")
	if len(parts) > 3 {
		return Crypto{}, fmt.Errorf("%w: key %q", ErrBadCrypto, clip(info))
	}
	if c.KeySalt, err = decodeKey(parts[0]); err != nil {
		return Crypto{}, err
	}
	for _, p := range parts[1:] {
		switch {
		case strings.Contains(p, ":") && c.MKI == "":
			c.MKI = p
		case !strings.Contains(p, ":") && c.Lifetime == "" && c.MKI == "":
			c.Lifetime = p
		default:
			return Crypto{}, fmt.Errorf("%w: key parameters %q", ErrBadCrypto, clip(info))
		}
	}
	return c, nil
}

func decodeKey(text string) ([]byte, error) {
	if len(text) > base64.StdEncoding.EncodedLen(maxKeySaltLen) {
		return nil, fmt.Errorf("%w: key longer than %d bytes", ErrBadCrypto, maxKeySaltLen)
	}
	key, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		// Some peers leave out the padding.
		key, err = base64.RawStdEncoding.DecodeString(text)
	}
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("%w: key %q is not base64", ErrBadCrypto, clip(text))
	}
	return key, nil
}

// value writes the attribute value of c.
func (c Crypto) value() string {
	var b strings.Builder
	b.WriteString(strconv.FormatUint(uint64(c.Tag), 10))
	b.WriteString(" " + c.Suite + " inline:" + base64.StdEncoding.EncodeToString(c.KeySalt))
	if c.Lifetime != "" {
		b.WriteString("|" + c.Lifetime)
	}
	if c.MKI != "" {
		b.WriteString("|" + c.MKI)
	}
	for _, p := range c.SessionParams {
		b.WriteString(" " + p)
	}
	return b.String()
}
