package media

import (
	"bytes"
	"context"
	"math"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/g722"
)

func BenchmarkG722Sessions(b *testing.B) { benchmarkSessions(b, G722) }

// wideTone is d of a 5 kHz tone at 16 kHz as PCM16 bytes: G.711's 8 kHz sampling cannot
// carry it, so hearing it proves the wideband path end to end.
func wideTone(d time.Duration) []byte {
	var pcm []byte
	for _, v := range audiotest.Tone(16000, 5000, d, 0.3) {
		pcm = append(pcm, byte(v), byte(uint16(v)>>8))
	}
	return pcm
}

func samplesOf(pcm []byte) []int16 {
	out := make([]int16, len(pcm)/2)
	for i := range out {
		out[i] = int16(uint16(pcm[2*i]) | uint16(pcm[2*i+1])<<8)
	}
	return out
}

// toneLevelDB is the power at 5 kHz relative to the whole frame's, in dB: near 0 for a
// clean tone, very negative for silence or noise.
func toneLevelDB(pcm []byte) float64 {
	s := samplesOf(pcm)
	tone := audiotest.Goertzel(s, 16000, 5000)
	rms := math.Pow(10, audiotest.RMSDBFS(s)/10)
	return 10 * math.Log10(tone/rms)
}

func TestG722ReceiveDecodesToWideband(t *testing.T) {
	s, peer, sink := running(t, func(c *Config) { c.Codec = G722 })
	code := g722.NewEncoder().Encode(nil, wideTone(200*time.Millisecond))
	// Ten 20 ms packets of 160 bytes, timestamps 160 apart; the fourth is lost.
	for f := range 10 {
		if f == 3 {
			continue
		}
		peer.send(s.local, 9, uint16(200+f), uint32(4000+160*f), code[160*f:160*(f+1)])
	}
	waitStats(t, s.Session, "nine packets", func(st Stats) bool { return st.PacketsIn == 9 })
	for range 11 {
		s.step(t)
	}
	sink.waitFor(t, "11 frames", func() bool { return len(sink.frames) >= 11 })
	frames := sink.frames[1:11] // the first is the cushion
	for i, f := range frames {
		if len(f) != 640 {
			t.Fatalf("frame %d has %d bytes, want 640 (20 ms of 16 kHz PCM16)", i, len(f))
		}
		switch {
		case i == 3:
			if !bytes.Equal(f, make([]byte, 640)) {
				t.Errorf("the lost frame played as %v..., want silence", f[:8])
			}
		case i == 0 || i == 4:
			// the decoder's start, and its first frame after the loss: settling
		default:
			if got := toneLevelDB(f); got < -1 {
				t.Errorf("frame %d: the 5 kHz tone is %.1f dB of the frame, want > -1 dB", i, got)
			}
			if got := audiotest.RMSDBFS(samplesOf(f)); math.Abs(got-audiotest.RMSDBFS(samplesOf(wideTone(20*time.Millisecond)))) > 1 {
				t.Errorf("frame %d: level %.1f dBFS, want the tone's within 1 dB", i, got)
			}
		}
	}
}

func TestG722SendEncodesOnTheClock(t *testing.T) {
	s, peer, _ := running(t, func(c *Config) { c.Codec = G722 })
	first := peer.read() // comfort silence from the first tick
	if first.PayloadType != 9 || len(first.Payload) != 160 {
		t.Fatalf("first packet: pt %d, %d bytes; want 9 and 160", first.PayloadType, len(first.Payload))
	}
	must(t, s.SendAudio(context.Background(), wideTone(100*time.Millisecond)))
	dec := g722.NewDecoder()
	dec.Decode(nil, first.Payload)
	prev := first.Timestamp
	var pcm []byte
	for range 5 {
		s.step(t)
		p := peer.read()
		if p.PayloadType != 9 || len(p.Payload) != 160 || p.Timestamp-prev != 160 {
			t.Fatalf("packet: pt %d, %d bytes, timestamp +%d; want 9, 160, +160", p.PayloadType, len(p.Payload), p.Timestamp-prev)
		}
		prev = p.Timestamp
		pcm = dec.Decode(pcm, p.Payload)
	}
	if got := toneLevelDB(pcm[640:]); got < -1 {
		t.Errorf("the peer decodes the 5 kHz tone at %.1f dB of the signal, want > -1 dB", got)
	}
}

