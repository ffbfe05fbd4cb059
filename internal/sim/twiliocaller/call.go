package twiliocaller

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/handset-voice/handset/internal/clock"
)

// ErrEnded is returned by actions on a call whose stream has ended.
var ErrEnded = errors.New("twiliocaller: call ended")

const (
	// readLimit bounds one message from Handset; Twilio accepts media chunks of any size.
	readLimit = 4 << 20
	// maxLoggedErrors caps protocol-error log lines per call; all are still recorded.
	maxLoggedErrors = 10
)

// writeTimeout bounds one write to Handset; a Handset that stops reading for this long
// loses the call, as it would lose a real Twilio stream. A variable only so a test can
// shorten it.
var writeTimeout = 10 * time.Second

// Call is one simulated call into Handset. All methods are safe for concurrent use.
type Call struct {
	opts      Options
	log       *slog.Logger
	clk       clock.Clock
	conn      *websocket.Conn
	twiml     StreamTwiML
	streamSid string
	t0        time.Time // when start was sent; every recorded time is relative to it

	ctx       context.Context
	cancel    context.CancelFunc
	running   atomic.Int32  // reader and writer; the last to return closes done
	done      chan struct{} // closed once both goroutines have returned
	wake      chan struct{} // size 1: one pending wake-up is all the writer needs
	hangingUp atomic.Bool
	seq       int          // sequenceNumber of the last message sent; owned by the writer after Dial
	watchdog  *time.Timer  // armed while a write is in progress; owned like seq
	rbuf      bytes.Buffer // the message being read; owned by the reader, reused
	pcm       []byte       // decoded audio of a lean call without echo; owned by the reader, reused

	mu       sync.Mutex    // guards everything below
	events   []Event       // append-only, elements never change
	counters Counters      // audio totals, kept in every mode
	changed  chan struct{} // closed and replaced when an event is recorded while watched
	// watched is set when a WaitFor holds changed: only then is an event announced, so a
	// frame nobody waits on costs no channel.
	watched   bool
	out       []outItem    // messages for the writer, in order
	says      []*utterance // caller speech waiting to be streamed, in order
	play      playback     // Twilio's playback buffer
	playTimer clock.Timer  // fires when the head of play falls due
	echo      *echoLine    // the echo on the caller's line; nil without Options.Echo
	loggedErr int
	writeErr  error // why the writer gave up, for the reader to report
	ended     bool
	ending    Ending
}

type outKind uint8

const (
	outMark outKind = iota + 1
	outDTMF
	outRaw
)

type outItem struct {
	kind outKind
	text string
}

type utterance struct {
	audio []byte
	off   int
	sent  bool // every byte went out; guarded by Call.mu
	done  chan struct{}
}

// StreamDialError reports a Media Streams WebSocket that could not be opened; Status and
// Body are Handset's answer when it refused the upgrade.
type StreamDialError struct {
	URL    string
	Status int
	Body   string
	Err    error
}

func (e *StreamDialError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("twiliocaller: stream %s refused with %d; body %q: %v", e.URL, e.Status, e.Body, e.Err)
	}
	return fmt.Sprintf("twiliocaller: stream %s: %v", e.URL, e.Err)
}

func (e *StreamDialError) Unwrap() error { return e.Err }

// Dial places a call into Handset as Twilio would: it posts the signed voice webhook,
// requires a 200 answer with TwiML <Connect><Stream>, opens the WebSocket (signed over the
// TwiML's stream URL), sends connected and start, and starts streaming silence at real-time
// pace. ctx bounds the whole call: cancelling it drops the stream without a stop message.
// Errors are *WebhookError or *StreamDialError when Handset answered but badly.
func Dial(ctx context.Context, opts Options) (*Call, error) {
	o := opts.withDefaults()
	resp, err := PostWebhook(ctx, o, nil)
	if err != nil {
		return nil, err
	}
	if resp.Status != http.StatusOK {
		return nil, &WebhookError{Status: resp.Status, Body: string(resp.Body)}
	}
	tw, err := ParseTwiML(resp.Body)
	if err == nil {
		err = CheckStreamURL(tw.URL, o.InsecureStreamURL)
	}
	if err != nil {
		return nil, &WebhookError{Status: resp.Status, Body: string(resp.Body), Err: err}
	}
	return connect(ctx, o, tw)
}

// connect opens the stream tw names (its URL already checked), sends connected and start,
// and starts the call's goroutines. o has its defaults.
func connect(ctx context.Context, o Options, tw StreamTwiML) (*Call, error) {
	dialURL, err := o.streamDialURL(tw.URL)
	if err != nil {
		return nil, &StreamDialError{URL: tw.URL, Err: err}
	}
	conn, err := dialStream(ctx, o.HTTPClient, dialURL, Signature(o.AuthToken, tw.URL, nil))
	if err != nil {
		return nil, err
	}
	c := newCall(ctx, o, tw, conn)
	if err := c.begin(); err != nil {
		c.cancel()
		_ = conn.CloseNow()
		return nil, err
	}
	c.log.Debug("twilio call connected", "call_sid", o.CallSid, "stream_sid", c.streamSid, "stream_url", tw.URL)
	c.running.Store(2)
	go c.readLoop()
	go c.writeLoop()
	return c, nil
}

