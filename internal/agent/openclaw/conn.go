package openclaw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/voice"
)

const (
	handshakeTimeout = 15 * time.Second // the gateway's own preauth timeout
	writeTimeout     = 10 * time.Second
	requestTimeout   = 30 * time.Second // the reference client's request timeout
	defaultTick      = 30 * time.Second
	maxPayload       = 26214400 // hello-ok policy.maxPayload
)

// errConnLost reports that the gateway connection ended before a response arrived.
var errConnLost = errors.New("gateway connection lost")

// response is what a request waiter receives.
type response struct {
	payload json.RawMessage
	err     *gatewayError
}

// gwConn is one authenticated gateway connection with its reader and writer goroutines.
type gwConn struct {
	a  *Agent
	ws *websocket.Conn

	// out feeds the writer. Size 32: a full queue blocks the sender, which also selects
	// on done and its own context, so nothing waits on a dead connection.
	out  chan []byte
	stop chan struct{} // closed by Agent.Close: the writer flushes out, then closes
	done chan struct{} // closed once the connection is finished
	once sync.Once
	err  error // why it finished; set before done is closed

	ids     atomic.Uint64
	mu      sync.Mutex
	pending map[string]chan response // request id → its waiter (buffer 1)
	tick    time.Duration
}

// dial opens a connection and completes the handshake: connect.challenge, the connect
// request with our token and client info, hello-ok. ctx bounds only the dial and
// handshake; the caller starts the connection's goroutines.
func (a *Agent) dial(ctx context.Context) (*gwConn, error) {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, a.url, &websocket.DialOptions{HTTPClient: a.client})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusServiceUnavailable {
			err = &StartingError{Said: "HTTP 503 on the WebSocket upgrade"}
		}
		return nil, a.fail("connect", voice.KindTransient, err)
	}
	ws.SetReadLimit(maxPayload)
	c := &gwConn{a: a, ws: ws, out: make(chan []byte, 32), stop: make(chan struct{}),
		done: make(chan struct{}), pending: map[string]chan response{}, tick: defaultTick}
	if err := c.handshake(ctx); err != nil {
		ws.CloseNow()
		return nil, err
	}
	return c, nil
}

func (c *gwConn) handshake(ctx context.Context) error {
	a := c.a
	// 1. The challenge comes first; ticks or other events before it are skipped.
	for {
		f, err := c.readFrame(ctx)
		if err != nil {
			return a.fail("connect", voice.KindTransient, closedStarting(err))
		}
		if f.Type == "event" && f.Event == "connect.challenge" {
			break
		}
	}
	// 2. connect: a trusted backend on loopback with the shared token.
	params := map[string]any{
		"minProtocol": protocolVersion, "maxProtocol": protocolVersion,
		"client": map[string]string{"id": "gateway-client", "version": "0.1.0",
			"platform": "linux", "mode": "backend", "displayName": "Handset"},
		"role": "operator", "scopes": []string{"operator.read", "operator.write"},
		"caps": []string{}, "auth": map[string]string{"token": a.token},
		"userAgent": "handset/0.1.0",
	}
	b, err := json.Marshal(request{Type: "req", ID: "connect", Method: "connect", Params: params})
	if err != nil {
		return a.fail("connect", voice.KindUnknown, err)
	}
	if err := c.ws.Write(ctx, websocket.MessageText, b); err != nil {
		return a.fail("connect", voice.KindTransient, err)
	}
	// 3. hello-ok, or the reason we were refused.
	for {
		f, err := c.readFrame(ctx)
		if err != nil {
			return a.fail("connect", voice.KindTransient, closedStarting(err))
		}
		if f.Type != "res" || f.ID != "connect" {
			continue
		}
		if !f.OK {
			if se := startingFrom(f.Error); se != nil {
				return a.fail("connect", voice.KindTransient, se)
			}
			return &voice.ProviderError{Provider: providerName, Op: "connect", Kind: f.Error.kind(), Err: f.Error}
		}
		var hello struct {
			Type     string `json:"type"`
			Protocol int    `json:"protocol"`
			Auth     struct {
				Scopes []string `json:"scopes"`
			} `json:"auth"`
			Policy struct {
				TickIntervalMs int64 `json:"tickIntervalMs"`
			} `json:"policy"`
		}
		if err := json.Unmarshal(f.Payload, &hello); err != nil || hello.Type != "hello-ok" {
			return a.fail("connect", voice.KindProtocol, fmt.Errorf("%w: no hello-ok", errBadFrame))
		}
		if hello.Protocol != protocolVersion {
			return a.fail("connect", voice.KindProtocol, fmt.Errorf("gateway speaks protocol %d, want %d", hello.Protocol, protocolVersion))
		}
		if !contains(hello.Auth.Scopes, "operator.write") || !contains(hello.Auth.Scopes, "operator.read") {
			return a.fail("connect", voice.KindAuth, fmt.Errorf("gateway granted scopes %v, need operator.read and operator.write", hello.Auth.Scopes))
		}
		if hello.Policy.TickIntervalMs > 0 {
			c.tick = time.Duration(hello.Policy.TickIntervalMs) * time.Millisecond
		}
		return nil
	}
}

