package plivosim

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

// maxMessage bounds one message from Handset.
const maxMessage = 2 << 20

// CallerOptions shape the simulated callers a Caller connects.
type CallerOptions struct {
	Stream StreamOptions
	// Phone is every call's phone options; Ref is set per call (the CallUUID).
	Phone phone.Options
	// HTTP dials the stream URLs (default a client of its own).
	HTTP *http.Client
	// DialURL, when set, maps a <Stream>'s URL to the address dialled (a Handset reached
	// directly while its public URL names another host).
	DialURL func(streamURL string) string
	// Talk, when set, runs on every connected call's phone; the caller hangs up when it
	// returns.
	Talk   func(ctx context.Context, p phone.Phone, o StreamOrder) error
	Logger *slog.Logger
}

// Caller is the far end of Plivo's audio streams: Options.OpenStream dials a <Stream>'s
// URL and runs the carrier-neutral simulated phone on it with Plivo's wire. A phone that
// hangs up ends its call at the fake (the hangup callback follows, source Caller); a call
// the fake ends closes the stream (no stop: Plivo sends none).
type Caller struct {
	opts   CallerOptions
	server *Server

	mu      sync.Mutex
	phones  map[string]*phone.Call // by CallUUID
	parked  map[string]StreamOrder // orders of Park's number, not dialled
	park    string                 // calls from this number are not streamed
	changed chan struct{}          // closed and replaced on every new phone or parked order
}

// NewCaller returns a caller; Bind it to the Server whose OpenStream it is.
func NewCaller(o CallerOptions) *Caller {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Caller{opts: o, phones: map[string]*phone.Call{}, parked: map[string]StreamOrder{}, changed: make(chan struct{})}
}

// Bind names the fake the caller's hang-ups go to. Call it before any stream opens.
func (c *Caller) Bind(s *Server) { c.server = s }

// Park keeps the streams of calls from number (E.164) undialled, for a test that dials
// them itself (forged and reused streams): see Parked.
func (c *Caller) Park(number string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.park = number
}

// Parked waits for the stream order of parked call callUUID.
func (c *Caller) Parked(ctx context.Context, callUUID string) (StreamOrder, error) {
	return awaitCaller(ctx, c, "stream order", callUUID, c.parked)
}

// awaitCaller waits until in holds id (guarded by c.mu), woken by every change.
func awaitCaller[T any](ctx context.Context, c *Caller, what, id string, in map[string]T) (T, error) {
	for {
		c.mu.Lock()
		v, ok := in[id]
		changed := c.changed
		c.mu.Unlock()
		if ok {
			return v, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return v, fmt.Errorf("plivosim: no %s for %s: %w", what, id, ctx.Err())
		}
	}
}

func (c *Caller) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// OpenStream is the fake's Options.OpenStream: it dials o.URL, sends start and runs the
// phone until the call ends either way.
func (c *Caller) OpenStream(ctx context.Context, o StreamOrder) error {
	c.mu.Lock()
	if c.park != "" && c.server != nil {
		if call, ok := c.server.Call(o.CallUUID); ok && call.From == c.park {
			c.parked[o.CallUUID] = o
			c.notifyLocked()
			c.mu.Unlock()
			<-ctx.Done() // the call stays up, streamless, until it is hung up
			return nil
		}
	}
	c.mu.Unlock()
	w, err := newWire(o, c.opts.Stream)
	if err != nil {
		return err
	}
	target := o.URL
	if c.opts.DialURL != nil {
		target = c.opts.DialURL(target)
	}
	conn, resp, err := websocket.Dial(ctx, target, &websocket.DialOptions{HTTPClient: c.opts.HTTP})
	if err != nil {
		if resp != nil {
			return fmt.Errorf("plivosim: dial the stream: %s: %w", resp.Status, err)
		}
		return fmt.Errorf("plivosim: dial the stream: %w", err)
	}
	conn.SetReadLimit(maxMessage)
	opts := c.opts.Phone
	opts.Ref = o.CallUUID
	// The phone's own context outlives ctx: when the fake ends the call the phone hangs up
	// (a close, as Plivo sends no stop) rather than dropping the socket.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	p, err := phone.Run(pctx, conn, w, opts)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.phones[o.CallUUID] = p
	c.notifyLocked()
	c.mu.Unlock()

	talked := make(chan struct{})
	if c.opts.Talk != nil {
		go func() {
			defer close(talked)
			if err := c.opts.Talk(ctx, p, o); err != nil && ctx.Err() == nil {
				c.opts.Logger.Warn("plivosim: the callee's script failed", "call_uuid", o.CallUUID, "err", err)
			}
		}()
	}
	select {
	case <-p.Done():
	case <-ctx.Done():
		_ = p.Hangup() // the fake ended the call (Handset's hang-up, Close)
	case <-talked:
		_ = p.Hangup()
	}
	<-p.Done()
	// The far end hung up: the call ends at the fake. When Handset closed the stream, the
	// call goes on through its document (which, after a stream, hangs up).
	if e, _ := p.Ending(); !e.ByHandset && ctx.Err() == nil && c.server != nil {
		side := "Caller"
		if call, ok := c.server.Call(o.CallUUID); ok && call.Direction == "outbound" {
			side = "Callee"
		}
		_ = c.server.Hangup(o.CallUUID, side)
	}
	if err := p.Err(); err != nil && !errors.Is(err, phone.ErrEnded) {
		return err
	}
	return nil
}

// Phone waits until the stream of call callUUID is open and returns its phone.
func (c *Caller) Phone(ctx context.Context, callUUID string) (*phone.Call, error) {
	return awaitCaller(ctx, c, "stream", callUUID, c.phones)
}
