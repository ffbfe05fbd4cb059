package sdp

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseReadsRealOffers(t *testing.T) {
	g722 := G722
	cases := []struct {
		name  string
		body  []byte
		addr  string
		codes []Codec
		dtmf  uint8
		ptime time.Duration
		id    [2]uint64
	}{
		{"asterisk", asteriskOffer, "10.0.0.10:10056", []Codec{PCMU, PCMA, g722}, 101, 20 * time.Millisecond, [2]uint64{1713456789, 1713456789}},
		{"freeswitch", freeswitchOffer, "198.51.100.20:24602", []Codec{G722, PCMU, PCMA}, 101, 20 * time.Millisecond, [2]uint64{1713440000, 1713440001}},
		{"baresip", baresipOffer, "[2001:db8::20]:10200", []Codec{G722, PCMU, PCMA}, 102, 20 * time.Millisecond, [2]uint64{1094125376, 3185627140}},
		{"sipp", sippOffer, "127.0.0.1:6000", []Codec{PCMU}, 0, 0, [2]uint64{53655765, 2353687637}},
		{"trunk", trunkOffer, "192.76.120.10:30000", []Codec{PCMU, PCMA}, 101, 30 * time.Millisecond, [2]uint64{3829201, 3829201}},
		{"multi", multiStreamOffer, "203.0.113.40:9002", []Codec{PCMA, PCMU}, 0, 0, [2]uint64{42, 42}},
	}
	for _, c := range cases {
		m, err := Parse(c.body)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if m.Addr != netip.MustParseAddrPort(c.addr) {
			t.Errorf("%s: address %v, want %s", c.name, m.Addr, c.addr)
		}
		if !slices.Equal(m.Codecs, c.codes) {
			t.Errorf("%s: codecs %v, want %v", c.name, m.Codecs, c.codes)
		}
		if m.DTMF != c.dtmf || (c.dtmf != 0) != (m.DTMFRate == 8000) {
			t.Errorf("%s: telephone-event %d at %d, want %d at 8000", c.name, m.DTMF, m.DTMFRate, c.dtmf)
		}
		if m.Ptime != c.ptime || m.Direction != SendRecv || m.Secure || m.OnHold() {
			t.Errorf("%s: ptime %v direction %s secure %v hold %v", c.name, m.Ptime, m.Direction, m.Secure, m.OnHold())
		}
		if m.SessionID != c.id[0] || m.SessionVersion != c.id[1] {
			t.Errorf("%s: origin %d %d, want %v", c.name, m.SessionID, m.SessionVersion, c.id)
		}
	}
}

func TestParseKeepsDynamicPayloadTypesAndNames(t *testing.T) {
	m, err := Parse(session(`
m=audio 5000 RTP/AVP 97 98 99 100 0 0
a=rtpmap:97 pcma/8000/1
a=rtpmap:98 PCMU/16000
a=rtpmap:99 G722/16000
a=rtpmap:100 PCMU/8000/2
a=rtpmap:0 opus/48000/2
`))
	if err != nil {
		t.Fatal(err)
	}
	// 98 runs at the wrong clock and 100 is stereo: neither is usable. 0 is mapped to opus
	// explicitly, and listed twice.
	want := []Codec{{"PCMA", 97, 8000}, {"G722", 99, 8000}}
	if !slices.Equal(m.Codecs, want) {
		t.Errorf("codecs %v, want %v", m.Codecs, want)
	}
}

func TestParseReadsSecureStreams(t *testing.T) {
	m, err := Parse(savpOffer)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Secure || len(m.Crypto) != 3 {
		t.Fatalf("secure %v with %d keys, want 3", m.Secure, len(m.Crypto))
	}
	usable := []bool{false, true, true}
	for i, c := range m.Crypto {
		if c.Tag != uint32(i+1) || c.Usable() != usable[i] {
			t.Errorf("key %d: tag %d usable %v", i, c.Tag, c.Usable())
		}
	}
	if k := m.Crypto[1]; len(k.KeySalt) != 30 || k.KeySalt[0] != 40 || k.Lifetime != "2^31" || k.MKI != "" {
		t.Errorf("key 2: %+v", k)
	}
	// Keys on a plain RTP stream mean nothing and are not read.
	plain, err := Parse([]byte(strings.Replace(string(savpOffer), "RTP/SAVP", "RTP/AVP", 1)))
	if err != nil || plain.Secure || plain.Crypto != nil {
		t.Errorf("plain stream with crypto lines: %+v, %v", plain, err)
	}
}

