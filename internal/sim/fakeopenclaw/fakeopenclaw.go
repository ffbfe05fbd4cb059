// Package fakeopenclaw is a fake OpenClaw gateway for tests and simulation: an
// http.Handler that upgrades to WebSocket and speaks the gateway protocol v4 as observed
// on the real gateway (openclaw 2026.9.6): connect.challenge,
// connect with a token check, hello-ok, agents.list, chat.send and agent (streaming "chat"
// events broadcast to every connected client), chat.abort.
//
// A completed run reports its usage as the real gateway does over the WebSocket: an "agent"
// event {"stream":"usage","data":{"outputTokens":N}} before the final (output tokens only;
// the fake counts a token a word of the reply). An "agent" request is answered twice, as
// there: on acceptance, and with the run's outcome when it is over.
//
// Sessions behave as the real gateway's do where that decides what becomes of a caller's
// words when a run is replaced (session.go): one run at a time per session; a message
// sent while a run is going waits for that run to end, however it ends, then runs (an
// "agent" request under its own id; a chat.send gets an empty final at once and its run
// an id the gateway makes), unless queueMode "interrupt" aborts the running run first. An
// aborted run leaves nothing in the session's transcript, and its words open the next
// run's prompt (FoldedPrefix); a message aborted while it waits never reaches the model.
// Prompts and Transcript show what reached the model and what the session kept.
//
// Magic words in the last line of a turn's message (whole words, shared with the fake LLM;
// never those of earlier lines, which may quote earlier turns, nor those folded into its
// prompt) script it:
//
//	SLOW         Options.SlowEvery between deltas
//	FAIL400      an error event for an HTTP 400 from the model
//	FAIL500      an error event for an HTTP 500 (after the gateway's own retries)
//	TOOLCALL     a silent run for Options.ToolCallFor before replying (an agent "item"
//	             tool event at its start and end, no chat text)
//	TOOLLOOP     a run that never replies: a new tool starts (an agent "item" event)
//	             every Options.ToolEvery until the run is aborted, so it is never silent
//	DOUBLEERROR  two error events for the one run, as the real gateway sends
//	DROP         the turn is acknowledged, then the socket closed before any delta and the
//	             run lost (once per idempotency key: a re-send runs normally)
//	DROPSEND     the socket is closed on receipt of the turn, unanswered (once per key)
//	DROPLATE     the socket is closed after the first delta (once per key)
//
// Options.Starting makes it answer connects as a gateway that is still starting. An
// "agent" request for "/reset" is refused for want of operator.admin, as there.
package fakeopenclaw

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Defaults.
const (
	DefaultSlowEvery   = 20 * time.Millisecond
	DefaultToolCallFor = 60 * time.Second
	DefaultTickEvery   = 30 * time.Second
	DefaultToolEvery   = time.Second
)

// Agent is one agent the fake reports.
type Agent struct{ ID, Name string }

// Options configures the fake.
type Options struct {
	Token       string        // the shared token connect must present
	Agents      []Agent       // default: one agent "main"
	SlowEvery   time.Duration // default DefaultSlowEvery
	ToolCallFor time.Duration // default DefaultToolCallFor
	TickEvery   time.Duration // tick events; default DefaultTickEvery
	ToolEvery   time.Duration // between the tools of a TOOLLOOP run; default DefaultToolEvery
	// Starting, when set and true, refuses each connect as the real gateway does while its
	// sidecars load: UNAVAILABLE, retryable, retryAfterMs StartingRetryAfter, reason
	// "startup-sidecars", then a close with 1013. StartingCloseOnly leaves out the answer.
	Starting           func() bool
	StartingRetryAfter time.Duration // default 500ms, the real gateway's hint
	StartingCloseOnly  bool
	// AbortAnswerDelay is how long chat.abort takes to act: the run goes on meanwhile, and
	// a message sent to its session waits for it; then it is aborted and the abort answered.
	AbortAnswerDelay time.Duration
	// AbortUnanswered stops the run on chat.abort but never answers it.
	AbortUnanswered bool
}

// Send is one recorded chat.send or agent request.
type Send struct {
	Method, SessionKey, AgentID, Message, IdempotencyKey, ExtraSystemPrompt, QueueMode string
	// QueuedBehind is the run the session had going when the message came, which the
	// message's own run waited for; empty when it found the session idle.
	QueuedBehind string
}

// Abort is one recorded chat.abort.
type Abort struct{ SessionKey, RunID string }

// Server is the fake gateway.
type Server struct {
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	closed      bool
	conns       map[*conn]bool
	runs        map[string]*liveRun // runs in progress by runId
	sessions    map[string]*session // by canonical session key
	dropped     map[string]bool     // idempotency keys already dropped
	sends       []Send
	prompts     []Prompt
	aborts      []Abort
	frames      []string // every inbound frame, raw
	connections int      // successful connects
	refusals    int      // connects refused because the gateway was starting
	changed     chan struct{}
}

