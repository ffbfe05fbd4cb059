package media

import (
	"context"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/clock"
)

func TestNextPhase(t *testing.T) {
	phase := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		after, want time.Duration
	}{
		{-5 * time.Millisecond, 0}, // before the phase: the phase itself
		{0, 0},
		{time.Millisecond, 20 * time.Millisecond},
		{20 * time.Millisecond, 20 * time.Millisecond},
		{41 * time.Millisecond, 60 * time.Millisecond},
	} {
		if got := nextPhase(phase.Add(c.after), phase).Sub(phase); got != c.want {
			t.Errorf("%v after the phase: next at +%v, want +%v", c.after, got, c.want)
		}
	}
}

// silentFor reports whether p receives nothing for d of real time.
func (p *rawPeer) silentFor(d time.Duration) bool {
	_ = p.conn.SetReadDeadline(time.Now().Add(d))
	defer func() { _ = p.conn.SetReadDeadline(time.Time{}) }()
	_, err := p.conn.Read(make([]byte, 2048))
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// Sessions sharing a Ticker are spread over its beats and tick on their beat's phase;
// a closed one leaves at once while the others go on, and an empty beat stops.
func TestSessionsShareATickersBeats(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	tk := NewTicker(clk, 2) // beats at +0 and +10 ms
	start := func(peer *rawPeer) *Session {
		s, err := New(Config{Conn: listenLoopback(t), Remote: peer.addr(), Codec: PCMU, Clock: clk, Ticker: tk})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		s.Start()
		return s
	}
	pa, pb, pc := newRawPeer(t), newRawPeer(t), newRawPeer(t)
	a := start(pa) // the first beat, which ticks at once
	first := pa.read().SequenceNumber
	b := start(pb) // the second: its first tick is 10 ms on
	c := start(pc) // the first again (a tie goes to the earlier beat), after its tick at once
	if l0, l1 := tk.beats[0].load(), tk.beats[1].load(); l0 != 2 || l1 != 1 {
		t.Fatalf("beats carry %d and %d sessions, want 2 and 1", l0, l1)
	}
	if !pb.silentFor(50 * time.Millisecond) {
		t.Fatal("the second beat's session sent before its phase")
	}
	clk.Advance(10 * time.Millisecond)
	pb.read()
	if !pc.silentFor(50 * time.Millisecond) {
		t.Fatal("a session that joined a running beat sent before the beat's next tick")
	}
	clk.Advance(10 * time.Millisecond)
	if got := pa.read().SequenceNumber; got != first+1 {
		t.Fatalf("the first beat's second tick sent seq %d, want %d", got, first+1)
	}
	pc.read()

	must(t, a.Close())
	select {
	case <-a.loopDone: // the beat let it go on Close, before any further tick
	case <-time.After(patience):
		t.Fatal("a closed session was not let go by its beat")
	}
	clk.Advance(20 * time.Millisecond)
	pc.read() // its beat mate goes on
	pb.read()
	must(t, b.Close())
	must(t, c.Close())
	<-b.loopDone
	<-c.loopDone
	for i, bt := range tk.beats {
		deadline := time.Now().Add(patience)
		for {
			bt.mu.Lock()
			running := bt.running
			bt.mu.Unlock()
			if !running {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("beat %d still running with no session", i)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// A session closed before Start never joins a beat, and Run still returns.
func TestAClosedSessionNeverTicks(t *testing.T) {
	peer := newRawPeer(t)
	tk := NewTicker(nil, 2)
	s, err := New(Config{Conn: listenLoopback(t), Remote: peer.addr(), Codec: PCMU, Ticker: tk})
	if err != nil {
		t.Fatal(err)
	}
	must(t, s.Close())
	s.Start()
	select {
	case <-s.loopDone:
	case <-time.After(patience):
		t.Fatal("Start after Close left the session waiting for a beat")
	}
	if !peer.silentFor(60 * time.Millisecond) {
		t.Fatal("a closed session sent RTP")
	}
	for i, bt := range tk.beats {
		if bt.load() != 0 {
			t.Fatalf("beat %d carries a closed session", i)
		}
	}
}

// starvedClock is a fake clock whose Now can run ahead of its timers: the beat's
// goroutine sleeps on as if the scheduler had not got round to it.
type starvedClock struct {
	*clock.Fake
	ahead atomic.Int64
}

func (c *starvedClock) Now() time.Time { return c.Fake.Now().Add(time.Duration(c.ahead.Load())) }

// A packet arriving while a beat is due but its goroutine has not run sends the beat's
// frames from the reader's goroutine, for every session on the beat; nothing is sent
// twice when the goroutine runs after all.
func TestAReaderSendsWhatItsBeatOwes(t *testing.T) {
	clk := &starvedClock{Fake: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}
	tk := NewTicker(clk, 1)
	start := func(peer *rawPeer) netip.AddrPort {
		conn := listenLoopback(t)
		s, err := New(Config{Conn: conn, Remote: peer.addr(), Codec: PCMU, Clock: clk, Ticker: tk})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		ran := make(chan struct{})
		t.Cleanup(func() { cancel(); _ = s.Close(); <-ran })
		go func() { defer close(ran); _ = s.Run(ctx, newRecSink()) }()
		s.Start()
		return conn.LocalAddr().(*net.UDPAddr).AddrPort()
	}
	pa, pb := newRawPeer(t), newRawPeer(t)
	a := start(pa)
	first := pa.read().SequenceNumber // the beat's tick at once
	start(pb)                         // joins the running beat: its first frame comes with the next tick
	if !pa.silentFor(30*time.Millisecond) || !pb.silentFor(time.Millisecond) {
		t.Fatal("a session sent before its next frame was due")
	}

	clk.ahead.Store(int64(audio.FrameDuration)) // due now, but the beat's timer has not fired
	pa.send(a, PCMU.PayloadType, 1, 160, make([]byte, 160))
	if got := pa.read().SequenceNumber; got != first+1 {
		t.Fatalf("after a packet in, the session sent seq %d, want %d", got, first+1)
	}
	pb.read() // its beat mate's first frame went out with it
	pa.send(a, PCMU.PayloadType, 2, 320, make([]byte, 160))
	if !pa.silentFor(30*time.Millisecond) || !pb.silentFor(time.Millisecond) {
		t.Fatal("a second packet in sent a frame that was not due")
	}
	clk.ahead.Store(0)
	clk.Advance(audio.FrameDuration) // the goroutine's timer fires for the frame already sent
	if !pa.silentFor(30 * time.Millisecond) {
		t.Fatal("the beat's goroutine sent a frame its reader had already sent")
	}
	clk.Advance(audio.FrameDuration)
	if got := pa.read().SequenceNumber; got != first+2 {
		t.Fatalf("the next tick sent seq %d, want %d", got, first+2)
	}
}
