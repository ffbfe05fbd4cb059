package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
)

// keyOf is a 30-byte master key and salt filled with v.
func keyOf(v byte) []byte { return bytes.Repeat([]byte{v}, SRTPKeySaltLen) }

// secured keys a session with ours (0x11…) and the peer's (0x22…) keys in suite.
func secured(suite SRTPSuite) func(*Config) {
	return func(c *Config) { c.SRTP = SRTP{Suite: suite, Local: keyOf(0x11), Remote: keyOf(0x22)} }
}

// srtpPeer is the far end's half of the crypto: it seals with the peer's key and opens
// with the session's, as a real peer holding the other side of the SDP exchange would.
type srtpPeer struct {
	seal, open *srtp.Context
}

func newSRTPPeer(t testing.TB, suite SRTPSuite, sealKey, openKey []byte) *srtpPeer {
	t.Helper()
	seal, err := srtp.CreateContext(sealKey[:16], sealKey[16:], suite.profile())
	if err != nil {
		t.Fatal(err)
	}
	open, err := srtp.CreateContext(openKey[:16], openKey[16:], suite.profile())
	if err != nil {
		t.Fatal(err)
	}
	return &srtpPeer{seal: seal, open: open}
}

func (p *srtpPeer) sealed(t testing.TB, pt uint8, seq uint16, ts uint32, payload []byte) []byte {
	t.Helper()
	out, err := p.seal.EncryptRTP(nil, rtpBytes(pt, seq, ts, payload), nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSRTPSealsWhatTheSessionSends(t *testing.T) {
	for _, suite := range []SRTPSuite{SRTPAES128SHA1_80, SRTPAES128SHA1_32} {
		t.Run(suite.String(), func(t *testing.T) {
			peer := newRawPeer(t)
			s := newStepped(t, peer.addr(), secured(suite))
			far := newSRTPPeer(t, suite, keyOf(0x22), keyOf(0x11))
			must(t, s.SendAudio(context.Background(), frameOf(7)))
			s.Start()
			s.waitArmed(t)
			buf := make([]byte, 2048)
			_ = peer.conn.SetReadDeadline(time.Now().Add(patience))
			n, err := peer.conn.Read(buf)
			must(t, err)
			tag, _ := suite.profile().AuthTagRTPLen()
			if n != rtpHeaderBytes+160+tag {
				t.Fatalf("sealed packet of %d bytes, want header, 160 bytes and a %d-byte tag", n, tag)
			}
			if bytes.Contains(buf[:n], frameOf(7)[:16]) {
				t.Fatal("the audio went out in the clear")
			}
			var h rtp.Header
			plain, err := far.open.DecryptRTP(nil, buf[:n], &h)
			if err != nil {
				t.Fatalf("the peer could not open the packet: %v", err)
			}
			if !bytes.Equal(plain[rtpHeaderBytes:], frameOf(7)) || h.PayloadType != 0 {
				t.Fatalf("opened pt %d payload %v…", h.PayloadType, plain[rtpHeaderBytes:rtpHeaderBytes+4])
			}
			if st := s.Stats(); st.BytesOut != 160 {
				t.Fatalf("BytesOut %d counts more than the payload", st.BytesOut)
			}
		})
	}
}

func TestSRTPOpensWhatThePeerSealed(t *testing.T) {
	s, peer, sink := running(t, secured(SRTPAES128SHA1_80))
	far := newSRTPPeer(t, SRTPAES128SHA1_80, keyOf(0x22), keyOf(0x11))
	for f := range 3 {
		peer.sendRaw(s.local, far.sealed(t, 0, uint16(100+f), uint32(160*f), frameOf(byte(f+1))))
	}
	waitStats(t, s.Session, "three packets", func(st Stats) bool { return st.PacketsIn == 3 })
	for range 4 {
		s.step(t)
	}
	// The jitter buffer holds one frame back first, as for plain RTP.
	if got := sink.played(t, 4); !bytes.Equal(got, []byte{0xFF, 1, 2, 3}) {
		t.Fatalf("played %v, want silence then 1 2 3", got)
	}
	if st := s.Stats(); st.Malformed != 0 || st.BytesIn != 3*160 {
		t.Fatalf("stats %+v", st)
	}
}

// A packet that fails authentication is dropped and reported, and the call goes on: the
// next genuine packet plays.
func TestSRTPDropsUnauthenticPackets(t *testing.T) {
	s, peer, sink := running(t, secured(SRTPAES128SHA1_80))
	far := newSRTPPeer(t, SRTPAES128SHA1_80, keyOf(0x22), keyOf(0x11))
	stranger := newSRTPPeer(t, SRTPAES128SHA1_80, keyOf(0x33), keyOf(0x11))
	tampered := far.sealed(t, 0, 100, 0, frameOf(1))
	tampered[rtpHeaderBytes+5] ^= 0x40 // one bit of the ciphertext
	peer.sendRaw(s.local, tampered)
	peer.sendRaw(s.local, stranger.sealed(t, 0, 101, 160, frameOf(2))) // the wrong key
	peer.sendRaw(s.local, rtpBytes(0, 102, 320, frameOf(3)))           // plain RTP
	peer.sendRaw(s.local, tampered[:rtpHeaderBytes+4])                 // shorter than a tag
	peer.sendRaw(s.local, rtcpReport)                                  // SRTCP on the RTP port: ignored
	peer.sendRaw(s.local, far.sealed(t, 0, 103, 480, frameOf(4)))
	waitStats(t, s.Session, "the genuine packet", func(st Stats) bool { return st.PacketsIn == 1 })
	sink.waitFor(t, "four malformed reports", func() bool { return len(sink.malformed) == 4 })
	for _, err := range sink.snapshotMalformed() {
		if !errors.Is(err, ErrUnauthentic) {
			t.Errorf("reported %v, want ErrUnauthentic", err)
		}
	}
	if st := s.Stats(); st.Malformed != 4 || st.BytesIn != 160 {
		t.Fatalf("stats %+v: want 4 malformed, one packet of audio", st)
	}
	s.step(t)
	s.step(t)
	if got := sink.played(t, 2); !bytes.Equal(got, []byte{0xFF, 4}) {
		t.Fatalf("played %v, want silence then only the genuine frame 4", got)
	}
}

// A replayed packet is the network's duplicate or an attacker's echo: counted as a
// duplicate, not reported as the peer's fault, and not played twice.
func TestSRTPDropsReplays(t *testing.T) {
	s, peer, sink := running(t, secured(SRTPAES128SHA1_32))
	far := newSRTPPeer(t, SRTPAES128SHA1_32, keyOf(0x22), keyOf(0x11))
	pkt := far.sealed(t, 0, 100, 0, frameOf(1))
	peer.sendRaw(s.local, pkt)
	peer.sendRaw(s.local, pkt)
	peer.sendRaw(s.local, far.sealed(t, 0, 101, 160, frameOf(2)))
	waitStats(t, s.Session, "two packets", func(st Stats) bool { return st.PacketsIn == 2 })
	if st := s.Stats(); st.Duplicates != 1 || st.Malformed != 0 {
		t.Fatalf("stats %+v: want 1 duplicate, 0 malformed", st)
	}
	if n := len(sink.snapshotMalformed()); n != 0 {
		t.Fatalf("%d malformed reports for a replay", n)
	}
}

func TestSetSRTPRekeys(t *testing.T) {
	s, peer, _ := running(t, secured(SRTPAES128SHA1_80))
	far := newSRTPPeer(t, SRTPAES128SHA1_80, keyOf(0x44), keyOf(0x33))
	must(t, s.SetSRTP(SRTP{Suite: SRTPAES128SHA1_80, Local: keyOf(0x33), Remote: keyOf(0x44)}))
	peer.sendRaw(s.local, far.sealed(t, 0, 100, 0, frameOf(1)))
	waitStats(t, s.Session, "a packet under the new key", func(st Stats) bool { return st.PacketsIn == 1 })
	if err := s.SetSRTP(SRTP{Suite: SRTPAES128SHA1_80, Local: keyOf(1)}); err == nil {
		t.Fatal("SetSRTP took a suite without the peer's key")
	}
}

func TestSRTPConfigIsChecked(t *testing.T) {
	for name, k := range map[string]SRTP{
		"short key":       {Suite: SRTPAES128SHA1_80, Local: keyOf(1)[:16], Remote: keyOf(2)},
		"no remote key":   {Suite: SRTPAES128SHA1_32, Local: keyOf(1)},
		"unknown suite":   {Suite: srtpSuites, Local: keyOf(1), Remote: keyOf(2)},
		"keys, no suite":  {Local: keyOf(1), Remote: keyOf(2)},
		"long remote key": {Suite: SRTPAES128SHA1_80, Local: keyOf(1), Remote: append(keyOf(2), 0)},
	} {
		if _, err := New(Config{Conn: listenLoopback(t), Codec: PCMU, SRTP: k}); err == nil {
			t.Errorf("%s: New accepted %+v", name, k)
		}
	}
	for _, name := range []string{"AES_CM_128_HMAC_SHA1_80", "AES_CM_128_HMAC_SHA1_32"} {
		if s, ok := SuiteByName(name); !ok || s.String() != name {
			t.Errorf("SuiteByName(%q) = %v, %v", name, s, ok)
		}
	}
	if _, ok := SuiteByName("AES_256_CM_HMAC_SHA1_80"); ok {
		t.Error("SuiteByName took a suite the session cannot key")
	}
}

func TestSRTPSessionsTalkOverLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("a second of real time")
	}
	connA, connB := listenLoopback(t), listenLoopback(t)
	addr := func(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }
	keyA, keyB := keyOf(0xA1), keyOf(0xB2)
	a, err := New(Config{Conn: connA, Remote: addr(connB), Codec: PCMA, DTMF: 101,
		SRTP: SRTP{Suite: SRTPAES128SHA1_80, Local: keyA, Remote: keyB}})
	must(t, err)
	b, err := New(Config{Conn: connB, Remote: addr(connA), Codec: PCMA, DTMF: 101,
		SRTP: SRTP{Suite: SRTPAES128SHA1_80, Local: keyB, Remote: keyA}})
	must(t, err)
	defer a.Close()
	defer b.Close()
	sinkA, sinkB := newRecSink(), newRecSink()
	go func() { _ = a.Run(context.Background(), sinkA) }()
	go func() { _ = b.Run(context.Background(), sinkB) }()
	ctx := context.Background()
	for i := range 25 {
		must(t, a.SendAudio(ctx, frameOf(byte(i+1))))
	}
	must(t, a.SendDTMF("7"))
	sinkB.waitFor(t, "the digit", func() bool { return len(sinkB.digits) == 1 })
	sinkB.waitFor(t, "the last frame", func() bool {
		return slices.ContainsFunc(sinkB.frames, func(f []byte) bool { return f[0] == 25 })
	})
	if st := b.Stats(); st.Malformed != 0 || st.PacketsIn < 25 {
		t.Fatalf("B's stats %+v", st)
	}
	if st := a.Stats(); st.Malformed != 0 || st.PacketsIn == 0 {
		t.Fatalf("A heard nothing from B: %+v", st)
	}
}