// New returns a fake gateway.
func New(opts Options) *Server {
	if len(opts.Agents) == 0 {
		opts.Agents = []Agent{{ID: "main", Name: "Main"}}
	}
	if opts.SlowEvery <= 0 {
		opts.SlowEvery = DefaultSlowEvery
	}
	if opts.ToolCallFor <= 0 {
		opts.ToolCallFor = DefaultToolCallFor
	}
	if opts.TickEvery <= 0 {
		opts.TickEvery = DefaultTickEvery
	}
	if opts.ToolEvery <= 0 {
		opts.ToolEvery = DefaultToolEvery
	}
	if opts.StartingRetryAfter <= 0 {
		opts.StartingRetryAfter = 500 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{opts: opts, ctx: ctx, cancel: cancel, conns: map[*conn]bool{},
		runs: map[string]*liveRun{}, sessions: map[string]*session{}, dropped: map[string]bool{}, changed: make(chan struct{})}
}

// Close ends every run and connection and waits for them.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// Sends returns the recorded turns.
func (s *Server) Sends() []Send { s.mu.Lock(); defer s.mu.Unlock(); return slices.Clone(s.sends) }

// Aborts returns the recorded chat.abort requests.
func (s *Server) Aborts() []Abort { s.mu.Lock(); defer s.mu.Unlock(); return slices.Clone(s.aborts) }

// Frames returns every frame clients sent, as received.
func (s *Server) Frames() []string { s.mu.Lock(); defer s.mu.Unlock(); return slices.Clone(s.frames) }

// Connections counts successful connects.
func (s *Server) Connections() int { s.mu.Lock(); defer s.mu.Unlock(); return s.connections }

// StartingRefusals counts connects refused because Options.Starting said the gateway was starting.
func (s *Server) StartingRefusals() int { s.mu.Lock(); defer s.mu.Unlock(); return s.refusals }

// WaitFor blocks until cond, checked after every record, holds or ctx ends.
func (s *Server) WaitFor(ctx context.Context, cond func(*Server) bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond(s) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// record runs f under the lock and wakes WaitFor.
func (s *Server) record(f func()) {
	s.mu.Lock()
	f()
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// conn is one client connection.
type conn struct {
	ws     *websocket.Conn
	out    chan []byte // size 256; a client too slow to drain it is disconnected
	cancel context.CancelFunc
	seq    int64 // outer event seq, owned by the goroutine holding Server.mu
}

// ServeHTTP upgrades to WebSocket and serves one client until it goes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close(websocket.StatusServiceRestart, "gateway stopping")
		return
	}
	s.wg.Add(1) // under mu, so never after Close began waiting
	s.mu.Unlock()
	defer s.wg.Done()
	ws.SetReadLimit(1 << 20)
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	c := &conn{ws: ws, out: make(chan []byte, 256), cancel: cancel}
	defer ws.CloseNow()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()

	if !s.handshake(ctx, c) {
		return
	}
	s.wg.Add(1)
	go s.writer(ctx, c)
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		s.record(func() { s.frames = append(s.frames, string(data)) })
		var req struct {
			Type   string          `json:"type"`
			ID     string          `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(data, &req) != nil || req.Type != "req" || req.ID == "" {
			continue // the real gateway would close; the fake just ignores it
		}
		s.handle(c, req.ID, req.Method, req.Params)
	}
}

func (s *Server) writer(ctx context.Context, c *conn) {
	defer s.wg.Done()
	tick := time.NewTicker(s.opts.TickEvery)
	defer tick.Stop()
	for {
		select {
		case b := <-c.out:
			if b == nil { // dropAfterQueued: everything before it is written
				c.cancel()
				return
			}
			if c.ws.Write(ctx, websocket.MessageText, b) != nil {
				c.cancel()
				return
			}
		case <-tick.C:
			s.mu.Lock()
			s.enqueue(c, event("tick", map[string]any{"ts": time.Now().UnixMilli()}, c))
			s.mu.Unlock()
		case <-ctx.Done():
			return
		}
	}
}

// enqueue queues b for c; the caller holds s.mu.
func (s *Server) enqueue(c *conn, b []byte) {
	select {
	case c.out <- b:
	default:
		c.cancel()
	}
}

// dropAfterQueued closes c once the frames already queued for it are written.
func (s *Server) dropAfterQueued(c *conn) {
	s.mu.Lock()
	s.enqueue(c, nil)
	s.mu.Unlock()
}

// reply sends a response on c.
func (s *Server) reply(c *conn, id string, payload any, gerr map[string]any) {
	f := map[string]any{"type": "res", "id": id, "ok": gerr == nil}
	if gerr != nil {
		f["error"] = gerr
	} else {
		f["payload"] = payload
	}
	b, _ := json.Marshal(f)
	s.mu.Lock()
	s.enqueue(c, b)
	s.mu.Unlock()
}

// broadcast sends an event to every connected client, as the gateway does.
func (s *Server) broadcast(name string, payload any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		s.enqueue(c, event(name, payload, c))
	}
}

// event encodes an event with c's next outer seq; the caller holds s.mu.
func event(name string, payload any, c *conn) []byte {
	c.seq++
	b, _ := json.Marshal(map[string]any{"type": "event", "event": name, "payload": payload, "seq": c.seq})
	return b
}

func gwError(code, msg, detail string) map[string]any {
	e := map[string]any{"code": code, "message": msg}
	if detail != "" {
		e["details"] = map[string]any{"code": detail}
	}
	return e
}
