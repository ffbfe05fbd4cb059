package media

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/voice"
)

// Limits on what the call may queue ahead.
const (
	// MaxQueued is how much audio SendAudio accepts ahead of the send clock.
	MaxQueued = 2 * time.Second
	// MaxMarks bounds the marks sent and not yet reported.
	MaxMarks = 1024
	// maxDigits bounds the DTMF digits waiting to be sent.
	maxDigits = 32
	// maxCatchUp is the most frames one tick plays out after a late wake-up; the pacer
	// re-anchors long before (pace.DefaultMaxLag is 10 frames).
	maxCatchUp = 16
)

// Session is one call's RTP media: a socket, the 20 ms send clock, the jitter buffer and
// DTMF both ways. Run owns the reader; SendAudio, SendMark and Clear come from one writer
// goroutine; the rest is safe from any goroutine.
type Session struct {
	conn         *net.UDPConn
	clk          clock.Clock
	ticker       *Ticker
	log          *slog.Logger
	latch        LatchPolicy
	peer         netip.Addr
	firstTimeout time.Duration
	timeout      time.Duration

	// armed, when a test sets it before Start, is called each time the session's beat
	// has ticked it and set its timer: a fake clock may be advanced then without racing
	// the timer.
	armed func()

	startOnce sync.Once
	closeOnce sync.Once
	stop      chan struct{} // closed by Close
	loopDone  chan struct{} // closed when the send clock has let the session go

	// deliverMu serialises the send clock's calls into the sink with Run setting and
	// clearing it, so nothing reaches a sink after Run returned. Taken before mu.
	deliverMu sync.Mutex
	sink      voice.LegSink // guarded by deliverMu
	// Marks the clock finds due reach the sink from a goroutine started for them
	// (deliverMarks): the sink may block (a call whose event queue is full), and the clock
	// must not, or RTP would stop with it.
	markMu  sync.Mutex
	marks   []string // due, not yet handed over
	marking bool     // a deliverMarks goroutine is running

	mu       sync.Mutex // guards the following
	closed   bool
	beat     *beat // the Ticker's beat that ticks the session, from Start
	codec    Codec
	dtmfPT   uint8
	sdp      netip.AddrPort // the address the SDP gave
	remote   netip.AddrPort // where packets go and come from: sdp, or the latched source
	latched  bool
	held     bool
	flowed   bool      // a valid packet arrived since Start
	lastIn   time.Time // last valid packet, or Start, or the end of a hold
	timedOut error
	epoch    time.Time // arrival times count from here, for the jitter estimate
	queue    *sendQueue
	jitter   *jitterBuffer
	seq      sequence
	dtmfIn   dtmfReceiver
	out      sender
	coded    coder // G.722 state; idle for raw codecs
	stats    Stats
	onSent   func(late time.Duration, underrun bool) // see ObserveSends
	srtp     *sealer                                 // nil: plain RTP
	playout  [][]byte                                // frames popped for the sink, reused (playoutFrame)
}

