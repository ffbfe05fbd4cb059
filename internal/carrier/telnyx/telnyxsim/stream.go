package telnyxsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/sim/phone"
)

// maxMessage bounds one message from Handset: Telnyx takes up to 30 s of audio per media
// message (16 kHz L16 in base64 is 1.3 MB).
const maxMessage = 2 << 20

// CallerOptions shape the simulated callers a Caller connects.
type CallerOptions struct {
	Stream StreamOptions
	// Phone is every call's phone options; Ref is set per call.
	Phone phone.Options
	// HTTP dials the stream URLs (default a client of its own).
	HTTP *http.Client
	// DialURL, when set, maps a command's stream_url to the address dialled (a Handset
	// reached directly while its public URL names another host).
	DialURL func(streamURL string) string
	// Talk, when set, runs on every connected call's phone; the caller hangs up when it
	// returns (not when ctx ends first: Handset hung up).
	Talk   func(ctx context.Context, p phone.Phone, o StreamOrder) error
	Logger *slog.Logger
}

// Caller is the far end of Telnyx's media streams: Options.OpenStream dials the stream URL
// of a command and runs the carrier-neutral simulated phone on it with Telnyx's wire. A
// phone that hangs up ends its call at the fake (call.hangup, source caller); a call the
// fake ends (Handset's hangup command) stops the stream and closes it; a stream Handset
// closes leaves the call to Handset's hangup command.
type Caller struct {
	opts   CallerOptions
	server *Server

	mu      sync.Mutex
	phones  map[string]*phone.Call   // by call_control_id
	parked  map[string]StreamOrder   // orders from Park's number, not dialled
	park    string                   // calls from this number are not streamed
	expect  map[string]phone.Options // a call's own phone options, by call_control_id, used once
	changed chan struct{}            // closed and replaced on every new phone or parked order
}

// NewCaller returns a caller; Bind it to the Server whose OpenStream it is.
func NewCaller(o CallerOptions) *Caller {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Caller{opts: o, phones: map[string]*phone.Call{}, parked: map[string]StreamOrder{}, expect: map[string]phone.Options{},
		changed: make(chan struct{})}
}

// Park makes the streams of calls from number (E.164) not dialled but kept, for a test
// that dials them itself (forged and replayed streams): see Parked.
func (c *Caller) Park(number string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.park = number
}

// Parked waits for the stream order of parked call ccid.
func (c *Caller) Parked(ctx context.Context, ccid string) (StreamOrder, error) {
	for {
		c.mu.Lock()
		o, ok := c.parked[ccid]
		changed := c.changed
		c.mu.Unlock()
		if ok {
			return o, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return StreamOrder{}, fmt.Errorf("telnyxsim: no stream order for %s: %w", ccid, ctx.Err())
		}
	}
}

// notifyLocked wakes Phone and Parked waiters.
func (c *Caller) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// Bind names the fake the caller's hang-ups go to. Call it before any stream opens.
func (c *Caller) Bind(s *Server) { c.server = s }

// Expect gives the stream of call ccid, when it opens, phone options of its own instead of
// CallerOptions.Phone: a call that needs another line (an echo) than the rest.
func (c *Caller) Expect(ccid string, o phone.Options) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expect[ccid] = o
}

// forget drops what Expect kept for a call that never rang.
func (c *Caller) forget(ccid string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.expect, ccid)
}

// OpenStream is the fake's Options.OpenStream: it dials o.StreamURL, speaks Telnyx's
// handshake and runs the phone until the call ends either way.
func (c *Caller) OpenStream(ctx context.Context, o StreamOrder) error {
	c.mu.Lock()
	if c.park != "" && o.From == c.park {
		c.parked[o.CallControlID] = o
		c.notifyLocked()
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()
	w, err := newWire(o, c.opts.Stream)
	if err != nil {
		return err
	}
	target := o.StreamURL
	if c.opts.DialURL != nil {
		target = c.opts.DialURL(target)
	}
	conn, resp, err := websocket.Dial(ctx, target, &websocket.DialOptions{HTTPClient: c.opts.HTTP})
	if err != nil {
		if resp != nil {
			return fmt.Errorf("telnyxsim: dial the stream: %s: %w", resp.Status, err)
		}
		return fmt.Errorf("telnyxsim: dial the stream: %w", err)
	}
	conn.SetReadLimit(maxMessage)
	c.mu.Lock()
	opts, own := c.expect[o.CallControlID]
	delete(c.expect, o.CallControlID)
	c.mu.Unlock()
	if !own {
		opts = c.opts.Phone
	}
	opts.Ref = o.CallControlID
	// The phone's own context outlives ctx: when the fake ends the call, the phone hangs up
	// (stop, then close) rather than dropping the socket.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	p, err := phone.Run(pctx, conn, w, opts)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.phones[o.CallControlID] = p
	c.notifyLocked()
	c.mu.Unlock()

	talked := make(chan struct{})
	if c.opts.Talk != nil {
		go func() {
			defer close(talked)
			if err := c.opts.Talk(ctx, p, o); err != nil && ctx.Err() == nil {
				c.opts.Logger.Warn("telnyxsim: the callee's script failed", "call_control_id", o.CallControlID, "err", err)
			}
		}()
	}
	select {
	case <-p.Done():
		// The phone hung up, or Handset closed the stream: the call ends at the fake.
	case <-ctx.Done():
		_ = p.Hangup() // the fake ended the call (Handset's hangup, Close)
	case <-talked:
		_ = p.Hangup()
	}
	<-p.Done()
	// The caller hung up: the call ends at the fake. When Handset closed the stream, or
	// dropped it without a close, the call lives on (as on Telnyx) until Handset's hangup
	// command ends it.
	if e, _ := p.Ending(); !e.ByHandset && e.Err == nil && ctx.Err() == nil && c.server != nil {
		side := "caller" // the phone is the caller of an inbound call, the callee of an outbound one
		if o.Direction == "outgoing" {
			side = "callee"
		}
		c.server.Hangup(o.CallControlID, side)
	}
	if err := p.Err(); err != nil && !errors.Is(err, phone.ErrEnded) {
		return err
	}
	return nil
}

// Phone waits until the stream of call ccid is open and returns its phone.
func (c *Caller) Phone(ctx context.Context, ccid string) (*phone.Call, error) {
	for {
		c.mu.Lock()
		p, ok := c.phones[ccid]
		changed := c.changed
		c.mu.Unlock()
		if ok {
			return p, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("telnyxsim: no stream for %s: %w", ccid, ctx.Err())
		}
	}
}
