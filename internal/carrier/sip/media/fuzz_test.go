package media

import (
	"bytes"
	"net/netip"
	"testing"
)

// fuzzRemote and fuzzStranger are where fuzzed datagrams claim to come from.
var (
	fuzzRemote   = netip.MustParseAddrPort("127.0.0.1:40000")
	fuzzStranger = netip.MustParseAddrPort("127.0.0.2:40000")
)

func rtpBytes(pt uint8, seq uint16, ts uint32, payload []byte) []byte {
	b := []byte{0x80, pt, byte(seq >> 8), byte(seq), byte(ts >> 24), byte(ts >> 16), byte(ts >> 8), byte(ts), 0, 0, 0x51, 0x50}
	return append(b, payload...)
}

// framed joins datagrams in FuzzReceive's input format: a byte of flags, two of length.
func framed(stranger bool, datagrams ...[]byte) []byte {
	var out []byte
	for _, d := range datagrams {
		flags := byte(0)
		if stranger {
			flags = 1
		}
		out = append(out, flags, byte(len(d)>>8), byte(len(d)))
		out = append(out, d...)
	}
	return out
}

// FuzzReceive drives the packet-in path (source check, RTP parse, sequence tracking,
// jitter buffer, DTMF) with hostile datagrams, playing a frame out after each.
func FuzzReceive(f *testing.F) {
	f.Add(framed(false, rtpBytes(0, 1, 160, frameOf(1)), rtpBytes(0, 3, 480, frameOf(3)), rtpBytes(0, 2, 320, frameOf(2))))
	f.Add(framed(false, rtpBytes(101, 1, 1000, []byte{5, 10, 0, 160}), rtpBytes(101, 2, 1000, []byte{5, 0x8a, 1, 0})))
	f.Add(framed(false, rtpBytes(0, 65535, 0xFFFFFF00, frameOf(1)), rtpBytes(0, 0, 0x60, frameOf(2)), rtpBytes(0, 9000, 5, frameOf(3))))
	f.Add(framed(true, rtpBytes(0, 1, 160, frameOf(1))))
	f.Add(framed(false, []byte{0x90, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0xBE, 0xDE, 0, 1, 0x10, 0xAA, 0, 0}))
	f.Add(framed(false, rtpBytes(13, 1, 0, []byte{30}), rtpBytes(99, 2, 0, nil), rtpBytes(0, 3, 0, nil)))
	f.Fuzz(func(t *testing.T, data []byte) {
		conn := listenLoopback(t)
		s, err := New(Config{Conn: conn, Remote: fuzzRemote, Codec: PCMU, DTMF: 101, Latch: LatchStrict})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		r := newReceiver()
		frame := make([]byte, PCMU.Format.FrameBytes())
		for len(data) >= 3 {
			from := fuzzRemote
			if data[0]&1 != 0 {
				from = fuzzStranger
			}
			n := min(int(data[1])<<8|int(data[2]), len(data)-3, maxPacket+1)
			datagram := data[3 : 3+n]
			data = data[3+n:]
			digit, _ := s.receive(r, datagram, from)
			if digit != "" && !bytes.Contains([]byte(eventDigits), []byte(digit)) {
				t.Fatalf("reported %q, not a key", digit)
			}
			if s.jitter.started && !s.jitter.pop(frame) {
				t.Fatal("a started jitter buffer gave no frame")
			}
		}
		st := s.Stats()
		if st.Duplicates+st.Reordered > st.PacketsIn || st.Depth < minDepth || st.Depth > maxDepth {
			t.Fatalf("inconsistent counters: %+v", st)
		}
	})
}

// FuzzDecodeEvent checks the telephone-event decoder on any payload: it refuses short
// ones, and what it decodes encodes back to the same bytes (less the reserved bit).
func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte{5, 10, 0, 160})
	f.Add([]byte{11, 0x8a, 3, 32})
	f.Add([]byte{200, 0xFF, 0xFF, 0xFF, 1, 2})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, payload []byte) {
		e, err := decodeEvent(payload)
		if len(payload) < eventBytes {
			if err == nil {
				t.Fatal("a short payload decoded")
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		var back [eventBytes]byte
		encodeEvent(back[:], e)
		want := []byte{payload[0], payload[1] &^ 0x40, payload[2], payload[3]}
		if !bytes.Equal(back[:], want) {
			t.Fatalf("%x decoded to %+v, which encodes to %x", payload[:4], e, back)
		}
		if d := digitName(e.code); d != "" && (e.code > 15 || len(d) != 1) {
			t.Fatalf("code %d named %q", e.code, d)
		}
	})
}