func TestSRTPSendTickAllocatesNothing(t *testing.T) {
	peer := newRawPeer(t)
	s := newStepped(t, peer.addr(), secured(SRTPAES128SHA1_80))
	s.sink = discardSink{}
	frame := frameOf(9)
	allocs := testing.AllocsPerRun(500, func() {
		_ = s.SendAudio(context.Background(), frame)
		s.clk.Advance(20 * time.Millisecond)
		s.tick(s.clk.Now(), 1, s.clk.Now())
	})
	if allocs != 0 {
		t.Fatalf("one sealed tick allocates %.1f times, want 0", allocs)
	}
	if st := s.Stats(); st.PacketsOut < 500 {
		t.Fatalf("only %d packets sent", st.PacketsOut)
	}
}

func TestSRTPReceiveAllocatesNothing(t *testing.T) {
	const runs = 1000
	s := newStepped(t, fuzzRemote, func(c *Config) { secured(SRTPAES128SHA1_80)(c); c.Latch = LatchStrict })
	far := newSRTPPeer(t, SRTPAES128SHA1_80, keyOf(0x22), keyOf(0x11))
	packets := make([][]byte, runs+1)
	for i := range packets {
		packets[i] = far.sealed(t, 0, uint16(i), uint32(160*i), frameOf(3))
	}
	r := newReceiver()
	s.receive(r, packets[0], fuzzRemote) // the SSRC's first packet makes its state once
	dst := make([]byte, 160)
	i := 0
	allocs, counted := poolAllocs(runs-1, func() {
		i++
		s.receive(r, packets[i], fuzzRemote)
		s.jitter.pop(dst)
	})
	if counted && allocs != 0 {
		t.Fatalf("opening a packet allocates %.1f times, want 0", allocs)
	}
	if st := s.Stats(); st.PacketsIn != runs+1 || st.Malformed != 0 {
		t.Fatalf("stats after the run: %+v", st)
	}
}

