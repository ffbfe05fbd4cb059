package media

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// discardSink takes everything and keeps nothing.
type discardSink struct{}

func (discardSink) Audio([]byte)    {}
func (discardSink) Mark(string)     {}
func (discardSink) DTMF(string)     {}
func (discardSink) Malformed(error) {}

func TestSendTickAllocatesNothing(t *testing.T) {
	peer := newRawPeer(t)
	s := newStepped(t, peer.addr(), nil)
	s.sink = discardSink{}
	ctx := context.Background()
	frame := frameOf(9)
	allocs := testing.AllocsPerRun(500, func() {
		_ = s.SendAudio(ctx, frame)
		_ = s.SendMark(ctx, "spoken")
		s.clk.Advance(20 * time.Millisecond)
		s.tick(s.clk.Now(), 1, s.clk.Now())
	})
	if allocs != 0 {
		t.Fatalf("one tick (send, marks, playout) allocates %.1f times, want 0", allocs)
	}
	if st := s.Stats(); st.PacketsOut < 500 {
		t.Fatalf("only %d packets sent", st.PacketsOut)
	}
}

func TestReceiveAllocatesNothing(t *testing.T) {
	s := newStepped(t, fuzzRemote, func(c *Config) { c.Latch = LatchStrict })
	r := newReceiver()
	datagram := rtpBytes(0, 0, 0, frameOf(3))
	event := rtpBytes(101, 0, 0, []byte{1, 10, 0, 160})
	dst := make([]byte, 160)
	var i uint32
	allocs, counted := poolAllocs(1000, func() {
		i++
		seq, ts := uint16(2*i), 160*i
		datagram[2], datagram[3] = byte(seq>>8), byte(seq)
		datagram[4], datagram[5], datagram[6], datagram[7] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
		s.receive(r, datagram, fuzzRemote)
		copy(event[2:8], datagram[2:8])
		event[3]++ // the next sequence number, a new event timestamp
		s.receive(r, event, fuzzRemote)
		s.jitter.pop(dst)
	})
	if counted && allocs != 0 {
		t.Fatalf("receiving a packet allocates %.1f times, want 0", allocs)
	}
	if st := s.Stats(); st.PacketsIn < 2000 || st.DTMFIn < 1000 || st.Malformed != 0 {
		t.Fatalf("stats after the run: %+v", st)
	}
}

// Packets from a mixer (CSRCs) or with header extensions (RFC 8285) are audio like any
// other. The receiver's header slices start empty: the first such packet grows them, and
// from then on receiving allocates nothing.
func TestReceiveCSRCsAndExtensionsAllocatesNothing(t *testing.T) {
	s := newStepped(t, fuzzRemote, func(c *Config) { c.Latch = LatchStrict })
	r := newReceiver()
	packet := rtp.Packet{Header: rtp.Header{Version: 2, SSRC: 0x5150, CSRC: []uint32{7, 8, 9}}, Payload: frameOf(4)}
	must(t, packet.SetExtension(1, []byte{0xAA}))
	must(t, packet.SetExtension(2, []byte{0xBB, 0xCC}))
	dst := make([]byte, 160)
	receive := func(i uint32) {
		packet.SequenceNumber, packet.Timestamp = uint16(i), 160*i
		datagram, err := packet.Marshal()
		must(t, err)
		if _, bad := s.receive(r, datagram, fuzzRemote); bad != nil {
			t.Fatalf("packet %d refused: %v", i, bad)
		}
	}
	played := false
	for i := range uint32(4) { // past the jitter buffer's starting depth
		receive(i)
		played = s.jitter.pop(dst) && bytes.Equal(dst, frameOf(4)) || played
	}
	if !played {
		t.Fatalf("the packets' audio never played: %+v", s.Stats())
	}
	datagram, err := packet.Marshal()
	must(t, err)
	i := uint32(3)
	allocs, counted := poolAllocs(200, func() {
		i++
		seq, ts := uint16(i), 160*i
		datagram[2], datagram[3] = byte(seq>>8), byte(seq)
		datagram[4], datagram[5], datagram[6], datagram[7] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
		s.receive(r, datagram, fuzzRemote)
		s.jitter.pop(dst)
	})
	if counted && allocs != 0 {
		t.Fatalf("receiving a packet with CSRCs and extensions allocates %.1f times, want 0", allocs)
	}
	if st := s.Stats(); st.PacketsIn < 200 || st.Malformed != 0 {
		t.Fatalf("stats after the run: %+v", st)
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSessions runs n sessions in pairs over loopback, each pair sending comfort
// silence both ways with the reader and playout running, as calls that are connected but
// quiet. One op is one 20 ms period. It reports CPU per session (percent of one core)
// the live heap per session, and the send lateness of every packet: how long after its due time it was written.
//
//	go test -run '^$' -bench Sessions -benchtime 150x ./internal/carrier/sip/media
func BenchmarkSessions(b *testing.B) { benchmarkSessions(b, PCMU) }

func benchmarkSessions(b *testing.B, codec Codec) {
	for _, n := range []int{2, 200, 500} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) { benchSessions(b, n, codec, nil) })
	}
}

// benchSessions runs n sessions of codec in pairs; keys, when set, gives each pair's two sessions
// their SRTP keys (the second of a pair gets them crossed).
func benchSessions(b *testing.B, n int, codec Codec, keys *SRTP) {
	sessions := make([]*Session, 0, n)
	heap0 := heapInUse()
	for range n / 2 {
		connA, connB := listenLoopback(b), listenLoopback(b)
		for i, pair := range [][2]*net.UDPConn{{connA, connB}, {connB, connA}} {
			cfg := Config{Conn: pair[0], Remote: pair[1].LocalAddr().(*net.UDPAddr).AddrPort(), Codec: codec, DTMF: 101}
			if keys != nil {
				cfg.SRTP = *keys
				if i == 1 {
					cfg.SRTP.Local, cfg.SRTP.Remote = keys.Remote, keys.Local
				}
			}
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			sessions = append(sessions, s)
			go func() { _ = s.Run(context.Background(), discardSink{}) }()
		}
	}
	defer func() {
		for _, s := range sessions {
			_ = s.Close()
		}
	}()
	time.Sleep(200 * time.Millisecond) // every clock started and past its first tick
	heap := heapInUse() - heap0
	cpu0, wall0 := cpuTime(b), time.Now()
	b.ResetTimer()
	time.Sleep(time.Duration(b.N) * 20 * time.Millisecond)
	b.StopTimer()
	cpu, wall := cpuTime(b)-cpu0, time.Since(wall0)
	var lateness Lateness
	var sent, malformed uint64
	for _, s := range sessions {
		st := s.Stats()
		lateness.Merge(st.Lateness)
		sent += st.PacketsOut
		malformed += st.Malformed
	}
	if malformed != 0 {
		b.Fatalf("%d packets malformed between sessions keyed for each other", malformed)
	}
	b.ReportMetric(float64(heap)/float64(n), "heap-B/session")
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds()/float64(n), "cpu%/session")
	b.ReportMetric(float64(lateness.Quantile(0.5).Microseconds()), "late-p50-µs")
	b.ReportMetric(float64(lateness.Quantile(0.99).Microseconds()), "late-p99-µs")
	b.ReportMetric(float64(lateness.Max.Microseconds()), "late-max-µs")
	b.ReportMetric(float64(sent)/float64(n), "packets/session")
}
