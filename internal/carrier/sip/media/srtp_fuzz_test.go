package media

import (
	"testing"

	"github.com/pion/rtp"
)

// FuzzReceiveSRTP drives the secured packet-in path (authentication, replay window,
// decryption, then the plain path) with hostile datagrams: nothing unauthenticated may
// reach the jitter buffer, and nothing may panic.
func FuzzReceiveSRTP(f *testing.F) {
	far := newSRTPPeer(f, SRTPAES128SHA1_80, keyOf(0x22), keyOf(0x11))
	one := far.sealed(f, 0, 1, 160, frameOf(1))
	tampered := append([]byte(nil), one...)
	tampered[20] ^= 1
	f.Add(framed(false, one, far.sealed(f, 0, 2, 320, frameOf(2)), one))
	f.Add(framed(false, tampered, far.sealed(f, 101, 3, 480, []byte{5, 10, 0, 160})))
	f.Add(framed(false, rtpBytes(0, 1, 160, frameOf(1)), one[:14]))
	f.Add(framed(true, one))
	f.Fuzz(func(t *testing.T, data []byte) {
		conn := listenLoopback(t)
		cfg := Config{Conn: conn, Remote: fuzzRemote, Codec: PCMU, DTMF: 101, Latch: LatchStrict}
		secured(SRTPAES128SHA1_80)(&cfg)
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r := newReceiver()
		for len(data) >= 3 {
			from := fuzzRemote
			if data[0]&1 != 0 {
				from = fuzzStranger
			}
			n := min(int(data[1])<<8|int(data[2]), len(data)-3, maxPacket+1)
			datagram := data[3 : 3+n]
			data = data[3+n:]
			before := s.Stats().PacketsIn
			_, _ = s.receive(r, datagram, from)
			// Whatever was accepted must open under the peer's key on its own: else a
			// forged tag passed.
			if s.Stats().PacketsIn > before && !authentic(t, datagram) {
				t.Fatalf("an unauthenticated datagram was accepted: %x", datagram)
			}
		}
	})
}

// authentic reports whether datagram opens under the peer's key (0x22…) in a fresh
// context, which knows nothing of replays.
func authentic(t *testing.T, datagram []byte) bool {
	check := newSRTPPeer(t, SRTPAES128SHA1_80, keyOf(0x11), keyOf(0x22))
	var h rtp.Header
	_, err := check.open.DecryptRTP(nil, datagram, &h)
	return err == nil
}
