package sdp

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

var handset = Local{
	Addr:      netip.MustParseAddrPort("203.0.113.5:20000"),
	Codecs:    []Codec{PCMU, PCMA},
	DTMF:      101,
	SessionID: 77, Version: 1,
}

func mustParse(t *testing.T, body []byte) Media {
	t.Helper()
	m, err := Parse(body)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, body)
	}
	return m
}

// checkAnswer reads an answer back and checks it says what agreed says, from Handset's
// side: its own address, the agreed codec under the offer's payload type, the direction.
func checkAnswer(t *testing.T, answer []byte, agreed Media, local Local) Media {
	t.Helper()
	back := mustParse(t, answer)
	if back.Addr.Port() != 0 && back.Addr != local.Addr {
		t.Errorf("the answer gives address %v, want %v", back.Addr, local.Addr)
	}
	if !slices.Equal(back.Codecs, agreed.Codecs) || back.DTMF != agreed.DTMF || back.Direction != agreed.Direction {
		t.Errorf("the answer says %v dtmf %d %s; agreed %v dtmf %d %s",
			back.Codecs, back.DTMF, back.Direction, agreed.Codecs, agreed.DTMF, agreed.Direction)
	}
	if back.SessionID != local.SessionID || back.SessionVersion != local.Version {
		t.Errorf("the answer's origin is %d %d, want %d %d", back.SessionID, back.SessionVersion, local.SessionID, local.Version)
	}
	return back
}

func TestAnswerPicksHandsetsPreferenceUnderTheOffersNumbers(t *testing.T) {
	cases := []struct {
		name   string
		offer  []byte
		codecs []Codec
		want   Codec
		dtmf   uint8
	}{
		{"asterisk, PCMU first for both", asteriskOffer, []Codec{PCMU, PCMA}, PCMU, 101},
		{"freeswitch prefers G722, Handset PCMA", freeswitchOffer, []Codec{PCMA, PCMU}, PCMA, 101},
		{"freeswitch, Handset takes G722 when first", freeswitchOffer, []Codec{G722, PCMU}, G722, 101},
		{"baresip: the 8 kHz telephone-event", baresipOffer, []Codec{PCMU}, PCMU, 102},
		{"trunk: past G729", trunkOffer, []Codec{PCMA, PCMU}, PCMA, 101},
		{"sipp: only PCMU", sippOffer, []Codec{G722, PCMA, PCMU}, PCMU, 0},
		{"dynamic PCMA", session(`
m=audio 5000 RTP/AVP 97 101
a=rtpmap:97 PCMA/8000
a=rtpmap:101 telephone-event/48000
`), []Codec{PCMU, PCMA}, Codec{"PCMA", 97, 8000}, 0},
	}
	for _, c := range cases {
		local := handset
		local.Codecs = c.codecs
		offer := mustParse(t, c.offer)
		answer, agreed, err := Answer(offer, local)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if agreed.Codec() != c.want || len(agreed.Codecs) != 1 || agreed.DTMF != c.dtmf {
			t.Errorf("%s: agreed %v dtmf %d, want %v dtmf %d", c.name, agreed.Codecs, agreed.DTMF, c.want, c.dtmf)
		}
		if agreed.Addr != offer.Addr || agreed.Ptime != offer.Ptime || agreed.SessionVersion != offer.SessionVersion {
			t.Errorf("%s: agreed %v ptime %v version %d; the offer's are %v %v %d", c.name,
				agreed.Addr, agreed.Ptime, agreed.SessionVersion, offer.Addr, offer.Ptime, offer.SessionVersion)
		}
		checkAnswer(t, answer, agreed, local)
	}
}

func TestAnswerWithoutLocalDTMFLeavesTelephoneEventOut(t *testing.T) {
	local := handset
	local.DTMF = 0
	answer, agreed, err := Answer(mustParse(t, asteriskOffer), local)
	if err != nil || agreed.DTMF != 0 || bytes.Contains(answer, []byte("telephone-event")) {
		t.Errorf("dtmf %d, %v:\n%s", agreed.DTMF, err, answer)
	}
}

