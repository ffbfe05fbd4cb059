package sipsim

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/pion/srtp/v3"
)

// SRTP suites a simulated trunk can offer (CallOptions.SRTP).
const (
	SRTP80 = "AES_CM_128_HMAC_SHA1_80"
	SRTP32 = "AES_CM_128_HMAC_SHA1_32"
)

// callSRTP is a call's SRTP as the simulated trunk keys it (SDES): its own key, offered
// in the SDP, seals what it sends; Handset's, from the answer, opens what Handset sends.
type callSRTP struct {
	suite   string
	profile srtp.ProtectionProfile

	mu      sync.Mutex
	key     []byte // the key in force for sending
	pending []byte // a key offered in a re-INVITE, in force once it is answered
	seal    *srtp.Context
	open    *srtp.Context
	tag     string // the offer's crypto tag
}

// newCallSRTP keys a call for suite and turns the plain offer into an RTP/SAVP one
// carrying the key.
func newCallSRTP(suite string, offer []byte) (*callSRTP, []byte, error) {
	s := &callSRTP{suite: suite, tag: "1"}
	switch suite {
	case SRTP80:
		s.profile = srtp.ProtectionProfileAes128CmHmacSha1_80
	case SRTP32:
		s.profile = srtp.ProtectionProfileAes128CmHmacSha1_32
	default:
		return nil, nil, fmt.Errorf("sipsim: SRTP suite %q is not %s or %s", suite, SRTP80, SRTP32)
	}
	s.key = newKey()
	seal, err := srtp.CreateContext(s.key[:16], s.key[16:], s.profile)
	if err != nil {
		return nil, nil, err
	}
	s.seal = seal
	return s, s.secure(offer, s.key), nil
}

func newKey() []byte {
	key := make([]byte, 30)
	_, _ = rand.Read(key)
	return key
}

// secure rewrites a plain offer as RTP/SAVP with key in an a=crypto line.
func (s *callSRTP) secure(offer, key []byte) []byte {
	body := strings.Replace(string(offer), " RTP/AVP ", " RTP/SAVP ", 1)
	return []byte(body + "a=crypto:" + s.tag + " " + s.suite + " inline:" + base64.StdEncoding.EncodeToString(key) + "\r\n")
}

// answered reads Handset's key from its answer: the a=crypto line of the offered suite.
func (s *callSRTP) answered(answer []byte) error {
	if !strings.Contains(string(answer), " RTP/SAVP ") {
		return errors.New("sipsim: the answer to an SRTP offer is not RTP/SAVP")
	}
	for line := range strings.Lines(string(answer)) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "a=crypto:"))
		if !strings.HasPrefix(line, "a=crypto:") || len(f) < 3 || f[1] != s.suite {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(f[2], "inline:"))
		if err != nil || len(key) != 30 {
			return fmt.Errorf("sipsim: Handset's key %q", f[2])
		}
		open, err := srtp.CreateContext(key[:16], key[16:], s.profile)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.open = open
		s.mu.Unlock()
		return nil
	}
	return fmt.Errorf("sipsim: the answer has no %s key:\n%s", s.suite, answer)
}

// sealPacket encrypts one RTP packet; a nil s is plain RTP.
func (s *callSRTP) sealPacket(packet []byte) ([]byte, error) {
	if s == nil {
		return packet, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seal.EncryptRTP(nil, packet, nil)
}

// openPacket decrypts one datagram from Handset; ok is false for one that does not
// authenticate. A nil s is plain RTP.
func (s *callSRTP) openPacket(datagram []byte) (packet []byte, ok bool) {
	if s == nil {
		return datagram, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		return nil, false
	}
	out, err := s.open.DecryptRTP(nil, datagram, nil)
	return out, err == nil
}

// offerFor secures a re-INVITE's offer: with the key in force, or a new one when rekey.
func (s *callSRTP) offerFor(offer []byte, rekey bool) []byte {
	if s == nil {
		return offer
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := s.key
	if rekey {
		s.pending = newKey()
		key = s.pending
	}
	return s.secure(offer, key)
}

// reinvited puts a re-INVITE's answer in force: Handset's key, and the key offered.
func (s *callSRTP) reinvited(answer []byte) error {
	if s == nil {
		return nil
	}
	if err := s.answered(answer); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		return nil
	}
	seal, err := srtp.CreateContext(s.pending[:16], s.pending[16:], s.profile)
	if err != nil {
		return err
	}
	s.key, s.pending, s.seal = s.pending, nil, seal
	return nil
}

// RekeyOfferSDP is OfferSDP with a new SRTP key, in force for sending once Reinvite has
// had it answered.
func (call *Call) RekeyOfferSDP(dir string, version int) []byte {
	return call.srtp.offerFor(call.plainOfferSDP(dir, version), true)
}

// PlainOfferSDP is OfferSDP as plain RTP whatever the call's keys: a test of a downgrade.
func (call *Call) PlainOfferSDP(dir string, version int) []byte {
	return call.plainOfferSDP(dir, version)
}

// SendForged sends datagram to Handset's RTP address as it is, not sealed even on an
// SRTP call: a test of what Handset drops.
func (call *Call) SendForged(datagram []byte) error {
	_, err := call.rtpConn.WriteToUDPAddrPort(datagram, call.remote)
	return err
}
