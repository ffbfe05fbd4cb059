package sdp

import (
	"errors"
	"slices"
	"testing"
)

func addSeeds(f *testing.F) {
	for _, body := range [][]byte{asteriskOffer, freeswitchOffer, baresipOffer, sippOffer, trunkOffer,
		multiStreamOffer, savpOffer, oldHoldOffer} {
		f.Add(body)
	}
}

func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := Parse(body)
		if err != nil {
			return
		}
		for _, c := range m.Codecs {
			if (c.Name != PCMU.Name && c.Name != PCMA.Name && c.Name != G722.Name) || c.ClockRate != 8000 || c.PayloadType > 127 {
				t.Fatalf("codec %+v", c)
			}
		}
		if m.Addr.Port() != 0 && (!m.Addr.Addr().IsValid() || m.Addr.Addr().IsMulticast()) {
			t.Fatalf("live stream at %v", m.Addr)
		}
		if !slices.Contains([]Direction{SendRecv, SendOnly, RecvOnly, Inactive}, m.Direction) {
			t.Fatalf("direction %q", m.Direction)
		}
		if (m.DTMF != 0) != (m.DTMFRate > 0) || (!m.Secure && m.Crypto != nil) {
			t.Fatalf("dtmf %d at %d, secure %v with %d keys", m.DTMF, m.DTMFRate, m.Secure, len(m.Crypto))
		}
	})
}

// FuzzAnswer answers whatever Parse accepts: Answer never panics, refuses only for the
// reasons it documents, and what it writes reads back as what it agreed.
func FuzzAnswer(f *testing.F) {
	addSeeds(f)
	local := handset
	local.Codecs = []Codec{G722, PCMU, PCMA}
	local.Crypto = []Crypto{localKey(1, SuiteAES128SHA1_80, 3)}
	f.Fuzz(func(t *testing.T, body []byte) {
		offer, err := Parse(body)
		if err != nil {
			return
		}
		answer, agreed, err := Answer(offer, local)
		if err != nil {
			if !errors.Is(err, ErrNoCommonCodec) && !errors.Is(err, ErrSecureUnsupported) {
				t.Fatalf("Answer: %v", err)
			}
			return
		}
		back, err := Parse(answer)
		if err != nil {
			t.Fatalf("the answer does not parse: %v\n%s", err, answer)
		}
		if offer.Addr.Port() == 0 {
			if back.Addr.Port() != 0 || agreed.Addr.Port() != 0 {
				t.Fatalf("a declined stream answered on %v\n%s", back.Addr, answer)
			}
			return
		}
		if back.Addr != local.Addr || len(agreed.Codecs) != 1 || !slices.Equal(back.Codecs, agreed.Codecs) ||
			!slices.Contains(offer.Codecs, agreed.Codec()) || back.DTMF != agreed.DTMF ||
			back.Direction != agreed.Direction || back.Secure != offer.Secure {
			t.Fatalf("the answer reads %+v, agreed %+v\n%s", back, agreed, answer)
		}
		if agreed.Secure && (len(back.Crypto) != 1 || back.Crypto[0].Tag != agreed.Crypto[0].Tag) {
			t.Fatalf("the answer's keys %+v, agreed %+v", back.Crypto, agreed.Crypto)
		}
	})
}