func TestParseCrypto(t *testing.T) {
	key := "KCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4/QEFCQ0RF"
	good := []struct {
		value  string
		usable bool
	}{
		{"1 AES_CM_128_HMAC_SHA1_80 inline:" + key, true},
		{"7 AES_CM_128_HMAC_SHA1_32 inline:" + key + "|2^20", true},
		{"1 AES_CM_128_HMAC_SHA1_80 inline:" + strings.TrimRight(key, "="), true},
		{"1 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|2^20|1:4", false},
		{"1 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|1:4", false},
		{"1 AES_CM_128_HMAC_SHA1_80 inline:" + key + " UNENCRYPTED_SRTP", false},
		{"1 AES_CM_128_HMAC_SHA1_80 inline:" + key[:20], false},
		{"1 F8_128_HMAC_SHA1_80 inline:" + key, false},
	}
	for _, g := range good {
		c, err := parseCrypto(g.value)
		if err != nil || c.Usable() != g.usable {
			t.Errorf("%q: usable %v, %v; want usable %v", g.value, c.Usable(), err, g.usable)
		}
	}
	for _, bad := range []string{
		"", "1 AES_CM_128_HMAC_SHA1_80", "x AES_CM_128_HMAC_SHA1_80 inline:" + key,
		"99999999999 AES_CM_128_HMAC_SHA1_80 inline:" + key,
		"1 AES_CM_128_HMAC_SHA1_80 uri:https://example.com/key",
		"1 AES_CM_128_HMAC_SHA1_80 inline:!!!notbase64",
		"1 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|2^20|1:4|x",
		"1 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|1:4|2^20",
		"1 AES_CM_128_HMAC_SHA1_80 inline:" + strings.Repeat(key, 3),
	} {
		if _, err := parseCrypto(bad); !errors.Is(err, ErrBadCrypto) {
			t.Errorf("%q: %v, want ErrBadCrypto", bad, err)
		}
	}
	c, _ := parseCrypto("3 AES_CM_128_HMAC_SHA1_80 inline:" + key + "|2^20 KDR=1")
	if back, err := parseCrypto(c.value()); err != nil || back.value() != c.value() || back.Tag != 3 {
		t.Errorf("a written key does not read back: %q → %+v, %v", c.value(), back, err)
	}
}

func TestParseDirectionsAndHold(t *testing.T) {
	base := string(sippOffer) + "\r\n"
	cases := []struct {
		extra string
		want  Direction
		hold  bool
	}{
		{"", SendRecv, false},
		{"a=sendonly\r\n", SendOnly, true},
		{"a=inactive\r\n", Inactive, true},
		{"a=recvonly\r\n", RecvOnly, false},
	}
	for _, c := range cases {
		m, err := Parse([]byte(base + c.extra))
		if err != nil || m.Direction != c.want || m.OnHold() != c.hold {
			t.Errorf("%q: %s hold %v, %v; want %s hold %v", c.extra, m.Direction, m.OnHold(), err, c.want, c.hold)
		}
	}
	// A session-level direction applies when the stream has none; the stream's wins.
	session := strings.Replace(base, "t=0 0\r\n", "t=0 0\r\na=sendonly\r\n", 1)
	if m, err := Parse([]byte(session)); err != nil || m.Direction != SendOnly {
		t.Errorf("session-level sendonly: %s, %v", m.Direction, err)
	}
	if m, err := Parse([]byte(session + "a=sendrecv\r\n")); err != nil || m.Direction != SendRecv {
		t.Errorf("stream sendrecv under session sendonly: %s, %v", m.Direction, err)
	}
	m, err := Parse(oldHoldOffer)
	if err != nil || !m.OnHold() || m.Direction != SendRecv {
		t.Errorf("c=0.0.0.0: hold %v direction %s, %v", m.OnHold(), m.Direction, err)
	}
}

func TestParseChoosesTheFirstLiveAudioStream(t *testing.T) {
	body := session(`
m=audio 0 RTP/AVP 0
m=audio 6000 UDP/TLS/RTP/SAVPF 0
m=audio 7000 RTP/AVP 8
m=audio 8000 RTP/AVP 0
`)
	m, err := Parse(body)
	if err != nil || m.Addr.Port() != 7000 || m.Codec() != PCMA {
		t.Errorf("got port %d codec %v, %v; want the RTP/AVP stream on 7000", m.Addr.Port(), m.Codec(), err)
	}
	declined, err := Parse(session(`
m=audio 0 RTP/AVP 0
m=audio 0 RTP/AVP 8
`))
	if err != nil || declined.Addr.Port() != 0 || declined.Codec() != PCMU {
		t.Errorf("all declined: %+v, %v; want the first, declined", declined, err)
	}
}

