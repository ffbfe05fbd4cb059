package sipsim

import (
	"bytes"
	"errors"
	"testing"

	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/pion/rtp"
)

func testWire() *rtpWire {
	return &rtpWire{audioPT: 0, dtmfPT: 101, seq: 65535, ts: 1000, ssrc: 0xfeedf00d}
}

// The wire's packets are RTP as pion reads it: the marker on the first frame, the sequence
// wrapping, the timestamp advancing by the samples sent.
func TestRTPWirePacketsReadAsRTP(t *testing.T) {
	w := testWire()
	payload := bytes.Repeat([]byte{0x55}, 160)
	var got []rtp.Packet
	for chunk := 1; chunk <= 2; chunk++ {
		var p rtp.Packet
		if err := p.Unmarshal(w.AppendMedia(nil, payload, phone.Frame{Chunk: chunk})); err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	var key rtp.Packet
	if err := key.Unmarshal(w.DTMF("#")); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct {
		marker bool
		pt     uint8
		seq    uint16
		ts     uint32
	}{{true, 0, 65535, 1000}, {false, 0, 0, 1160}} {
		p := got[i]
		if p.Marker != want.marker || p.PayloadType != want.pt || p.SequenceNumber != want.seq || p.Timestamp != want.ts ||
			p.SSRC != 0xfeedf00d || !bytes.Equal(p.Payload, payload) {
			t.Fatalf("packet %d: %+v, want marker %t type %d seq %d ts %d", i+1, p.Header, want.marker, want.pt, want.seq, want.ts)
		}
	}
	if key.PayloadType != 101 || key.SequenceNumber != 1 || key.Timestamp != 1320 || !bytes.Equal(key.Payload, []byte{11, 0x80 | 10, 0x03, 0x20}) {
		t.Fatalf("key press %+v payload %x, want event 11 ended, 100 ms, at the current timestamp", key.Header, key.Payload)
	}
}

// What Handset sends: its audio is media, its events and comfort noise are not played,
// any other type or a broken packet is a protocol error.
func TestRTPWireDecodes(t *testing.T) {
	w := testWire()
	pkt := func(h rtp.Header, payload []byte) []byte {
		h.Version = 2
		b, err := (&rtp.Packet{Header: h, Payload: payload}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	audio := bytes.Repeat([]byte{0x20}, 160)
	ext := rtp.Header{PayloadType: 0, Extension: true, ExtensionProfile: 0xBEDE, CSRC: []uint32{7}}
	if err := ext.SetExtension(1, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		msg  []byte
		kind phone.InKind
		code int // 0: no error
	}{
		{"audio", pkt(rtp.Header{PayloadType: 0}, audio), phone.InMedia, 0},
		{"audio after CSRCs and an extension", pkt(ext, audio), phone.InMedia, 0},
		{"telephone-event", pkt(rtp.Header{PayloadType: 101}, []byte{1, 0x8a, 0, 160}), phone.InIgnore, 0},
		{"comfort noise", pkt(rtp.Header{PayloadType: 13}, []byte{40}), phone.InIgnore, 0},
		{"a type not agreed", pkt(rtp.Header{PayloadType: 8}, audio), 0, CodeUnknownPayload},
		{"short", []byte{0x80, 0, 0}, 0, CodeNotRTP},
		{"version 1", append([]byte{0x40}, make([]byte, 20)...), 0, CodeNotRTP},
		{"padding past the header", append([]byte{0xa0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}, 0x20), 0, CodeNotRTP},
	} {
		in, err := w.Decode(0, tc.msg, nil)
		var we *phone.WireError
		switch {
		case tc.code != 0 && (!errors.As(err, &we) || we.Code != tc.code):
			t.Errorf("%s: error %v, want code %d", tc.name, err, tc.code)
		case tc.code == 0 && (err != nil || in.Kind != tc.kind):
			t.Errorf("%s: %+v, %v; want kind %d", tc.name, in, err, tc.kind)
		case tc.kind == phone.InMedia && !bytes.Equal(in.Audio, audio):
			t.Errorf("%s: audio %x, want the payload", tc.name, in.Audio)
		}
	}
}

// Every frame's packet is built in the buffer it is given.
func TestRTPWireMediaAllocatesNothing(t *testing.T) {
	w := testWire()
	payload, buf := make([]byte, 160), make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf = w.AppendMedia(buf[:0], payload, phone.Frame{Chunk: 2}) }); n != 0 {
		t.Fatalf("%v allocations per frame", n)
	}
	pkt := w.AppendMedia(nil, payload, phone.Frame{Chunk: 2})
	if n := testing.AllocsPerRun(100, func() { _, _ = w.Decode(0, pkt, nil) }); n != 0 {
		t.Fatalf("%v allocations per decoded packet", n)
	}
}

// rtpPayload never panics and never returns bytes outside the packet, and agrees with
// pion on every packet pion reads without padding.
func FuzzRTPPayload(f *testing.F) {
	w := testWire()
	f.Add(w.AppendMedia(nil, []byte{1, 2, 3}, phone.Frame{Chunk: 1}))
	f.Add([]byte{0x90, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xbe, 0xde, 0, 1, 1, 2, 3, 4, 9})
	f.Add([]byte{0xa0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 7, 1})
	f.Fuzz(func(t *testing.T, p []byte) {
		payload, pt, err := rtpPayload(p)
		if err != nil {
			return
		}
		if len(payload) > len(p)-rtpHeaderLen {
			t.Fatalf("payload of %d bytes from a %d-byte packet", len(payload), len(p))
		}
		var ref rtp.Packet
		if p[0]&0x20 == 0 && ref.Unmarshal(p) == nil && (!bytes.Equal(ref.Payload, payload) || ref.PayloadType != pt) {
			t.Fatalf("payload %x type %d, pion reads %x type %d", payload, pt, ref.Payload, ref.PayloadType)
		}
	})
}