// New checks cfg and returns a session that sends nothing until Start (or Run).
func New(cfg Config) (*Session, error) {
	if cfg.Conn == nil {
		return nil, errors.New("media: Config.Conn is nil")
	}
	if err := cfg.Codec.validate(); err != nil {
		return nil, err
	}
	if err := checkDTMF(cfg.Codec, cfg.DTMF); err != nil {
		return nil, err
	}
	if cfg.Latch > LatchAny {
		return nil, fmt.Errorf("media: unknown latch policy %d", cfg.Latch)
	}
	sealer, err := newSealer(cfg.SRTP)
	if err != nil {
		return nil, err
	}
	s := &Session{
		srtp:         sealer,
		conn:         cfg.Conn,
		clk:          cfg.Clock,
		ticker:       cfg.Ticker,
		log:          cfg.Log,
		latch:        cfg.Latch,
		peer:         cfg.Peer.Unmap(),
		firstTimeout: cfg.FirstMediaTimeout,
		timeout:      cfg.MediaTimeout,
		stop:         make(chan struct{}),
		loopDone:     make(chan struct{}),
		codec:        cfg.Codec,
		dtmfPT:       cfg.DTMF,
		sdp:          unmap(cfg.Remote),
	}
	if s.clk == nil {
		s.clk = clock.Real{}
	}
	if s.ticker == nil {
		s.ticker = NewTicker(s.clk, 1)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.firstTimeout <= 0 {
		s.firstTimeout = DefaultFirstMediaTimeout
	}
	if s.timeout <= 0 {
		s.timeout = DefaultMediaTimeout
	}
	s.remote = s.sdp
	s.epoch = s.clk.Now() // Start moves it; set here so packets before Start are timed too
	s.queue = newSendQueue(cfg.Codec.Format.Bytes(MaxQueued))
	s.jitter = newJitterBuffer(cfg.Codec)
	s.out.init(cfg.Codec)
	s.coded.init(cfg.Codec)
	return s, nil
}

func checkDTMF(c Codec, pt uint8) error {
	if pt > 127 || pt != 0 && (pt == c.PayloadType || pt == comfortNoisePT) {
		return fmt.Errorf("media: telephone-event payload type %d clashes or is out of range", pt)
	}
	return nil
}

func unmap(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// playoutFrame is the i-th frame popped for the sink in one pass, made (or resized for a
// new codec) on first use: a call pops more than one frame a pass only to catch up after a
// stall, so most calls never make more than the first. Caller holds mu.
func (s *Session) playoutFrame(i int) []byte {
	for len(s.playout) <= i {
		s.playout = append(s.playout, nil)
	}
	n := s.codec.Format.FrameBytes()
	if cap(s.playout[i]) < n {
		s.playout[i] = make([]byte, n)
	}
	s.playout[i] = s.playout[i][:n]
	return s.playout[i]
}

// Start starts the send clock at once: comfort silence until audio is queued, so RTP flows
// from the 200 OK and the first syllable of the greeting is never clipped. Later calls do
// nothing.
func (s *Session) Start() {
	s.startOnce.Do(func() {
		now := s.clk.Now()
		s.mu.Lock()
		s.lastIn, s.epoch = now, now
		s.mu.Unlock()
		s.ticker.join(s)
	})
}

// Run reads RTP until ctx ends (returns ctx.Err() and closes the session), Close (returns
// nil) or the peer falls silent (returns an error wrapping ErrMediaTimeout). It delivers
// inbound audio as steady 20 ms frames in the codec's format to sink.Audio from the send
// clock's goroutine, digits to sink.DTMF, unreadable packets to sink.Malformed, and marks
// to sink.Mark. It starts the send clock if Start was not called. Call it once.
func (s *Session) Run(ctx context.Context, sink voice.LegSink) error {
	s.deliverMu.Lock()
	s.sink = sink
	s.deliverMu.Unlock()
	defer func() {
		s.deliverMu.Lock()
		s.sink = nil
		s.deliverMu.Unlock()
	}()
	stopOnCancel := context.AfterFunc(ctx, func() { _ = s.Close() })
	defer stopOnCancel()
	s.Start()
	err := s.read(ctx, sink)
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		<-s.loopDone // nothing of the session outlives a Run that ended it
	}
	return err
}

// markDue queues marks for sink without waiting for it, starting a goroutine to hand
// them over when none is running: marks are rare (one a sentence), so a session keeps no
// goroutine for them.
func (s *Session) markDue(sink voice.LegSink, marks []string) {
	if len(marks) == 0 {
		return
	}
	s.markMu.Lock()
	s.marks = append(s.marks, marks...)
	start := !s.marking
	s.marking = true
	s.markMu.Unlock()
	if start {
		go s.deliverMarks(sink)
	}
}

// deliverMarks hands the queued marks to sink, in order, until none is left.
func (s *Session) deliverMarks(sink voice.LegSink) {
	for {
		s.markMu.Lock()
		marks := s.marks
		s.marks = nil
		if len(marks) == 0 {
			s.marking = false
			s.markMu.Unlock()
			return
		}
		s.markMu.Unlock()
		for _, name := range marks {
			sink.Mark(name)
		}
	}
}

// SendAudio queues audio in the codec's format (any length; the session cuts 20 ms
// frames, padding a short last one with silence). It returns ErrQueueFull beyond
// MaxQueued ahead of the send clock.
func (s *Session) SendAudio(_ context.Context, audio []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if !s.queue.push(audio) {
		return fmt.Errorf("%w: %d bytes queued, %d more would pass %s", ErrQueueFull, s.queue.size, len(audio), MaxQueued)
	}
	return nil
}

// SendMark asks for sink.Mark(name) once every byte queued before it has been sent on
// the RTP clock: with no carrier to echo marks, the send clock is what the caller heard.
func (s *Session) SendMark(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if !s.queue.mark(name) {
		return ErrTooManyMarks
	}
	return nil
}

// Clear drops the queued audio at once (the next tick sends silence) and reports every
// pending mark, in order, on that tick; each mark is reported exactly once.
func (s *Session) Clear(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.queue.drop()
	return nil
}

// SendDTMF queues one digit (0-9, *, #, A-D) as an RFC 4733 event: an update on every
// 20 ms tick for 100 ms, then three end packets with the same timestamp. Queued audio
// waits while the event plays.
func (s *Session) SendDTMF(digit string) error {
	code, err := digitCode(digit)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrClosed
	case s.dtmfPT == 0:
		return ErrNoDTMF
	case !s.out.queueDigit(code):
		return fmt.Errorf("media: %d DTMF digits are waiting already", maxDigits)
	}
	return nil
}