func TestParseRefusesWhatItCannotUse(t *testing.T) {
	head := "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\n"
	cases := []struct {
		name string
		body string
		want error
	}{
		{"too large", head + strings.Repeat("a=x\r\n", MaxBodySize/5), ErrTooLarge},
		{"empty", "", ErrNoAudio},
		{"garbage", "hello\r\nm=audio 1 RTP/AVP 0\r\n", ErrSyntax},
		{"version", "v=1\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nt=0 0\r\nm=audio 1 RTP/AVP 0\r\n", ErrSyntax},
		{"short m line", head + "t=0 0\r\nm=audio 1 RTP/AVP\r\n", ErrSyntax},
		{"port", head + "c=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 70000 RTP/AVP 0\r\n", ErrSyntax},
		{"video only", head + "c=IN IP4 192.0.2.1\r\nt=0 0\r\nm=video 1 RTP/AVP 96\r\n", ErrNoAudio},
		{"fax only", head + "c=IN IP4 192.0.2.1\r\nt=0 0\r\nm=image 1 udptl t38\r\n", ErrNoAudio},
		{"declined and webrtc", head + "c=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 0 RTP/AVP 0\r\nm=audio 1 UDP/TLS/RTP/SAVPF 111\r\n", ErrNoAudio},
		{"webrtc only", head + "c=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 1 UDP/TLS/RTP/SAVPF 111\r\n", ErrNoAudio},
		{"no c line", head + "t=0 0\r\nm=audio 1 RTP/AVP 0\r\n", ErrAddress},
		{"hostname", head + "c=IN IP4 pbx.example.com\r\nt=0 0\r\nm=audio 1 RTP/AVP 0\r\n", ErrAddress},
		{"multicast", head + "c=IN IP4 224.2.1.1/127\r\nt=0 0\r\nm=audio 1 RTP/AVP 0\r\n", ErrAddress},
		{"wrong family", head + "c=IN IP6 192.0.2.1\r\nt=0 0\r\nm=audio 1 RTP/AVP 0\r\n", ErrAddress},
		{"bad key", head + "c=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 1 RTP/SAVP 0\r\na=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:@@\r\n", ErrBadCrypto},
		{"many streams", head + "c=IN IP4 192.0.2.1\r\nt=0 0\r\n" + strings.Repeat("m=audio 0 RTP/AVP 0\r\n", maxStreams+1), ErrSyntax},
		{"many keys", head + "c=IN IP4 192.0.2.1\r\nt=0 0\r\nm=audio 1 RTP/SAVP 0\r\n" +
			strings.Repeat("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:KCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4/QEFCQ0RF\r\n", maxCrypto+1), ErrBadCrypto},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.body))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if err != nil && len(err.Error()) > 160 {
			t.Errorf("%s: error of %d bytes quotes too much", c.name, len(err.Error()))
		}
	}
}

func TestParseSuppliesAMissingTimeLine(t *testing.T) {
	for _, body := range []string{
		"v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nm=audio 5000 RTP/AVP 8\r\n",
		"v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\na=sendonly\r\nm=audio 5000 RTP/AVP 8\r\n",
	} {
		m, err := Parse([]byte(body))
		if err != nil || m.Addr.Port() != 5000 || m.Codec() != PCMA {
			t.Errorf("%q: %+v, %v", body, m, err)
		}
	}
}

func TestParseToleratesWhatItIgnores(t *testing.T) {
	for _, extra := range []string{"a=ptime:abc\r\n", "a=ptime:0\r\n", "a=rtpmap:x\r\n", "a=rtpmap:101\r\n", "a=fmtp:101\r\n"} {
		m, err := Parse([]byte(string(sippOffer) + "\r\n" + extra))
		if err != nil || m.Ptime != 0 || m.Codec() != PCMU {
			t.Errorf("%q: %+v, %v", extra, m, err)
		}
	}
}

func ExampleParse() {
	m, err := Parse(asteriskOffer)
	fmt.Println(m.Addr, m.Codecs, m.DTMF, err)
	// Output: 10.0.0.10:10056 [{PCMU 0 8000} {PCMA 8 8000} {G722 9 8000}] 101 <nil>
}
