package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/clock"
)

// patience bounds every wait: generous, so a loaded machine never fails a test.
const patience = 20 * time.Second

// recSink records what a session delivers and signals each change.
type recSink struct {
	mu        sync.Mutex
	frames    [][]byte
	marks     []string
	digits    []string
	malformed []error
	changed   chan struct{}
}

func newRecSink() *recSink { return &recSink{changed: make(chan struct{}, 1)} }

// record applies a change under the lock and wakes whoever waits for one.
func (r *recSink) record(change func()) {
	r.mu.Lock()
	change()
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recSink) Audio(frame []byte) {
	r.record(func() { r.frames = append(r.frames, bytes.Clone(frame)) })
}
func (r *recSink) Mark(name string)    { r.record(func() { r.marks = append(r.marks, name) }) }
func (r *recSink) DTMF(digit string)   { r.record(func() { r.digits = append(r.digits, digit) }) }
func (r *recSink) Malformed(err error) { r.record(func() { r.malformed = append(r.malformed, err) }) }

// waitFor waits until cond (called under the sink's lock) holds.
func (r *recSink) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(patience)
	for {
		r.mu.Lock()
		ok := cond()
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// played waits for n frames and returns the first byte of each: frames are told apart
// by value (frameOf), silence is 0xFF.
func (r *recSink) played(t *testing.T, n int) []byte {
	t.Helper()
	r.waitFor(t, fmt.Sprintf("%d frames", n), func() bool { return len(r.frames) >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	got := make([]byte, n)
	for i, f := range r.frames[:n] {
		got[i] = f[0]
	}
	return got
}

func (r *recSink) snapshotMarks() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.marks)
}

// waitStats polls a session's counters until cond holds: the reader has no event to wait on.
func waitStats(t *testing.T, s *Session, what string, cond func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		st := s.Stats()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s: %+v", what, st)
		}
		time.Sleep(time.Millisecond)
	}
}

// rawPeer is a bare UDP socket that plays the far end packet by packet.
type rawPeer struct {
	t    *testing.T
	conn *net.UDPConn
	ssrc uint32
}

func newRawPeer(t *testing.T) *rawPeer {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &rawPeer{t: t, conn: conn, ssrc: 0x5150}
}

func (p *rawPeer) addr() netip.AddrPort { return p.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (p *rawPeer) sendRaw(to netip.AddrPort, b []byte) {
	p.t.Helper()
	if _, err := p.conn.WriteToUDPAddrPort(b, to); err != nil {
		p.t.Fatal(err)
	}
}

func (p *rawPeer) send(to netip.AddrPort, pt uint8, seq uint16, ts uint32, payload []byte) {
	p.t.Helper()
	b, err := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: pt, SequenceNumber: seq,
		Timestamp: ts, SSRC: p.ssrc}, Payload: payload}).Marshal()
	if err != nil {
		p.t.Fatal(err)
	}
	p.sendRaw(to, b)
}

func (p *rawPeer) read() rtp.Packet {
	p.t.Helper()
	buf := make([]byte, 2048)
	_ = p.conn.SetReadDeadline(time.Now().Add(patience))
	n, err := p.conn.Read(buf)
	if err != nil {
		p.t.Fatalf("no RTP from the session: %v", err)
	}
	var pkt rtp.Packet
	if err := pkt.Unmarshal(buf[:n]); err != nil {
		p.t.Fatalf("the session sent a bad packet: %v", err)
	}
	return pkt
}

// stepped is a session on a fake clock that a test moves one 20 ms tick at a time.
type stepped struct {
	*Session
	clk   *clock.Fake
	armed chan struct{}
	local netip.AddrPort
}

