package media

import (
	"context"
	"net"
	"testing"

	"github.com/handset-voice/handset/internal/audio/g711"
)

// bridged is session a (PCMU) forwarding what it hears into session b (PCMA), each on its
// own fake clock, with a raw peer on each side.
type bridged struct {
	a, b         *stepped
	peerA, peerB *rawPeer
	fw           *Forwarder
}

func newBridged(t *testing.T) *bridged {
	t.Helper()
	br := &bridged{peerA: newRawPeer(t), peerB: newRawPeer(t)}
	br.a = newStepped(t, br.peerA.addr(), nil)
	br.b = newStepped(t, br.peerB.addr(), func(c *Config) { c.Codec = PCMA })
	br.fw = NewForwarder(br.a.Session, br.b.Session)
	go func() { _ = br.a.Run(context.Background(), br.fw) }()
	br.a.waitArmed(t)
	br.b.Start()
	br.b.waitArmed(t)
	br.peerB.read() // b's first tick: silence
	return br
}

// What the far end of a says reaches the far end of b, transcoded from mu-law to A-law on
// b's clock.
func TestForwarderCarriesAudioAcrossTranscoded(t *testing.T) {
	br := newBridged(t)
	spoken := make([]byte, 160)
	for i := range spoken {
		spoken[i] = byte(0x10 + i%0x60) // loud mu-law samples, none of them silence
	}
	for i := range 8 {
		br.peerA.send(br.a.local, 0, uint16(i), uint32(160*i), spoken)
	}
	waitStats(t, br.a.Session, "8 packets in", func(st Stats) bool { return st.PacketsIn == 8 })
	var heard []byte
	for tick := 0; tick < 40 && heard == nil; tick++ {
		br.a.step(t) // a plays a frame out into b's queue
		br.b.step(t) // b sends the next frame of its queue
		pkt := br.peerB.read()
		if pkt.PayloadType != PCMA.PayloadType {
			t.Fatalf("b sent payload type %d, want PCMA's %d", pkt.PayloadType, PCMA.PayloadType)
		}
		if pkt.Payload[0] != 0xD5 { // A-law silence until a's audio arrives
			heard = pkt.Payload
		}
	}
	if len(heard) != len(spoken) {
		t.Fatalf("b's far end heard %d bytes of audio, want %d", len(heard), len(spoken))
	}
	// Decoded, the two laws carry the same sample to within a quantisation step (both
	// keep about four bits of mantissa: a sixteenth of the value).
	for i := range spoken {
		want, got := int(g711.DecodeMulawSample(spoken[i])), int(g711.DecodeAlawSample(heard[i]))
		if d := abs(got - want); d > abs(want)/16+16 || (want > 0) != (got > 0) {
			t.Fatalf("sample %d: sent %d (mu-law %#x), heard %d (A-law %#x)", i, want, spoken[i], got, heard[i])
		}
	}
	if frames, _ := br.fw.Forwarded(); frames == 0 {
		t.Fatal("the forwarder counted no frame")
	}
}

// A key pressed at a's far end is sent on to b's as an RFC 4733 event of b's type.
func TestForwarderPassesDTMFOn(t *testing.T) {
	br := newBridged(t)
	for i := 1; i <= 5; i++ {
		br.peerA.send(br.a.local, 101, uint16(i), 4000, payloadOf(event{code: 9, duration: uint16(160 * i)}))
	}
	waitStats(t, br.a.Session, "the digit", func(st Stats) bool { return st.DTMFIn == 1 })
	for tick := 0; tick < 20; tick++ {
		br.b.step(t)
		pkt := br.peerB.read()
		if pkt.PayloadType == 101 {
			if pkt.Payload[0] != 9 {
				t.Fatalf("b sent event %d, want 9", pkt.Payload[0])
			}
			return
		}
	}
	t.Fatal("b sent no telephone-event")
}

// Forwarding a frame allocates nothing, transcoded or not, queued or dropped (the far
// queue full), and the far queue never runs more than maxBridgeBacklog ahead.
func TestForwarderAllocatesNothingAndBoundsTheBacklog(t *testing.T) {
	peer := newRawPeer(t)
	a := newStepped(t, peer.addr(), nil)
	for _, to := range []Codec{PCMU, PCMA} {
		b := newStepped(t, peer.addr(), func(c *Config) { c.Codec = to })
		fw := NewForwarder(a.Session, b.Session)
		frame := frameOf(0x42)
		if n := testing.AllocsPerRun(100, func() { fw.Audio(frame) }); n != 0 {
			t.Errorf("to %s: %v allocations per frame", to, n)
		}
		if got := b.Backlog(); got > maxBridgeBacklog {
			t.Errorf("to %s: backlog %s, want at most %s", to, got, maxBridgeBacklog)
		}
		frames, dropped := fw.Forwarded()
		if frames != uint64(maxBridgeBacklog/(20e6)) || dropped == 0 {
			t.Errorf("to %s: %d frames queued, %d dropped: want %d queued, the rest dropped", to, frames, dropped, maxBridgeBacklog/20e6)
		}
	}
}

func abs(v int) int { return max(v, -v) }

// BenchmarkForwarderAudio is a bridge's cost per 20 ms frame, transcoded.
func BenchmarkForwarderAudio(b *testing.B) {
	conn := listenLoopback(b)
	defer conn.Close()
	addr := conn.LocalAddr().(*net.UDPAddr).AddrPort()
	from, err := New(Config{Conn: listenLoopback(b), Remote: addr, Codec: PCMU})
	if err != nil {
		b.Fatal(err)
	}
	to, err := New(Config{Conn: listenLoopback(b), Remote: addr, Codec: PCMA})
	if err != nil {
		b.Fatal(err)
	}
	defer from.Close()
	defer to.Close()
	fw, frame := NewForwarder(from, to), frameOf(0x42)
	b.ReportAllocs()
	for b.Loop() {
		fw.Audio(frame)
		to.Clear(context.Background()) // what the far clock would have sent
	}
}