// SetRemote points the session at a new peer address (a re-INVITE moved it); the session
// may latch again once under its LatchPolicy.
func (s *Session) SetRemote(addr netip.AddrPort) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sdp, s.remote, s.latched = unmap(addr), unmap(addr), false
}

// SetCodec switches to another codec (a re-INVITE changed it): the queued audio is in the
// old format, so it is dropped as by Clear, and the jitter buffer restarts.
func (s *Session) SetCodec(c Codec, dtmf uint8) error {
	if err := c.validate(); err != nil {
		return err
	}
	if err := checkDTMF(c, dtmf); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue.drop()
	s.queue.setLimit(c.Format.Bytes(MaxQueued)) // empty after drop: only the storage changes
	s.codec, s.dtmfPT = c, dtmf
	s.jitter.configure(c)
	s.out.init(c)
	s.coded.init(c)
	return nil
}

// SetSRTP rekeys the session (a re-INVITE brought new keys); the zero SRTP makes it plain
// RTP. Packets in flight under the old keys fail authentication and are counted malformed.
func (s *Session) SetSRTP(k SRTP) error {
	sealer, err := newSealer(k)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.srtp = sealer
	return nil
}

// Hold stops (on) or resumes sending RTP when the peer put the call on hold. The queue
// still drains on the clock while held, so marks keep coming back; the first packet after
// resuming carries the marker bit. The media timeout does not run while held.
func (s *Session) Hold(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held && !on {
		s.lastIn = s.clk.Now()
		s.out.marker = true
	}
	s.held = on
}

// KeepTime runs the session's Ticker's beats that are due, on the caller's goroutine
// (see Ticker.Poll); the caller holds none of the session's locks. Any session's
// KeepTime keeps time for every session of its Ticker.
func (s *Session) KeepTime() { s.ticker.Poll() }

// ObserveSends has f told, after each packet leaves, how late it left against the send
// clock (what Stats' Lateness counts, for a process-wide metric) and whether it carried
// silence for an underrun (what Stats' Underruns counts). f runs on the clock's
// goroutine, outside the session's lock: it must be quick.
func (s *Session) ObserveSends(f func(late time.Duration, underrun bool)) {
	s.mu.Lock()
	s.onSent = f
	s.mu.Unlock()
}

// Stats returns a snapshot of the session's counters.
func (s *Session) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Lost = s.seq.lost()
	st.Late = s.jitter.late
	st.Concealed = s.jitter.concealed
	st.Resets += s.jitter.restarts
	st.Jitter = s.jitter.jitterDuration(s.codec.wire().clockRate)
	st.Depth = s.jitter.depth
	st.Underruns = s.queue.underruns
	return st
}

// Close stops the clock and closes the socket; Run returns nil once the send clock has
// let the session go. Close itself does not wait, so a sink may call it. It is safe to
// call twice.
func (s *Session) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		b := s.beat
		s.mu.Unlock()
		close(s.stop)
		if b != nil {
			b.wake() // let it go now, not on the beat's next tick
		}
		err = s.conn.Close()
	})
	return err
}