func listenLoopback(t testing.TB) *net.UDPConn {
	t.Helper()
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// newStepped makes a session sending to remote; edit adjusts its Config. It is not started.
func newStepped(t *testing.T, remote netip.AddrPort, edit func(*Config)) *stepped {
	t.Helper()
	conn := listenLoopback(t)
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cfg := Config{Conn: conn, Remote: remote, Codec: PCMU, DTMF: 101, Clock: clk}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	st := &stepped{Session: s, clk: clk, armed: make(chan struct{}, 1), local: conn.LocalAddr().(*net.UDPAddr).AddrPort()}
	s.armed = func() {
		select {
		case st.armed <- struct{}{}:
		case <-s.stop: // closed: nobody steps it any more
		}
	}
	return st
}

// waitArmed waits for the clock goroutine to finish a tick and set its timer.
func (s *stepped) waitArmed(t *testing.T) {
	t.Helper()
	select {
	case <-s.armed:
	case <-time.After(patience):
		t.Fatal("the clock goroutine never set its timer")
	}
}

// step moves the fake clock one frame and waits for the tick it causes.
func (s *stepped) step(t *testing.T) {
	t.Helper()
	s.clk.Advance(20 * time.Millisecond)
	s.waitArmed(t)
}

// running is a stepped session talking to a raw peer, its Run recording into a sink.
func running(t *testing.T, edit func(*Config)) (*stepped, *rawPeer, *recSink) {
	t.Helper()
	peer := newRawPeer(t)
	s := newStepped(t, peer.addr(), edit)
	sink := newRecSink()
	s.run(t, sink)
	// The first tick handed the call a frame of silence (nothing had arrived yet): the
	// tests below count what plays from the peer's packets on.
	sink.waitFor(t, "the first tick's frame", func() bool { return len(sink.frames) == 1 })
	sink.mu.Lock()
	sink.frames = nil
	sink.mu.Unlock()
	return s, peer, sink
}

// Before the peer's first packet the call still gets a frame of silence every tick: its
// VAD and echo path run on the frames' clock from the answer on.
func TestSilenceIsPlayedBeforeTheFirstPacket(t *testing.T) {
	s, _, sink := running(t, nil)
	for range 3 {
		s.step(t)
	}
	got := sink.played(t, 3)
	if !bytes.Equal(got, []byte{0xFF, 0xFF, 0xFF}) {
		t.Fatalf("played %v before any packet, want three frames of mu-law silence", got)
	}
	for _, f := range sink.frames {
		if len(f) != PCMU.Format.FrameBytes() || bytes.Count(f, []byte{0xFF}) != len(f) {
			t.Fatalf("a frame before the first packet is not 20 ms of silence: %v", f)
		}
	}
}

// run starts Run on sink and returns its result channel.
func (s *stepped) run(t *testing.T, sink *recSink) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), sink) }()
	s.waitArmed(t) // Run started the clock; its first tick is done
	return done
}

func TestSendClockNumbersPacketsContinuously(t *testing.T) {
	peer := newRawPeer(t)
	s := newStepped(t, peer.addr(), nil)
	s.Start()
	s.waitArmed(t)
	var pkts []rtp.Packet
	pkts = append(pkts, peer.read()) // the first tick sends at once
	s.step(t)
	pkts = append(pkts, peer.read())
	audio := append(frameOf(1), frameOf(2)...)
	if err := s.SendAudio(context.Background(), audio); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		s.step(t)
		pkts = append(pkts, peer.read())
	}
	wantFirst := []byte{0xFF, 0xFF, 1, 2, 0xFF, 0xFF}
	wantMarker := []bool{true, false, true, false, false, false}
	for i, p := range pkts {
		if p.PayloadType != 0 || len(p.Payload) != 160 || p.Payload[0] != wantFirst[i] || p.Payload[159] != wantFirst[i] {
			t.Fatalf("packet %d: pt %d, %d bytes starting %#x; want PCMU 160 bytes of %#x", i, p.PayloadType, len(p.Payload), p.Payload[0], wantFirst[i])
		}
		if p.Marker != wantMarker[i] {
			t.Errorf("packet %d: marker %v, want %v", i, p.Marker, wantMarker[i])
		}
		if i > 0 {
			if p.SequenceNumber != pkts[i-1].SequenceNumber+1 || p.Timestamp != pkts[i-1].Timestamp+160 || p.SSRC != pkts[0].SSRC {
				t.Fatalf("packet %d: seq %d ts %d ssrc %#x after seq %d ts %d ssrc %#x", i, p.SequenceNumber, p.Timestamp, p.SSRC,
					pkts[i-1].SequenceNumber, pkts[i-1].Timestamp, pkts[0].SSRC)
			}
		}
	}
	st := s.Stats()
	if st.PacketsOut != 6 || st.BytesOut != 6*160 || st.FirstOut.IsZero() || st.Lateness.Count() != 6 {
		t.Fatalf("stats after six packets: %+v", st)
	}
}