func TestAnswerMirrorsTheDirection(t *testing.T) {
	cases := []struct {
		offer, local, want Direction
	}{
		{SendRecv, "", SendRecv},
		{SendOnly, "", RecvOnly},
		{RecvOnly, "", SendOnly},
		{Inactive, "", Inactive},
		{SendRecv, SendOnly, SendOnly},
		{SendOnly, SendOnly, Inactive},
		{RecvOnly, RecvOnly, Inactive},
		{SendRecv, Inactive, Inactive},
		{RecvOnly, SendRecv, SendOnly},
	}
	for _, c := range cases {
		offer := mustParse(t, []byte(string(sippOffer)+"\r\na="+string(c.offer)+"\r\n"))
		local := handset
		local.Direction = c.local
		answer, agreed, err := Answer(offer, local)
		if err != nil || agreed.Direction != c.want {
			t.Errorf("offer %s, local %q: %s, %v; want %s", c.offer, c.local, agreed.Direction, err, c.want)
			continue
		}
		checkAnswer(t, answer, agreed, local)
	}
}

func TestAnswerKeepsEveryOfferedLineInOrder(t *testing.T) {
	answer, agreed, err := Answer(mustParse(t, multiStreamOffer), handset)
	if err != nil {
		t.Fatal(err)
	}
	var mlines []string
	for line := range strings.SplitSeq(string(answer), "\r\n") {
		if strings.HasPrefix(line, "m=") {
			mlines = append(mlines, line)
		}
	}
	want := []string{"m=video 0 RTP/AVP 96", "m=audio 20000 RTP/AVP 0", "m=image 0 udptl t38"}
	if !slices.Equal(mlines, want) {
		t.Errorf("media lines %q, want %q", mlines, want)
	}
	// Handset's PCMU over the offer's PCMA; no telephone-event was offered.
	if agreed.DTMF != 0 || agreed.Codec() != PCMU {
		t.Errorf("agreed %v dtmf %d", agreed.Codecs, agreed.DTMF)
	}
	// The answer itself is not readable by pion as a whole (m=image): split keeps it apart.
	back := mustParse(t, answer)
	if back.Addr != handset.Addr || back.Codec() != PCMU {
		t.Errorf("the answer reads back as %v %v", back.Addr, back.Codecs)
	}
}

func TestAnswerDeclinesADeclinedStream(t *testing.T) {
	offer := mustParse(t, session(`
m=audio 0 RTP/SAVP 18
`))
	answer, agreed, err := Answer(offer, handset)
	if err != nil {
		t.Fatal(err)
	}
	if agreed.Addr.Port() != 0 || !bytes.Contains(answer, []byte("m=audio 0 RTP/SAVP 18\r\n")) {
		t.Errorf("agreed %v, answer:\n%s", agreed.Addr, answer)
	}
}

func TestAnswerRefusesWithoutACommonCodec(t *testing.T) {
	offer := mustParse(t, session(`
m=audio 5000 RTP/AVP 18 96 101
a=rtpmap:18 G729/8000
a=rtpmap:96 opus/48000/2
a=rtpmap:101 telephone-event/8000
`))
	if _, _, err := Answer(offer, handset); !errors.Is(err, ErrNoCommonCodec) {
		t.Errorf("G729 and opus only: %v, want ErrNoCommonCodec", err)
	}
	local := handset
	local.Codecs = []Codec{G722}
	if _, _, err := Answer(mustParse(t, sippOffer), local); !errors.Is(err, ErrNoCommonCodec) {
		t.Errorf("PCMU offered, G722 wanted: %v, want ErrNoCommonCodec", err)
	}
}

func localKey(tag uint32, suite string, first byte) Crypto {
	key := make([]byte, 30)
	for i := range key {
		key[i] = first + byte(i)
	}
	return Crypto{Tag: tag, Suite: suite, KeySalt: key}
}

func TestAnswerSecureOffers(t *testing.T) {
	offer := mustParse(t, savpOffer)
	if _, _, err := Answer(offer, handset); !errors.Is(err, ErrSecureUnsupported) {
		t.Errorf("no local keys: %v, want ErrSecureUnsupported", err)
	}
	local := handset
	local.Crypto = []Crypto{localKey(9, SuiteAES128SHA1_32, 7)}
	answer, agreed, err := Answer(offer, local)
	if err != nil {
		t.Fatal(err)
	}
	// The offer's first usable key of a suite Handset has: tag 3 (tag 1's suite is not
	// run, tag 2's suite Handset has no key for).
	if !agreed.Secure || len(agreed.Crypto) != 1 || agreed.Crypto[0].Tag != 3 {
		t.Fatalf("agreed %+v", agreed.Crypto)
	}
	back := checkAnswer(t, answer, agreed, local)
	if !back.Secure || len(back.Crypto) != 1 {
		t.Fatalf("the answer's keys: %+v", back.Crypto)
	}
	if k := back.Crypto[0]; k.Tag != 3 || k.Suite != SuiteAES128SHA1_32 || !bytes.Equal(k.KeySalt, local.Crypto[0].KeySalt) {
		t.Errorf("the answer carries %+v, want Handset's key under tag 3", k)
	}
	want := "a=crypto:3 AES_CM_128_HMAC_SHA1_32 inline:" + base64.StdEncoding.EncodeToString(local.Crypto[0].KeySalt) + "\r\n"
	if !bytes.Contains(answer, []byte(want)) {
		t.Errorf("answer lacks %q:\n%s", want, answer)
	}
	// A plain offer is answered plain even when Handset has keys.
	plain, agreedPlain, err := Answer(mustParse(t, asteriskOffer), local)
	if err != nil || agreedPlain.Secure || bytes.Contains(plain, []byte("crypto")) {
		t.Errorf("plain offer with local keys: secure %v, %v", agreedPlain.Secure, err)
	}
}