// closedStarting turns a close with 1013 (try again later) during the handshake into a
// StartingError; other errors pass through.
func closedStarting(err error) error {
	if websocket.CloseStatus(err) == websocket.StatusTryAgainLater {
		var ce websocket.CloseError
		errors.As(err, &ce)
		return &StartingError{Said: "closed with 1013 " + strconv.Quote(clip(ce.Reason))}
	}
	return err
}

func (c *gwConn) readFrame(ctx context.Context) (frame, error) {
	for {
		_, data, err := c.ws.Read(ctx)
		if err != nil {
			return frame{}, err
		}
		f, err := parseFrame(data)
		if err != nil {
			c.a.badFrames.Add(1)
			c.a.log.Debug("openclaw: dropped frame", "err", err)
			continue
		}
		return f, nil
	}
}

// reader is the connection's only reader: it matches responses to requests by id and
// hands chat events to the run with the same runId. Events are broadcast to every client
// of the gateway, so events of runs that are not ours are dropped here. Nothing at all
// for two tick intervals means the connection is dead.
func (c *gwConn) reader() {
	defer c.a.wg.Done()
	for {
		ctx, cancel := context.WithTimeout(c.a.ctx, 2*c.tick)
		f, err := c.readFrame(ctx)
		cancel()
		if err != nil {
			c.finish(fmt.Errorf("%w: %v", errConnLost, err))
			return
		}
		switch {
		case f.Type == "res":
			c.mu.Lock()
			w := c.pending[f.ID]
			delete(c.pending, f.ID)
			c.mu.Unlock()
			if w != nil {
				w <- response{payload: f.Payload, err: f.Error}
			}
		case f.Type == "event" && f.Event == "chat":
			ev, err := parseChat(f.Payload)
			if err != nil {
				c.a.badFrames.Add(1)
				c.a.log.Debug("openclaw: dropped chat event", "err", err)
				continue
			}
			c.a.route(ev)
		case f.Type == "event" && f.Event == "agent":
			if ev, ok := parseAgentEvent(f.Payload); ok {
				c.a.route(ev)
			}
		case f.Type == "event" && f.Event == "shutdown":
			c.a.log.Info("openclaw: gateway is shutting down")
		}
	}
}

// writer is the connection's only writer.
func (c *gwConn) writer() {
	defer c.a.wg.Done()
	for {
		select {
		case b := <-c.out:
			if err := c.write(b); err != nil {
				c.finish(fmt.Errorf("%w: %v", errConnLost, err))
				return
			}
		case <-c.stop:
		drain:
			for {
				select {
				case b := <-c.out:
					if c.write(b) != nil {
						c.finish(errClosed)
						return
					}
				default:
					break drain
				}
			}
			c.ws.Close(websocket.StatusNormalClosure, "handset closing")
			c.finish(errClosed)
			return
		case <-c.done:
			return
		}
	}
}

func (c *gwConn) write(b []byte) error {
	ctx, cancel := context.WithTimeout(c.a.ctx, writeTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, b)
}

// finish marks the connection dead once, closes the socket and fails waiting requests.
func (c *gwConn) finish(err error) {
	c.once.Do(func() {
		c.err = err
		close(c.done)
		c.ws.CloseNow()
		c.mu.Lock()
		for id, w := range c.pending {
			delete(c.pending, id)
			close(w)
		}
		c.mu.Unlock()
	})
}

func (c *gwConn) dead() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// send queues one request; wait, when true, registers a waiter for its response.
func (c *gwConn) send(ctx context.Context, method string, params any, wait bool) (string, chan response, error) {
	id := "h" + strconv.FormatUint(c.ids.Add(1), 10)
	b, err := json.Marshal(request{Type: "req", ID: id, Method: method, Params: params})
	if err != nil {
		return "", nil, err
	}
	var w chan response
	if wait {
		w = make(chan response, 1)
		c.mu.Lock()
		if c.dead() {
			c.mu.Unlock()
			return "", nil, errConnLost
		}
		c.pending[id] = w
		c.mu.Unlock()
	}
	select {
	case c.out <- b:
		return id, w, nil
	case <-c.done:
		return "", nil, errConnLost
	case <-ctx.Done():
		c.forget(id)
		return "", nil, ctx.Err()
	}
}

func (c *gwConn) forget(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// call sends a request and waits for its response. A lost connection gives errConnLost.
func (c *gwConn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	id, w, err := c.send(ctx, method, params, true)
	if err != nil {
		return nil, err
	}
	select {
	case r, ok := <-w:
		if !ok {
			return nil, errConnLost
		}
		if r.err != nil {
			return nil, r.err
		}
		return r.payload, nil
	case <-ctx.Done():
		c.forget(id)
		return nil, ctx.Err()
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