func TestSetCodecSwitchesBetweenG711AndG722(t *testing.T) {
	s, peer, sink := running(t, nil)
	peer.read()
	must(t, s.SetCodec(G722, 101))
	s.step(t)
	if p := peer.read(); p.PayloadType != 9 || len(p.Payload) != 160 {
		t.Fatalf("after switching to G.722: pt %d, %d bytes", p.PayloadType, len(p.Payload))
	}
	code := g722.NewEncoder().Encode(nil, wideTone(60*time.Millisecond))
	for f := range 3 {
		peer.send(s.local, 9, uint16(10+f), uint32(160*f), code[160*f:160*(f+1)])
	}
	waitStats(t, s.Session, "three packets", func(st Stats) bool { return st.PacketsIn == 3 })
	for range 3 {
		s.step(t)
		peer.read()
	}
	sink.waitFor(t, "a decoded tone", func() bool {
		n := len(sink.frames)
		return n > 0 && len(sink.frames[n-1]) == 640 && toneLevelDB(sink.frames[n-1]) > -1
	})
	must(t, s.SetCodec(PCMU, 101))
	s.step(t)
	if p := peer.read(); p.PayloadType != 0 || len(p.Payload) != 160 || p.Payload[0] != 0xFF {
		t.Fatalf("back on PCMU: pt %d, %d bytes, first %#x", p.PayloadType, len(p.Payload), p.Payload[0])
	}
	sink.waitFor(t, "a mu-law frame", func() bool { return len(sink.frames[len(sink.frames)-1]) == 160 })
	if err := s.SetCodec(Codec{PayloadType: 9, Format: PCMU.Format, Wire: WireG722}, 101); err == nil {
		t.Fatal("SetCodec accepted G.722 code for 8 kHz mu-law")
	}
}

func TestG722TickAllocatesNothing(t *testing.T) {
	peer := newRawPeer(t)
	s := newStepped(t, peer.addr(), func(c *Config) { c.Codec = G722; c.Latch = LatchStrict })
	s.sink = discardSink{}
	ctx := context.Background()
	pcm := wideTone(20 * time.Millisecond)
	r := newReceiver()
	datagram := rtpBytes(9, 0, 0, g722.NewEncoder().Encode(nil, pcm))
	var i uint32
	allocs, counted := poolAllocs(500, func() {
		i++
		seq, ts := uint16(i), 160*i
		datagram[2], datagram[3] = byte(seq>>8), byte(seq)
		datagram[4], datagram[5], datagram[6], datagram[7] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
		s.receive(r, datagram, peer.addr())
		_ = s.SendAudio(ctx, pcm)
		s.clk.Advance(20 * time.Millisecond)
		s.tick(s.clk.Now(), 1, s.clk.Now())
	})
	if counted && allocs != 0 {
		t.Fatalf("a G.722 tick (receive, encode, send, decode) allocates %.1f times, want 0", allocs)
	}
	if st := s.Stats(); st.PacketsOut < 500 || st.PacketsIn < 500 {
		t.Fatalf("stats after the run: %+v", st)
	}
}

// The encoder codes exactly what is sent: audio that played out on hold (not sent) does not
// move it, so after the hold the peer's decoder and Handset's encoder are still in step.
// The proof: a fresh encoder fed only the sent frames gives the same bytes.
func TestG722EncoderSkipsWhatHoldDidNotSend(t *testing.T) {
	s, peer, _ := running(t, func(c *Config) { c.Codec = G722 })
	ref := g722.NewEncoder()
	first := peer.read()
	if want := ref.Encode(nil, make([]byte, 640)); !bytes.Equal(first.Payload, want) {
		t.Fatal("the first packet is not the code of 20 ms of silence")
	}
	tone := wideTone(100 * time.Millisecond)
	must(t, s.SendAudio(context.Background(), tone))
	s.Hold(true)
	s.step(t)
	s.step(t) // frames 1 and 2 play out on hold, unsent
	s.Hold(false)
	for f := 2; f < 5; f++ {
		s.step(t)
		p := peer.read()
		if want := ref.Encode(nil, tone[640*f:640*(f+1)]); !bytes.Equal(p.Payload, want) {
			t.Fatalf("frame %d after the hold is not what an encoder that saw only the sent audio gives", f+1)
		}
	}
}