func TestAnswerAndOfferRefuseABadLocal(t *testing.T) {
	bad := []Local{
		{Codecs: []Codec{PCMU}},
		{Addr: netip.MustParseAddrPort("192.0.2.1:0"), Codecs: []Codec{PCMU}},
		{Addr: handset.Addr},
		{Addr: handset.Addr, Codecs: []Codec{{"PCMU", 5, 8000}}},
		{Addr: handset.Addr, Codecs: []Codec{PCMU}, DTMF: 13},
		{Addr: handset.Addr, Codecs: []Codec{PCMU}, Crypto: []Crypto{{Tag: 1, Suite: SuiteAES128SHA1_80}}},
		{Addr: handset.Addr, Codecs: []Codec{PCMU}, Crypto: []Crypto{localKey(1, SuiteAES128SHA1_80, 0), localKey(1, SuiteAES128SHA1_32, 0)}},
	}
	for _, l := range bad {
		if _, err := Offer(l); err == nil {
			t.Errorf("Offer(%+v) succeeded", l)
		}
		if _, _, err := Answer(mustParse(t, asteriskOffer), l); err == nil {
			t.Errorf("Answer with %+v succeeded", l)
		}
	}
}

func TestOfferReadsBack(t *testing.T) {
	local := handset
	local.Codecs = []Codec{G722, PCMA, PCMU}
	local.Ptime = 20 * time.Millisecond
	body, err := Offer(local)
	if err != nil {
		t.Fatal(err)
	}
	m := mustParse(t, body)
	if m.Addr != local.Addr || !slices.Equal(m.Codecs, local.Codecs) || m.DTMF != 101 || m.DTMFRate != 8000 ||
		m.Ptime != local.Ptime || m.Direction != SendRecv || m.Secure || m.SessionVersion != 1 {
		t.Errorf("the offer reads back as %+v:\n%s", m, body)
	}

	local.Addr = netip.MustParseAddrPort("[2001:db8::5]:20002")
	local.Direction, local.Version = SendOnly, 2
	local.Crypto = []Crypto{localKey(1, SuiteAES128SHA1_80, 1), localKey(2, SuiteAES128SHA1_32, 50)}
	body, err = Offer(local)
	if err != nil {
		t.Fatal(err)
	}
	m = mustParse(t, body)
	if m.Addr != local.Addr || !m.OnHold() || !m.Secure || len(m.Crypto) != 2 || m.SessionVersion != 2 ||
		!bytes.Equal(m.Crypto[1].KeySalt, local.Crypto[1].KeySalt) {
		t.Errorf("the hold offer reads back as %+v:\n%s", m, body)
	}
}