func (r *recSink) snapshotMalformed() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.malformed)
}

// rtcpReport is a sender report as a peer multiplexes it onto the RTP port (rtcp-mux).
var rtcpReport = []byte{0x80, 200, 0, 6, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

// BenchmarkSRTPSealAndOpen is the per-packet cost SRTP adds to a call: one 20 ms G.711
// packet sealed, and one opened.
func BenchmarkSRTPSealAndOpen(b *testing.B) {
	out, err := newSealer(SRTP{Suite: SRTPAES128SHA1_80, Local: keyOf(1), Remote: keyOf(2)})
	if err != nil {
		b.Fatal(err)
	}
	in, err := newSealer(SRTP{Suite: SRTPAES128SHA1_80, Local: keyOf(2), Remote: keyOf(1)})
	if err != nil {
		b.Fatal(err)
	}
	packet := rtpBytes(0, 0, 0, frameOf(5))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		packet[2], packet[3] = byte(i>>8), byte(i)
		sealed, err := out.seal(packet)
		if err != nil {
			b.Fatal(err)
		}
		if _, replayed, err := in.open(sealed); err != nil || replayed {
			b.Fatal(err, replayed)
		}
	}
}

// BenchmarkSRTPSessions is BenchmarkSessions with every pair keyed for SRTP: what
// encrypted media costs a node per call, next to the plain figures.
//
//	go test -run '^$' -bench 'Sessions' -benchtime 150x ./internal/carrier/sip/media
func BenchmarkSRTPSessions(b *testing.B) {
	keys := SRTP{Suite: SRTPAES128SHA1_80, Local: keyOf(1), Remote: keyOf(2)}
	for _, n := range []int{2, 200, 500} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) { benchSessions(b, n, PCMU, &keys) })
	}
}
