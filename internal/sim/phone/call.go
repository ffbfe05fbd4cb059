package phone

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/clock"
)

// maxLoggedErrors caps protocol-error log lines per call; all are still recorded.
const maxLoggedErrors = 10

// Call is one simulated call on an open media stream. All methods are safe for concurrent
// use.
type Call struct {
	opts Options
	wire Wire
	info Info
	log  *slog.Logger
	clk  clock.Clock
	conn Transport
	conv *converter // nil when the wire carries 8 kHz mu-law
	t0   time.Time  // when the handshake's last message was sent; every recorded time is relative to it

	ctx       context.Context
	cancel    context.CancelFunc
	running   atomic.Int32  // reader and writer; the last to return closes done
	done      chan struct{} // closed once both goroutines have returned
	wake      chan struct{} // size 1: one pending wake-up is all the writer needs
	hangingUp atomic.Bool
	detached  bool        // made by Detached: no socket, no goroutines
	watchdog  *time.Timer // armed while a write is in progress; owned by the writer after Run
	scratch   []byte      // Decode's scratch buffer; owned by the reader, reused
	pcm       []byte      // decoded audio of a lean call without echo; owned by the reader, reused

	mu       sync.Mutex    // guards everything below
	events   []Event       // append-only, elements never change
	counters Counters      // audio totals, kept in every mode
	changed  chan struct{} // closed and replaced when an event is recorded while watched
	// watched is set when a WaitFor holds changed: only then is an event announced, so a
	// frame nobody waits on costs no channel.
	watched   bool
	out       []outItem    // messages for the writer, in order
	says      []*utterance // caller speech waiting to be streamed, in order
	play      playback     // the carrier's playback buffer
	playTimer clock.Timer  // fires when the head of play falls due
	echo      *echoLine    // the echo on the caller's line; nil without Options.Echo
	replies   replyEnds    // reply ends found in the audio, on an audio-only stream
	loggedErr int
	writeErr  error // why the writer gave up, for the reader to report
	ended     bool
	ending    Ending
}

type outKind uint8

const (
	outMark outKind = iota + 1
	outCleared
	outDTMF
	outRaw
)

type outItem struct {
	kind    outKind
	text    string
	cleared bool // outMark: reported by a clear
}

type utterance struct {
	audio []byte
	off   int
	sent  bool // every byte went out; guarded by Call.mu
	done  chan struct{}
}

// run is RunTransport.
func run(ctx context.Context, conn Transport, wire Wire, opts Options) (*Call, error) {
	c, err := newCall(ctx, wire, opts, conn)
	if err != nil {
		_ = conn.CloseNow()
		return nil, err
	}
	if err := c.begin(); err != nil {
		c.cancel()
		_ = conn.CloseNow()
		return nil, err
	}
	c.log.Debug("call connected", "carrier", c.info.Name)
	c.running.Store(2)
	go c.readLoop()
	go c.writeLoop()
	return c, nil
}

func (o Options) withDefaults() Options {
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Echo != nil {
		e := o.Echo.withDefaults() // a copy: the caller may reuse its EchoOptions
		o.Echo = &e
	}
	return o
}

func (i Info) withDefaults() (Info, error) {
	if i.Format == (audio.Format{}) {
		i.Format = audio.Telephone
	}
	if i.Frame == 0 {
		i.Frame = audio.FrameDuration
	}
	if i.Frame < 0 || i.Frame%audio.FrameDuration != 0 || i.Frame > time.Second {
		return i, fmt.Errorf("phone: %s wire frame %v: want a multiple of %v up to 1s", i.Name, i.Frame, audio.FrameDuration)
	}
	if i.MaxBuffered <= 0 {
		i.MaxBuffered = maxBuffered
	}
	return i, nil
}

// newCall builds a call around an open stream; conn may be nil in unit tests that only
// drive handleMessage.
func newCall(ctx context.Context, wire Wire, opts Options, conn Transport) (*Call, error) {
	o := opts.withDefaults()
	info, err := wire.Info().withDefaults()
	if err != nil {
		return nil, err
	}
	conv, err := newConverter(info.Format)
	if err != nil {
		return nil, fmt.Errorf("phone: %s wire: %w", info.Name, err)
	}
	c := &Call{
		opts:    o,
		wire:    wire,
		info:    info,
		log:     o.Logger.With("call", o.Ref),
		clk:     o.Clock,
		conn:    conn,
		conv:    conv,
		done:    make(chan struct{}),
		wake:    make(chan struct{}, 1),
		changed: make(chan struct{}),
	}
	if o.Echo != nil {
		c.echo = newEchoLine(*o.Echo)
	}
	c.play.lengthsOnly = o.Lean && o.Echo == nil
	c.play.limit = info.MaxBuffered
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.t0 = c.clk.Now()
	return c, nil
}