func TestParseAnswerChecksItAnswersTheOffer(t *testing.T) {
	offered := handset // PCMU 0, PCMA 8, telephone-event 101
	answer := func(fmts string, extra ...string) []byte {
		return []byte("v=0\r\no=peer 5 5 IN IP4 198.51.100.9\r\ns=-\r\nc=IN IP4 198.51.100.9\r\nt=0 0\r\n" +
			"m=audio 4444 " + fmts + "\r\n" + strings.Join(extra, ""))
	}
	m, err := ParseAnswer(answer("RTP/AVP 8 101", "a=rtpmap:101 telephone-event/8000\r\n"), offered)
	if err != nil || m.Codec() != PCMA || m.DTMF != 101 || m.Addr != netip.MustParseAddrPort("198.51.100.9:4444") {
		t.Errorf("a good answer: %+v, %v", m, err)
	}
	m, err = ParseAnswer(answer("RTP/AVP 0 96", "a=rtpmap:96 telephone-event/8000\r\n"), offered)
	if err != nil || m.Codec() != PCMU || m.DTMF != 0 {
		t.Errorf("telephone-event under another type: %+v, %v; want it dropped", m, err)
	}
	m, err = ParseAnswer(answer("RTP/AVP 18 0", "a=rtpmap:18 G729/8000\r\n"), offered)
	if err != nil || !slices.Equal(m.Codecs, []Codec{PCMU}) {
		t.Errorf("an unknown codec beside an offered one: %+v, %v", m, err)
	}
	refused := []struct {
		name string
		body []byte
		want error
	}{
		{"G722 not offered", answer("RTP/AVP 9"), ErrNotOffered},
		{"PCMA under another number", answer("RTP/AVP 97", "a=rtpmap:97 PCMA/8000\r\n"), ErrNotOffered},
		{"nothing known", answer("RTP/AVP 18", "a=rtpmap:18 G729/8000\r\n"), ErrNoCommonCodec},
		{"declined", []byte(strings.Replace(string(answer("RTP/AVP 0")), "4444", "0", 1)), ErrNoAudio},
		{"secure answer to a plain offer", answer("RTP/SAVP 0",
			"a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:KCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4/QEFCQ0RF\r\n"), ErrNotOffered},
	}
	for _, r := range refused {
		if _, err := ParseAnswer(r.body, offered); !errors.Is(err, r.want) {
			t.Errorf("%s: %v, want %v", r.name, err, r.want)
		}
	}

	offered.Crypto = []Crypto{localKey(1, SuiteAES128SHA1_80, 1)}
	peerKey := "a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:KCkqKywtLi8wMTIzNDU2Nzg5Ojs8PT4/QEFCQ0RF\r\n"
	m, err = ParseAnswer(answer("RTP/SAVP 0", peerKey), offered)
	if err != nil || !m.Secure || len(m.Crypto) != 1 || m.Crypto[0].KeySalt[0] != 40 {
		t.Errorf("a secure answer: %+v, %v", m, err)
	}
	for name, body := range map[string][]byte{
		"plain answer":  answer("RTP/AVP 0"),
		"another tag":   answer("RTP/SAVP 0", strings.Replace(peerKey, "crypto:1", "crypto:2", 1)),
		"another suite": answer("RTP/SAVP 0", strings.Replace(peerKey, "SHA1_80", "SHA1_32", 1)),
		"no key at all": answer("RTP/SAVP 0"),
	} {
		if _, err := ParseAnswer(body, offered); !errors.Is(err, ErrSecureUnsupported) {
			t.Errorf("secure offer, %s: %v, want ErrSecureUnsupported", name, err)
		}
	}
}

func ExampleAnswer() {
	offer, _ := Parse(freeswitchOffer)
	local := Local{
		Addr:   netip.MustParseAddrPort("203.0.113.5:20000"),
		Codecs: []Codec{PCMA, PCMU},
		DTMF:   101, SessionID: 1, Version: 1,
	}
	answer, agreed, err := Answer(offer, local)
	fmt.Printf("%s%v %d %v %v\n", strings.ReplaceAll(string(answer), "\r\n", "\n"), agreed.Codecs, agreed.DTMF, agreed.Addr, err)
	// Output:
	// v=0
	// o=handset 1 1 IN IP4 203.0.113.5
	// s=handset
	// c=IN IP4 203.0.113.5
	// t=0 0
	// m=audio 20000 RTP/AVP 8 101
	// a=rtpmap:8 PCMA/8000
	// a=rtpmap:101 telephone-event/8000
	// a=fmtp:101 0-15
	// a=sendrecv
	// [{PCMA 8 8000}] 101 198.51.100.20:24602 <nil>
}

func TestAnswerNeverSendsToAnOldStyleHold(t *testing.T) {
	offer := mustParse(t, oldHoldOffer)
	answer, agreed, err := Answer(offer, handset)
	if err != nil || agreed.Direction != RecvOnly {
		t.Fatalf("c=0.0.0.0 offer: %s, %v; want recvonly", agreed.Direction, err)
	}
	checkAnswer(t, answer, agreed, handset)
}

func TestParseUnmapsAnIPv4MappedAddress(t *testing.T) {
	m := mustParse(t, []byte(strings.Replace(string(sippOffer), "c=IN IP4 127.0.0.1", "c=IN IP6 ::ffff:192.0.2.8", 1)))
	if m.Addr != netip.MustParseAddrPort("192.0.2.8:6000") {
		t.Errorf("address %v, want 192.0.2.8:6000", m.Addr)
	}
}

// BenchmarkParseAndAnswer is the SDP work of one inbound call.
func BenchmarkParseAndAnswer(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		offer, err := Parse(freeswitchOffer)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := Answer(offer, handset); err != nil {
			b.Fatal(err)
		}
	}
}