func TestAudioQueuedBeforeStartIsTheFirstPacket(t *testing.T) {
	peer := newRawPeer(t)
	s := newStepped(t, peer.addr(), nil)
	must(t, s.SendAudio(context.Background(), frameOf(7))) // the greeting, ready at the 200 OK
	s.Start()
	if p := peer.read(); p.Payload[0] != 7 || !p.Marker {
		t.Fatalf("first packet: %#x marker %v; want the greeting with the marker bit", p.Payload[0], p.Marker)
	}
}

func TestMarksComeBackOnceWhenTheirAudioWasSent(t *testing.T) {
	s, peer, sink := running(t, nil)
	peer.read()
	ctx := context.Background()
	must(t, s.SendAudio(ctx, bytes.Repeat(frameOf(1), 3)))
	must(t, s.SendMark(ctx, "a"))
	must(t, s.SendAudio(ctx, frameOf(2)))
	must(t, s.SendMark(ctx, "b"))
	for i, want := range [][]string{nil, nil, {"a"}, {"a", "b"}} {
		s.step(t)
		peer.read()
		if want != nil { // marks reach the sink from a goroutine of their own
			sink.waitFor(t, fmt.Sprintf("marks %q", want), func() bool { return slices.Equal(sink.marks, want) })
		}
		if got := sink.snapshotMarks(); !slices.Equal(got, want) {
			t.Fatalf("after %d frames: marks %q, want %q", i+1, got, want)
		}
	}
	must(t, s.SendAudio(ctx, bytes.Repeat(frameOf(3), 5)))
	must(t, s.SendMark(ctx, "c"))
	must(t, s.SendMark(ctx, "d"))
	s.step(t)
	if p := peer.read(); p.Payload[0] != 3 {
		t.Fatalf("the first queued frame was not sent: %#x", p.Payload[0])
	}
	must(t, s.Clear(ctx))
	s.step(t)
	if p := peer.read(); p.Payload[0] != 0xFF {
		t.Fatalf("the tick after a clear sent %#x, want silence", p.Payload[0])
	}
	s.step(t)
	peer.read()
	want := []string{"a", "b", "c", "d"}
	sink.waitFor(t, "the cleared marks", func() bool { return slices.Equal(sink.marks, want) })
}

// markBlocker is a sink whose Mark waits for release, as a call's does while its event
// queue is full.
type markBlocker struct {
	*recSink
	release chan struct{}
}

func (b markBlocker) Mark(name string) {
	<-b.release
	b.recSink.Mark(name)
}

