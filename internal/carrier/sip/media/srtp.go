package media

import (
	"errors"
	"fmt"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
)

// SRTPSuite is an SRTP crypto suite (RFC 4568 names it in the SDP's a=crypto line).
type SRTPSuite uint8

// The suites a session can key. Both encrypt with AES-128 in counter mode and
// authenticate with HMAC-SHA1; they differ in how many bytes of the tag each packet
// carries.
const (
	SRTPNone          SRTPSuite = iota // plain RTP
	SRTPAES128SHA1_80                  // AES_CM_128_HMAC_SHA1_80: a 10-byte tag
	SRTPAES128SHA1_32                  // AES_CM_128_HMAC_SHA1_32: a 4-byte tag
	srtpSuites                         // the first value that is no suite
)

// SRTPKeySaltLen is the master key and salt of both suites: 16 bytes of AES key then 14
// of salt, the inline key of an a=crypto line decoded.
const SRTPKeySaltLen = 16 + 14

// srtpReplayWindow is how many packets back a replayed packet is recognised (RFC 3711
// asks for at least 64).
const srtpReplayWindow = 128

// maxAuthTag is the longest tag a suite appends to each packet.
const maxAuthTag = 10

// ErrUnauthentic: an SRTP packet failed authentication (forged, tampered with, or sealed
// with another key); the session drops it and counts it malformed.
var ErrUnauthentic = errors.New("media: SRTP packet failed authentication")

// SuiteByName maps an RFC 4568 suite name to its SRTPSuite; ok is false for a suite the
// session cannot key.
func SuiteByName(name string) (suite SRTPSuite, ok bool) {
	switch name {
	case "AES_CM_128_HMAC_SHA1_80":
		return SRTPAES128SHA1_80, true
	case "AES_CM_128_HMAC_SHA1_32":
		return SRTPAES128SHA1_32, true
	}
	return SRTPNone, false
}

// String is the suite's RFC 4568 name.
func (s SRTPSuite) String() string {
	switch s {
	case SRTPNone:
		return "none"
	case SRTPAES128SHA1_80:
		return "AES_CM_128_HMAC_SHA1_80"
	case SRTPAES128SHA1_32:
		return "AES_CM_128_HMAC_SHA1_32"
	}
	return fmt.Sprintf("SRTPSuite(%d)", uint8(s))
}

// SRTP keys a session's media (SDES, RFC 4568: each side chose its own key and sent it in
// the SDP over the signalling, so the signalling had better be TLS). The zero value is
// plain RTP.
type SRTP struct {
	Suite SRTPSuite
	// Local is Handset's master key and salt (SRTPKeySaltLen bytes): it encrypts what the
	// session sends. Remote is the peer's: it decrypts and authenticates what arrives.
	Local, Remote []byte
}

// Enabled reports whether k asks for SRTP at all.
func (k SRTP) Enabled() bool { return k.Suite != SRTPNone }

func (k SRTP) validate() error {
	switch {
	case k.Suite >= srtpSuites:
		return fmt.Errorf("media: unknown SRTP suite %d", uint8(k.Suite))
	case k.Suite == SRTPNone:
		if len(k.Local) != 0 || len(k.Remote) != 0 {
			return errors.New("media: SRTP keys given without a suite")
		}
	case len(k.Local) != SRTPKeySaltLen || len(k.Remote) != SRTPKeySaltLen:
		return fmt.Errorf("media: SRTP %s takes %d-byte keys, got %d (ours) and %d (the peer's)",
			k.Suite, SRTPKeySaltLen, len(k.Local), len(k.Remote))
	}
	return nil
}

func (s SRTPSuite) profile() srtp.ProtectionProfile {
	if s == SRTPAES128SHA1_32 {
		return srtp.ProtectionProfileAes128CmHmacSha1_32
	}
	return srtp.ProtectionProfileAes128CmHmacSha1_80
}

// sealer is a session's SRTP state: one context per direction (each has its own key and
// rollover counters) and the buffers packets are sealed and opened in, reused. nil is
// plain RTP.
type sealer struct {
	out, in *srtp.Context
	tagLen  int
	sealed  []byte     // the last packet sealed
	opened  []byte     // the last packet opened
	header  rtp.Header // scratch for the SRTP contexts' header parsing
	inHdr   rtp.Header
	// failures counts packets that could not be sealed (not sent), logged at the first.
	failures int
}

// newSealer builds the contexts for k; nil, nil for plain RTP.
func newSealer(k SRTP) (*sealer, error) {
	if err := k.validate(); err != nil {
		return nil, err
	}
	if !k.Enabled() {
		return nil, nil
	}
	p := k.Suite.profile()
	out, err := srtp.CreateContext(k.Local[:16], k.Local[16:], p)
	if err != nil {
		return nil, fmt.Errorf("media: SRTP key for sending: %w", err)
	}
	in, err := srtp.CreateContext(k.Remote[:16], k.Remote[16:], p, srtp.SRTPReplayProtection(srtpReplayWindow))
	if err != nil {
		return nil, fmt.Errorf("media: SRTP key for receiving: %w", err)
	}
	tag, err := p.AuthTagRTPLen()
	if err != nil {
		return nil, fmt.Errorf("media: SRTP suite %s: %w", k.Suite, err)
	}
	return &sealer{
		out: out, in: in, tagLen: tag,
		sealed: make([]byte, 0, rtpHeaderBytes+maxFrameBytes+maxAuthTag),
		opened: make([]byte, 0, maxPacket+1),
	}, nil
}

// seal encrypts and authenticates one RTP packet; the result lives until the next seal.
func (z *sealer) seal(packet []byte) ([]byte, error) {
	sealed, err := z.out.EncryptRTP(z.sealed[:0], packet, &z.header)
	if err != nil {
		return nil, fmt.Errorf("media: SRTP sealing: %w", err)
	}
	z.sealed = sealed[:0]
	return sealed, nil
}

// open authenticates and decrypts one SRTP datagram; the result lives until the next
// open. replayed is true (with no error) for a packet already received: not the peer's
// fault, just dropped.
func (z *sealer) open(datagram []byte) (packet []byte, replayed bool, err error) {
	n, err := z.inHdr.Unmarshal(datagram)
	if err != nil {
		return nil, false, fmt.Errorf("media: bad SRTP packet: %w", err)
	}
	if len(datagram) < n+z.tagLen {
		return nil, false, fmt.Errorf("%w: %d bytes is shorter than a header and its tag", ErrUnauthentic, len(datagram))
	}
	opened, err := z.in.DecryptRTP(z.opened[:0], datagram, &z.inHdr)
	switch {
	case errors.Is(err, srtp.ErrFailedToVerifyAuthTag):
		return nil, false, ErrUnauthentic
	case err != nil:
		// The header and length were checked above and the suite has no MKI: what is
		// left is the replay window refusing an index it has seen.
		return nil, true, nil
	}
	return opened, false, nil
}

// overhead is the bytes sealing adds to a packet: 0 for plain RTP.
func (z *sealer) overhead() int {
	if z == nil {
		return 0
	}
	return z.tagLen
}

// openPacket is the receive path's hook: the datagram itself for plain RTP, else open.
func (z *sealer) openPacket(datagram []byte) (packet []byte, replayed bool, err error) {
	if z == nil {
		return datagram, false, nil
	}
	return z.open(datagram)
}