// begin sends the wire's handshake and sets the stream's time origin just before its
// last message.
func (c *Call) begin() error {
	msgs := c.wire.Handshake()
	for i, m := range msgs {
		if i == len(msgs)-1 {
			c.t0 = c.clk.Now()
		}
		if err := c.write(m); err != nil {
			return fmt.Errorf("phone: %s handshake message %d: %w", c.info.Name, i+1, err)
		}
	}
	return nil
}

// write sends one text message and gives up after the write timeout. One watchdog timer,
// re-armed per write, enforces that: a context per write would allocate on every frame.
func (c *Call) write(msg []byte) error {
	if c.watchdog == nil {
		c.watchdog = time.AfterFunc(c.opts.WriteTimeout, c.writeTimedOut)
	} else {
		c.watchdog.Reset(c.opts.WriteTimeout)
	}
	err := c.conn.Write(c.ctx, msg)
	if !c.watchdog.Stop() { // it fired during this write and dropped the socket
		return fmt.Errorf("write timed out after %v: %w", c.opts.WriteTimeout, context.DeadlineExceeded)
	}
	return err
}

// writeTimedOut is the watchdog: dropping the socket fails the write in progress. The
// reason is set first, so the reader, which sees the socket go too, reports it.
func (c *Call) writeTimedOut() {
	c.mu.Lock()
	if c.writeErr == nil {
		c.writeErr = fmt.Errorf("write: timed out after %v: %w", c.opts.WriteTimeout, context.DeadlineExceeded)
	}
	c.mu.Unlock()
	_ = c.conn.CloseNow()
}

// rel is the time since stream start.
func (c *Call) rel() time.Duration { return c.clk.Now().Sub(c.t0) }

// exit runs as each goroutine returns; the last one closes the socket and Done.
func (c *Call) exit() {
	if c.running.Add(-1) == 0 {
		_ = c.conn.CloseNow()
		c.cancel()
		close(c.done)
	}
}

// finish records how the call ended (the first report wins) and stops everything.
func (c *Call) finish(e Ending) {
	c.mu.Lock()
	if !c.ended {
		unplayed := c.play.buffered()
		c.play = playback{lengthsOnly: c.play.lengthsOnly, limit: c.play.limit}
		if c.echo != nil {
			c.echo.heard = nil
		}
		if c.playTimer != nil {
			c.playTimer.Stop()
		}
		for _, u := range c.says {
			close(u.done)
		}
		c.says, c.out = nil, nil
		e.At = c.rel()
		c.recordLocked(Event{Kind: Closed, Code: int(e.Code), Detail: e.Reason, Bytes: unplayed})
		c.ended, c.ending = true, e
		c.log.Debug("call ended", "carrier", c.info.Name, "code", int(e.Code), "reason", e.Reason, "by_handset", e.ByHandset, "err", e.Err, "unplayed_bytes", unplayed)
	}
	c.mu.Unlock()
	c.cancel()
}

// Hangup ends the call as a caller hanging up: queued messages go out, then the wire's
// stop, then a normal close. It waits for the call's goroutines and returns Err. Calling
// it again, or after the call ended, just returns Err.
func (c *Call) Hangup() error {
	if c.detached {
		c.finish(Ending{Code: websocket.StatusNormalClosure})
		<-c.done
		return c.Err()
	}
	c.hangingUp.Store(true)
	c.wakeWriter()
	<-c.done
	return c.Err()
}

// Done is closed once the call has ended (Hangup, Handset closing the socket, a failure or
// the context) and its goroutines have returned.
func (c *Call) Done() <-chan struct{} { return c.done }

// Err is why the call ended abnormally: nil while it runs, after Hangup, and after
// Handset closed the stream with 1000.
func (c *Call) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ending.Err
}

// Ending reports how the call ended; ok is false while it runs.
func (c *Call) Ending() (e Ending, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ending, c.ended
}

// Ref is the carrier's id of the call (Options.Ref).
func (c *Call) Ref() string { return c.opts.Ref }

// Elapsed is the time since the stream started, on the call's clock; recorded times use
// the same origin.
func (c *Call) Elapsed() time.Duration { return c.rel() }