// dialStream opens a Media Streams WebSocket with X-Twilio-Signature set to sig, or
// without the header when sig is empty.
func dialStream(ctx context.Context, client *http.Client, dialURL, sig string) (*websocket.Conn, error) {
	h := http.Header{}
	if sig != "" {
		h.Set(SignatureHeader, sig)
	}
	h.Set("User-Agent", "Twilio.TmeWs/1.0")
	conn, resp, err := websocket.Dial(ctx, dialURL, &websocket.DialOptions{HTTPClient: client, HTTPHeader: h})
	if err != nil {
		e := &StreamDialError{URL: dialURL, Err: err}
		if resp != nil {
			e.Status = resp.StatusCode
			if resp.Body != nil {
				var b bytes.Buffer
				_, _ = b.ReadFrom(resp.Body)
				e.Body = b.String()
			}
		}
		return nil, e
	}
	conn.SetReadLimit(readLimit)
	return conn, nil
}

// newCall builds a call around an open stream; conn may be nil in unit tests that only
// drive handleMessage.
func newCall(ctx context.Context, o Options, tw StreamTwiML, conn *websocket.Conn) *Call {
	c := &Call{
		opts:      o,
		log:       o.Logger.With("call_sid", o.CallSid),
		clk:       o.Clock,
		conn:      conn,
		twiml:     tw,
		streamSid: NewSid("MZ"),
		done:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
		changed:   make(chan struct{}),
	}
	if o.Echo != nil {
		c.echo = newEchoLine(*o.Echo)
	}
	c.play.lengthsOnly = o.Lean && o.Echo == nil
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.t0 = c.clk.Now()
	return c
}

// begin sends connected and start, and sets the stream's time origin.
func (c *Call) begin() error {
	if err := c.write(connectedMsg()); err != nil {
		return &StreamDialError{URL: c.twiml.URL, Err: fmt.Errorf("send connected: %w", err)}
	}
	c.t0 = c.clk.Now()
	c.seq++
	if err := c.write(startMsg(c.seq, c.streamSid, c.opts.AccountSid, c.opts.CallSid, c.twiml.Parameters)); err != nil {
		return &StreamDialError{URL: c.twiml.URL, Err: fmt.Errorf("send start: %w", err)}
	}
	return nil
}

// write sends one text message and gives up after writeTimeout. One watchdog timer,
// re-armed per write, enforces that: a context per write would allocate on every 20 ms
// frame.
func (c *Call) write(msg []byte) error {
	if c.watchdog == nil {
		c.watchdog = time.AfterFunc(writeTimeout, c.writeTimedOut)
	} else {
		c.watchdog.Reset(writeTimeout)
	}
	err := c.conn.Write(c.ctx, websocket.MessageText, msg)
	if !c.watchdog.Stop() { // it fired during this write and dropped the socket
		return fmt.Errorf("write timed out after %v: %w", writeTimeout, context.DeadlineExceeded)
	}
	return err
}

// writeTimedOut is the watchdog: dropping the socket fails the write in progress. The
// reason is set first, so the reader, which sees the socket go too, reports it.
func (c *Call) writeTimedOut() {
	c.mu.Lock()
	if c.writeErr == nil {
		c.writeErr = fmt.Errorf("write: timed out after %v: %w", writeTimeout, context.DeadlineExceeded)
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
		c.play = playback{lengthsOnly: c.play.lengthsOnly}
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
		c.log.Debug("twilio call ended", "code", int(e.Code), "reason", e.Reason, "by_handset", e.ByHandset, "err", e.Err, "unplayed_bytes", unplayed)
	}
	c.mu.Unlock()
	c.cancel()
}

// Hangup ends the call as a caller hanging up: queued messages go out, then stop, then a
// normal close. It waits for the call's goroutines and returns Err. Calling it again, or
// after the call ended, just returns Err.
func (c *Call) Hangup() error {
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

// CallSid is the call's CA… sid, as sent in the webhook and start.
func (c *Call) CallSid() string { return c.opts.CallSid }

// AccountSid is the AC… sid the call was placed under.
func (c *Call) AccountSid() string { return c.opts.AccountSid }

// StreamSid is the MZ… sid of the media stream; Handset must echo it in every message.
func (c *Call) StreamSid() string { return c.streamSid }

// TwiML is the stream Handset's webhook answer asked for.
func (c *Call) TwiML() StreamTwiML {
	tw := c.twiml
	tw.Parameters = make(map[string]string, len(c.twiml.Parameters))
	for k, v := range c.twiml.Parameters {
		tw.Parameters[k] = v
	}
	tw.Verbs = append([]string(nil), c.twiml.Verbs...)
	return tw
}

// Elapsed is the time since the stream started, on the call's clock; recorded times use
// the same origin.
func (c *Call) Elapsed() time.Duration { return c.rel() }