// A sink blocked on a mark does not stop the send clock: RTP goes on every tick, and the
// marks arrive in order once the sink takes them.
func TestABlockedMarkDoesNotStopTheSendClock(t *testing.T) {
	peer := newRawPeer(t)
	s := newStepped(t, peer.addr(), nil)
	sink := markBlocker{recSink: newRecSink(), release: make(chan struct{})}
	go func() { _ = s.Run(context.Background(), sink) }()
	s.waitArmed(t)
	peer.read()
	ctx := context.Background()
	must(t, s.SendAudio(ctx, frameOf(1)))
	must(t, s.SendMark(ctx, "a"))
	must(t, s.SendAudio(ctx, frameOf(2)))
	must(t, s.SendMark(ctx, "b"))
	for range 10 { // each step waits for its tick: a clock stuck in Mark fails here
		s.step(t)
		peer.read()
	}
	close(sink.release)
	sink.waitFor(t, "both marks", func() bool { return slices.Equal(sink.marks, []string{"a", "b"}) })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestSendAudioIsBounded(t *testing.T) {
	s := newStepped(t, netip.MustParseAddrPort("127.0.0.1:9"), nil)
	ctx := context.Background()
	must(t, s.SendAudio(ctx, make([]byte, PCMU.Format.Bytes(MaxQueued))))
	if err := s.SendAudio(ctx, make([]byte, 1)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a byte past %s: %v, want ErrQueueFull", MaxQueued, err)
	}
}

func TestReceivePlaysReorderedLostAndDuplicatedPackets(t *testing.T) {
	s, peer, sink := running(t, nil)
	// Frames 1-6 at seq 100-105: sent as 1, 3, 2, 4, 4 again, 6 (5 is lost).
	order := []int{1, 3, 2, 4, 4, 6}
	for _, f := range order {
		peer.send(s.local, 0, uint16(99+f), uint32(8000+160*f), frameOf(byte(f)))
	}
	waitStats(t, s.Session, "six packets", func(st Stats) bool { return st.PacketsIn == 6 })
	for range 7 {
		s.step(t)
	}
	got := sink.played(t, 7)
	if want := []byte{0xFF, 1, 2, 3, 4, 0xFF, 6}; !bytes.Equal(got, want) {
		t.Fatalf("played %v, want %v", got, want)
	}
	st := s.Stats()
	if st.Duplicates != 1 || st.Reordered != 1 || st.Lost != 1 || st.Concealed != 1 || st.FirstIn.IsZero() {
		t.Fatalf("stats %+v: want 1 duplicate, 1 reordered, 1 lost, 1 concealed", st)
	}
}

func TestReceiveRestartsOnANewSSRC(t *testing.T) {
	s, peer, sink := running(t, nil)
	peer.send(s.local, 0, 500, 1000, frameOf(1))
	peer.send(s.local, 0, 501, 1160, frameOf(2))
	waitStats(t, s.Session, "the first stream", func(st Stats) bool { return st.PacketsIn == 2 })
	s.step(t)
	s.step(t)
	// The peer's media server changed (a transfer, a failover): new SSRC, numbering and
	// timestamps. Without the restart these would be refused as far off or late.
	peer.ssrc = 0x7777
	peer.send(s.local, 0, 9, 400000, frameOf(3))
	peer.send(s.local, 0, 10, 400160, frameOf(4))
	waitStats(t, s.Session, "the second stream", func(st Stats) bool { return st.PacketsIn == 4 })
	for range 4 {
		s.step(t)
	}
	got := sink.played(t, 6)
	// What was buffered of the old stream still plays; the new one follows it.
	if want := []byte{0xFF, 1, 2, 3, 4, 0xFF}; !bytes.Equal(got, want) {
		t.Fatalf("played %v, want %v", got, want)
	}
	if st := s.Stats(); st.Resets != 1 || st.Late != 0 || st.Lost != 0 {
		t.Fatalf("stats %+v: want one reset, nothing late or lost", st)
	}
}

func TestReceiveRecutsTenMillisecondPackets(t *testing.T) {
	s, peer, sink := running(t, nil)
	for i := range 8 { // 80 ms as eight 10 ms packets, values 1..8
		peer.send(s.local, 0, uint16(i), uint32(80*i), bytes.Repeat([]byte{byte(i + 1)}, 80))
	}
	waitStats(t, s.Session, "eight packets", func(st Stats) bool { return st.PacketsIn == 8 })
	for range 5 {
		s.step(t)
	}
	sink.waitFor(t, "five frames", func() bool { return len(sink.frames) >= 5 })
	for i, f := range sink.frames[1:5] {
		want := append(bytes.Repeat([]byte{byte(2*i + 1)}, 80), bytes.Repeat([]byte{byte(2*i + 2)}, 80)...)
		if !bytes.Equal(f, want) {
			t.Fatalf("frame %d is not packets %d and %d joined", i, 2*i+1, 2*i+2)
		}
	}
}

func TestDTMFInIsReportedOncePerEvent(t *testing.T) {
	s, peer, sink := running(t, nil)
	seq := uint16(0)
	press := func(code uint8, ts uint32) {
		for i := 1; i <= 5; i++ {
			peer.send(s.local, 101, seq, ts, payloadOf(event{code: code, duration: uint16(160 * i)}))
			seq++
		}
		for range 3 {
			peer.send(s.local, 101, seq, ts, payloadOf(event{code: code, end: true, duration: 800}))
			seq++
		}
	}
	press(7, 1000)
	press(7, 3000)
	press(11, 5000)
	sink.waitFor(t, "three digits", func() bool { return len(sink.digits) >= 3 })
	waitStats(t, s.Session, "24 packets", func(st Stats) bool { return st.PacketsIn == 24 })
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if want := []string{"7", "7", "#"}; !slices.Equal(sink.digits, want) {
		t.Fatalf("digits %q, want %q", sink.digits, want)
	}
	if st := s.Stats(); st.DTMFIn != 3 || st.Malformed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDTMFOutFollowsRFC4733(t *testing.T) {
	peer := newRawPeer(t)
	s := newStepped(t, peer.addr(), nil)
	s.Start()
	s.waitArmed(t)
	first := peer.read()
	if err := s.SendDTMF("E"); err == nil {
		t.Fatal("SendDTMF accepted a non-key")
	}
	must(t, s.SendDTMF("9"))
	var pkts []rtp.Packet
	for range eventUpdates + eventEnds + 1 {
		s.step(t)
		pkts = append(pkts, peer.read())
	}
	eventTS := first.Timestamp + 160
	for i, p := range pkts[:eventUpdates+eventEnds] {
		e, err := decodeEvent(p.Payload)
		if err != nil || p.PayloadType != 101 || p.Timestamp != eventTS || e.code != 9 {
			t.Fatalf("packet %d: pt %d ts %d event %+v %v; want pt 101 ts %d code 9", i, p.PayloadType, p.Timestamp, e, err, eventTS)
		}
		wantEnd := i >= eventUpdates
		wantDuration := uint16(160 * min(i+1, eventUpdates))
		if e.end != wantEnd || e.duration != wantDuration || p.Marker != (i == 0) {
			t.Fatalf("packet %d: end %v duration %d marker %v; want %v %d %v", i, e.end, e.duration, p.Marker, wantEnd, wantDuration, i == 0)
		}
		if p.SequenceNumber != first.SequenceNumber+uint16(i)+1 {
			t.Fatalf("packet %d: seq %d, want %d", i, p.SequenceNumber, first.SequenceNumber+uint16(i)+1)
		}
	}
	after := pkts[len(pkts)-1]
	if after.PayloadType != 0 || after.Timestamp != first.Timestamp+160*uint32(len(pkts)) {
		t.Fatalf("after the event: pt %d ts %d; want audio at ts %d", after.PayloadType, after.Timestamp, first.Timestamp+160*uint32(len(pkts)))
	}
	if st := s.Stats(); st.DTMFOut != 1 {
		t.Fatalf("DTMFOut %d, want 1", st.DTMFOut)
	}
	noDTMF := newStepped(t, peer.addr(), func(c *Config) { c.DTMF = 0 })
	if err := noDTMF.SendDTMF("1"); !errors.Is(err, ErrNoDTMF) {
		t.Fatalf("SendDTMF without telephone-event: %v", err)
	}
}

func TestHoldStopsSendingAndResumesWithTheMarker(t *testing.T) {
	s, peer, sink := running(t, nil)
	before := peer.read()
	ctx := context.Background()
	s.Hold(true)
	must(t, s.SendAudio(ctx, frameOf(4)))
	must(t, s.SendMark(ctx, "held"))
	for range 3 {
		s.step(t)
	}
	sink.waitFor(t, "the mark of audio drained on hold", func() bool { return slices.Equal(sink.marks, []string{"held"}) })
	s.Hold(false)
	s.step(t)
	p := peer.read()
	if p.SequenceNumber != before.SequenceNumber+1 || p.Timestamp != before.Timestamp+4*160 || !p.Marker {
		t.Fatalf("after hold: seq %d ts %d marker %v; want seq %d ts %d marker set",
			p.SequenceNumber, p.Timestamp, p.Marker, before.SequenceNumber+1, before.Timestamp+4*160)
	}
}

func TestSetCodecDropsTheQueueAndSwitchesPayload(t *testing.T) {
	s, peer, sink := running(t, nil)
	peer.read()
	ctx := context.Background()
	must(t, s.SendAudio(ctx, bytes.Repeat(frameOf(5), 10)))
	must(t, s.SendMark(ctx, "old"))
	must(t, s.SetCodec(PCMA, 101))
	s.step(t)
	p := peer.read()
	if p.PayloadType != 8 || p.Payload[0] != 0xD5 {
		t.Fatalf("after switching to PCMA: pt %d payload %#x; want 8 and A-law silence", p.PayloadType, p.Payload[0])
	}
	sink.waitFor(t, "the dropped audio's mark", func() bool { return slices.Equal(sink.marks, []string{"old"}) })
	if err := s.SetCodec(Codec{PayloadType: 13, Format: PCMU.Format}, 0); err == nil {
		t.Fatal("SetCodec accepted comfort noise as the codec")
	}
	if err := s.SetCodec(PCMA, 8); err == nil {
		t.Fatal("SetCodec accepted telephone-event on the codec's payload type")
	}
}

// The packet buffer is sized for the call's codec; a switch to one with larger frames
// (16 kHz linear PCM: 640 bytes where G.711 has 160) must still send whole frames.
func TestSetCodecToLargerFramesSendsWholeFrames(t *testing.T) {
	s, peer, _ := running(t, nil)
	peer.read()
	wide := Codec{PayloadType: 96, Format: audio.Format{Encoding: audio.PCM16, Rate: 16000}}
	must(t, s.SetCodec(wide, 101))
	frame := make([]byte, 640)
	for i := range frame {
		frame[i] = byte(i)
	}
	must(t, s.SendAudio(context.Background(), frame))
	s.step(t)
	p := peer.read()
	if p.PayloadType != 96 || !bytes.Equal(p.Payload, frame) {
		t.Fatalf("after switching to 16 kHz PCM: pt %d, %d payload bytes (first %v); want 96 and the 640 bytes queued",
			p.PayloadType, len(p.Payload), p.Payload[:min(4, len(p.Payload))])
	}
	must(t, s.SetCodec(PCMU, 101))
	must(t, s.SendAudio(context.Background(), frameOf(7)))
	s.step(t)
	if p := peer.read(); p.PayloadType != 0 || !bytes.Equal(p.Payload, frameOf(7)) {
		t.Fatalf("back on PCMU: pt %d, %d payload bytes; want 0 and the 160 bytes queued", p.PayloadType, len(p.Payload))
	}
}

func TestLatchingAndStrangers(t *testing.T) {
	unused := netip.MustParseAddrPort("127.0.0.1:9") // the SDP's port: nobody sends from it
	cases := []struct {
		name   string
		remote netip.AddrPort
		peer   netip.Addr
		latch  LatchPolicy
		want   bool // the first sender is latched
	}{
		{"same IP as the SDP", unused, netip.Addr{}, LatchPeer, true},
		{"the signalling peer's IP", netip.MustParseAddrPort("192.0.2.7:4000"), netip.MustParseAddr("127.0.0.1"), LatchPeer, true},
		{"neither", netip.MustParseAddrPort("192.0.2.7:4000"), netip.MustParseAddr("192.0.2.8"), LatchPeer, false},
		{"strict", unused, netip.Addr{}, LatchStrict, false},
		{"any", netip.MustParseAddrPort("192.0.2.7:4000"), netip.Addr{}, LatchAny, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			first, second := newRawPeer(t), newRawPeer(t)
			s := newStepped(t, c.remote, func(cfg *Config) { cfg.Peer, cfg.Latch = c.peer, c.latch })
			sink := newRecSink()
			s.run(t, sink)
			first.sendRaw(s.local, []byte("not RTP at all")) // garbage never latches
			waitStats(t, s.Session, "the garbage", func(st Stats) bool { return st.Strangers == 1 })
			first.send(s.local, 0, 1, 160, frameOf(1))
			if !c.want {
				waitStats(t, s.Session, "a stranger", func(st Stats) bool { return st.Strangers == 2 })
				if st := s.Stats(); st.PacketsIn != 0 {
					t.Fatalf("a stranger's packet was accepted: %+v", st)
				}
				return
			}
			waitStats(t, s.Session, "the first packet", func(st Stats) bool { return st.PacketsIn == 1 })
			s.step(t)
			if p := first.read(); p.PayloadType != 0 {
				t.Fatalf("after latching the session sent pt %d to the source", p.PayloadType)
			}
			second.send(s.local, 0, 2, 320, frameOf(2))
			waitStats(t, s.Session, "a second source", func(st Stats) bool { return st.Strangers == 2 })
			if st := s.Stats(); st.PacketsIn != 1 {
				t.Fatalf("a second source was accepted after latching: %+v", st)
			}
		})
	}
}

func TestMalformedPacketsFromThePeerAreReported(t *testing.T) {
	s, peer, sink := running(t, nil)
	rtcp := []byte{0x80, 200, 0, 6, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	peer.sendRaw(s.local, rtcp)                                      // a sender report on the RTP port: ignored
	peer.sendRaw(s.local, []byte{0x80, 0})                           // short header
	peer.sendRaw(s.local, append([]byte{0x40}, make([]byte, 20)...)) // version 1
	peer.send(s.local, 99, 1, 0, frameOf(1))                         // a payload type nobody agreed
	peer.send(s.local, 101, 2, 0, []byte{1, 2})                      // a short event
	peer.send(s.local, 13, 3, 0, []byte{40})                         // comfort noise: fine
	peer.sendRaw(s.local, make([]byte, maxPacket+1))                 // too long
	peer.send(s.local, 0, 4, 0, frameOf(1))                          // audio, last: all before it was read
	waitStats(t, s.Session, "the comfort noise and the audio", func(st Stats) bool { return st.PacketsIn == 2 })
	if st := s.Stats(); st.Malformed != 5 || st.Strangers != 0 {
		t.Fatalf("Malformed %d, Strangers %d; want 5 and 0", st.Malformed, st.Strangers)
	}
	sink.waitFor(t, "five malformed reports", func() bool { return len(sink.malformed) == 5 })
}

func TestMediaTimeouts(t *testing.T) {
	quick := func(c *Config) { c.FirstMediaTimeout, c.MediaTimeout = time.Second, 500*time.Millisecond }
	t.Run("no media at all", func(t *testing.T) {
		s := newStepped(t, netip.MustParseAddrPort("127.0.0.1:9"), quick)
		done := s.run(t, newRecSink())
		for range 51 {
			s.step(t)
		}
		waitRun(t, done, ErrMediaTimeout)
	})
	t.Run("media stopped, not while held", func(t *testing.T) {
		peer := newRawPeer(t)
		s := newStepped(t, peer.addr(), quick)
		done := s.run(t, newRecSink())
		peer.send(s.local, 0, 1, 0, frameOf(1))
		waitStats(t, s.Session, "a packet", func(st Stats) bool { return st.PacketsIn == 1 })
		s.Hold(true)
		for range 100 {
			s.step(t)
		}
		s.mu.Lock()
		timedOut := s.timedOut
		s.mu.Unlock()
		if timedOut != nil {
			t.Fatalf("timed out on hold: %v", timedOut)
		}
		s.Hold(false)
		for range 26 {
			s.step(t)
		}
		waitRun(t, done, ErrMediaTimeout)
	})
}

func waitRun(t *testing.T, done <-chan error, want error) {
	t.Helper()
	select {
	case err := <-done:
		if !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Fatalf("Run returned %v, want %v", err, want)
		}
	case <-time.After(patience):
		t.Fatal("Run did not return")
	}
}

func TestRunEndsOnCloseAndOnCancel(t *testing.T) {
	s := newStepped(t, netip.MustParseAddrPort("127.0.0.1:9"), nil)
	done := s.run(t, newRecSink())
	must(t, s.Close())
	waitRun(t, done, nil)
	select {
	case <-s.loopDone:
	default:
		t.Fatal("Run returned with the clock goroutine still running")
	}
	if err := s.SendAudio(context.Background(), frameOf(1)); !errors.Is(err, ErrClosed) {
		t.Fatalf("SendAudio after Close: %v", err)
	}
	c := newStepped(t, netip.MustParseAddrPort("127.0.0.1:9"), nil)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- c.Run(ctx, newRecSink()) }()
	cancel()
	waitRun(t, ended, context.Canceled)
	select {
	case <-c.loopDone:
	default:
		t.Fatal("Run returned on cancel with the clock goroutine still running")
	}
}

func TestTwoSessionsTalkOverLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("a second of real time")
	}
	connA, connB := listenLoopback(t), listenLoopback(t)
	addr := func(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }
	a, err := New(Config{Conn: connA, Remote: addr(connB), Codec: PCMU, DTMF: 101})
	must(t, err)
	b, err := New(Config{Conn: connB, Remote: addr(connA), Codec: PCMU, DTMF: 101})
	must(t, err)
	defer a.Close()
	defer b.Close()
	sinkA, sinkB := newRecSink(), newRecSink()
	go func() { _ = a.Run(context.Background(), sinkA) }()
	go func() { _ = b.Run(context.Background(), sinkB) }()
	ctx := context.Background()
	for i := range 50 {
		must(t, a.SendAudio(ctx, frameOf(byte(i+1))))
	}
	must(t, a.SendMark(ctx, "spoken"))
	must(t, a.SendDTMF("4"))
	sinkA.waitFor(t, "the mark", func() bool { return len(sinkA.marks) == 1 })
	sinkB.waitFor(t, "the digit", func() bool { return len(sinkB.digits) == 1 })
	sinkB.waitFor(t, "the last frame played", func() bool {
		return slices.ContainsFunc(sinkB.frames, func(f []byte) bool { return f[0] == 50 })
	})
	sinkB.mu.Lock()
	defer sinkB.mu.Unlock()
	var heard []byte
	for _, f := range sinkB.frames {
		if f[0] != 0xFF {
			heard = append(heard, f[0])
		}
	}
	// Loopback loses nothing, but on a loaded machine a stalled goroutine makes packets
	// late, and the jitter buffer may shrink its cushion by skipping a frame: whatever
	// played must be in order, and most of it must have played.
	t.Logf("A sent: %+v\nB received: %+v", a.Stats(), b.Stats())
	if len(heard) < 25 || !slices.IsSorted(heard) || heard[len(heard)-1] != 50 || sinkB.digits[0] != "4" {
		t.Fatalf("heard %v (digits %q): want frames 1-50 in order", heard, sinkB.digits)
	}
}

