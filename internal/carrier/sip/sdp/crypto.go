package sdp

// The SDES suites whose keys Crypto validates (RFC 4568): both take a 16-byte AES master
// key and a 14-byte salt, and differ in the length of the authentication tag.
const (
	SuiteAES128SHA1_80 = "AES_CM_128_HMAC_SHA1_80"
	SuiteAES128SHA1_32 = "AES_CM_128_HMAC_SHA1_32"
)

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
// of its length and no MKI.
func (c Crypto) Usable() bool {
	panic("not implemented")
}

// parseCrypto reads the value of an a=crypto attribute.
func parseCrypto(value string) (Crypto, error) {
	panic("not implemented")
}