// Each packet's lateness against the send clock reaches the observer once, as sent: a tick
// that wakes 7 ms late sends its packet 7 ms late.
func TestObserveSendsReportsEachPacketsLateness(t *testing.T) {
	peer := newRawPeer(t)
	s := newStepped(t, peer.addr(), nil)
	var mu sync.Mutex
	var seen []time.Duration
	s.ObserveSends(func(late time.Duration, underrun bool) {
		if underrun {
			t.Error("a session that was never given audio reported an underrun")
		}
		mu.Lock()
		seen = append(seen, late)
		mu.Unlock()
	})
	s.Start()
	s.waitArmed(t)
	peer.read() // the first tick sends at once
	s.step(t)
	peer.read()
	s.clk.Advance(27 * time.Millisecond) // the next tick, 7 ms late
	s.waitArmed(t)
	peer.read()
	mu.Lock()
	defer mu.Unlock()
	want := []time.Duration{0, 0, 7 * time.Millisecond}
	if len(seen) != len(want) {
		t.Fatalf("observed %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("observed %v, want %v", seen, want)
		}
	}
	if n := s.Stats().Lateness.Count(); n != 3 {
		t.Fatalf("stats count %d packets, want 3", n)
	}
}

// A packet that carried silence because the queue ran dry inside a sentence reaches the
// observer as an underrun, once, and the session's stats count it.
func TestObserveSendsReportsAnUnderrun(t *testing.T) {
	peer := newRawPeer(t)
	s := newStepped(t, peer.addr(), nil)
	var mu sync.Mutex
	var dry []bool
	s.ObserveSends(func(_ time.Duration, underrun bool) {
		mu.Lock()
		dry = append(dry, underrun)
		mu.Unlock()
	})
	must(t, s.SendAudio(context.Background(), frameOf(1))) // a sentence whose next frame is late
	s.Start()
	s.waitArmed(t)
	peer.read() // the frame
	s.step(t)
	peer.read() // silence: the playout fell behind
	s.step(t)
	peer.read() // silence still, the same gap
	mu.Lock()
	defer mu.Unlock()
	if want := []bool{false, true, false}; !slices.Equal(dry, want) {
		t.Fatalf("observed underruns %v, want %v", dry, want)
	}
	if n := s.Stats().Underruns; n != 1 {
		t.Fatalf("stats count %d underruns, want 1", n)
	}
}

// The playout's frames are made when first needed: a call that keeps time holds one, and a
// tick that catches up after a stall makes the ones it pops, each the size of a frame.
func TestPlayoutFramesAreMadeWhenFirstNeeded(t *testing.T) {
	s, _, sink := running(t, nil)
	for range 3 {
		s.step(t)
	}
	sink.played(t, 3)
	if got := playoutMade(s.Session); got != 1 {
		t.Fatalf("%d playout frames made after ticks on time, want 1", got)
	}
	s.clk.Advance(5 * 20 * time.Millisecond) // a stall: five frames due at once
	s.waitArmed(t)
	sink.played(t, 3+5)
	if got := playoutMade(s.Session); got != 5 {
		t.Fatalf("%d playout frames made after a five-frame catch-up, want 5", got)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for i, f := range sink.frames {
		if len(f) != PCMU.Format.FrameBytes() {
			t.Fatalf("frame %d has %d bytes, want %d", i, len(f), PCMU.Format.FrameBytes())
		}
	}
}

func playoutMade(s *Session) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.playout {
		if f != nil {
			n++
		}
	}
	return n
}
