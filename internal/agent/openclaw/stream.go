package openclaw

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// Reply starts one turn: an "agent" run on the call's session with the turn's catch-up
// message (the caller's latest words after a note of what the session missed on the
// line), and a fresh idempotency key that is also the run id the reply's events carry.
// When the run this turn replaces is still being aborted, the turn first waits for the
// gateway's answer to the abort (see abort.go).
func (a *Agent) Reply(ctx context.Context, req voice.TurnRequest) (voice.ReplyStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, a.classify("chat", err)
	}
	if n := len(req.History); n == 0 || req.History[n-1].Role != voice.RoleUser || strings.TrimSpace(req.History[n-1].Content) == "" {
		return nil, a.fail("chat", voice.KindBadInput, errors.New("no caller message in the turn"))
	}
	msg := req.Catchup()
	sc, ok := session.From(ctx)
	if !ok {
		sc = session.Context{CallID: req.CallID, CallerHash: req.CallerHash}
	}
	key := newIdempotencyKey()
	if sc.CallID == "" {
		sc.CallID = voice.CallID(key) // no call id: at least never share a session
	}
	r := &run{a: a, ctx: ctx, id: key, sessionKey: a.sessionKey(sc), notify: make(chan struct{}, 1), closed: make(chan struct{}),
		timer: time.NewTimer(a.timeout)}
	r.params = a.turnParams(r.sessionKey, msg, key, session.Instructions(ctx, a.voicePrompt))
	if err := a.abortSettled(ctx, r.sessionKey); err != nil {
		return nil, a.classify("chat", err)
	}

	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, a.fail("chat", voice.KindCanceled, errClosed)
	}
	a.runs[key] = r // before sending: events may beat the ack
	a.mu.Unlock()

	if err := r.start(); err != nil {
		if ctx.Err() != nil {
			r.abort() // the gateway may have accepted the turn before we gave up
		}
		r.timer.Stop()
		r.unregister()
		return nil, err
	}
	r.stopWatch = context.AfterFunc(ctx, r.abort)
	a.log.Debug("openclaw: turn started", "call", string(sc.CallID), "turn", req.Turn, "run", key)
	return r, nil
}

// turnParams builds the "agent" request for one turn. extra is the voice prompt and
// Handset's note about the caller, which only this method can carry (chat.send has no
// extraSystemPrompt). Commands are not a concern: the caller's words reach here escaped
// (voice.EscapeCommand), and the catch-up note never starts with a slash.
func (a *Agent) turnParams(sessionKey, msg, key, extra string) map[string]any {
	p := map[string]any{"sessionKey": sessionKey, "message": msg, "idempotencyKey": key}
	if a.agentID != "" {
		p["agentId"] = a.agentID
	}
	if extra != "" {
		p["extraSystemPrompt"] = extra
	}
	return p
}

// run is one turn: its events, routed here by the reader, and the stream state, which
// only the goroutine calling Next touches.
type run struct {
	a                  *Agent
	ctx                context.Context
	id, sessionKey     string
	params             map[string]any
	stopWatch          func() bool
	terminal, aborting atomic.Bool
	abortOnce          sync.Once

	mu     sync.Mutex
	queue  []chatEvent   // events not yet read: bounded by the run's own reply
	notify chan struct{} // size 1: "the queue grew"; a full one already says so
	conn   *gwConn       // the connection the turn was sent on

	// Next's state.
	acc, spoken string // the reply so far as the gateway reports it; what we yielded
	yielded     bool
	resent      bool
	err         error
	timer       *time.Timer
	closeOnce   sync.Once
	closed      chan struct{} // closed by Close: a Next waiting, or one after, returns
}

// start sends the turn. A connection lost on the way is reopened once and the turn re-sent
// with the same idempotency key, which the gateway deduplicates.
func (r *run) start() error {
	for {
		c, err := r.a.conn(r.ctx)
		if err != nil {
			return r.a.classify("chat", err)
		}
		r.mu.Lock()
		r.conn = c
		r.mu.Unlock()
		_, err = c.call(r.ctx, "agent", r.params)
		if errors.Is(err, errConnLost) && !r.resent {
			r.resent = true
			r.a.log.Info("openclaw: connection lost while starting a turn; re-sending", "run", r.id)
			continue
		}
		if err != nil {
			return r.a.classify("chat", err)
		}
		return nil
	}
}

func (r *run) push(ev chatEvent) {
	r.mu.Lock()
	r.queue = append(r.queue, ev)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

func (r *run) pop() (chatEvent, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		return chatEvent{}, false
	}
	ev := r.queue[0]
	r.queue = r.queue[1:]
	return ev, true
}

// Next returns the next piece of the reply.
func (r *run) Next() (voice.ReplyChunk, error) {
	if r.err != nil {
		return voice.ReplyChunk{}, r.err
	}
	for {
		if ev, ok := r.pop(); ok {
			r.timer.Reset(r.a.timeout)
			switch ev.State {
			case "progress":
				return voice.ReplyChunk{Progress: ev.Progress}, nil
			case "usage":
				return voice.ReplyChunk{Usage: ev.Usage}, nil
			}
			if text := r.handle(ev); text != "" {
				return voice.ReplyChunk{Text: text}, nil
			}
			if r.err != nil {
				return voice.ReplyChunk{}, r.err
			}
			continue
		}
		r.mu.Lock()
		c := r.conn
		r.mu.Unlock()
		select {
		case <-r.notify:
		case <-r.closed:
			return r.end(r.a.fail("chat", voice.KindCanceled, errors.New("the reply was closed")))
		case <-r.ctx.Done():
			r.abort()
			return r.end(r.a.fail("chat", voice.KindCanceled, r.ctx.Err()))
		case <-r.timer.C:
			r.abort()
			return r.end(r.a.fail("chat", voice.KindTimeout, errors.New("the gateway stayed silent past the turn timeout")))
		case <-c.done:
			if err := r.dropped(c); err != nil {
				return r.end(err)
			}
		}
	}
}

// handle applies one event and returns the text to yield. A terminal event sets r.err
// (io.EOF after a final); the first terminal event wins, since Next reads no more.
func (r *run) handle(ev chatEvent) string {
	switch ev.State {
	case "delta":
		// v4 sends deltaText (incremental) and message (the cumulative snapshot); replace
		// means deltaText replaces the text so far. The snapshot wins when present,
		// so a gateway that sends cumulative deltas is read correctly too.
		if snap, ok := messageText(ev.Message); ok {
			r.acc = snap
		} else if ev.DeltaText != nil {
			if ev.Replace {
				r.acc = *ev.DeltaText
			} else {
				r.acc += *ev.DeltaText
			}
		}
		return r.fresh()
	case "final":
		if snap, ok := messageText(ev.Message); ok {
			r.acc = snap
		}
		text := r.fresh()
		r.end(io.EOF)
		return text
	case "error":
		pe := ev.runError()
		r.a.log.Info("openclaw: run failed", "run", r.id, "err", pe)
		r.end(pe)
	case "aborted":
		if r.aborting.Load() {
			r.end(r.a.fail("chat", voice.KindCanceled, errors.New("run aborted")))
		} else {
			r.end(r.a.fail("chat", voice.KindUnknown, errors.New("run aborted by the gateway")))
		}
	}
	return ""
}

// fresh returns the part of the reply not yet yielded. A correction that rewrites text
// already spoken cannot be unsaid: it is skipped and the stream goes on from there.
func (r *run) fresh() string {
	if !strings.HasPrefix(r.acc, r.spoken) {
		r.a.log.Debug("openclaw: reply rewrote text already spoken", "run", r.id)
		r.spoken = r.acc
		return ""
	}
	text := r.acc[len(r.spoken):]
	r.spoken = r.acc
	if text != "" {
		r.yielded = true
	}
	return text
}

// dropped handles the loss of connection c mid-turn: reconnect once and re-send the turn
// with the same idempotency key if nothing was yielded yet; otherwise the turn fails, since
// the caller has heard part of a reply that cannot be resumed.
func (r *run) dropped(c *gwConn) error {
	if r.queued() { // events read before the drop come first
		return nil
	}
	r.a.mu.Lock()
	closed := r.a.closed
	r.a.mu.Unlock()
	if closed {
		return r.a.fail("chat", voice.KindCanceled, errClosed)
	}
	if r.yielded || r.resent {
		return r.a.fail("chat", voice.KindTransient, c.err)
	}
	r.resent = true
	r.a.log.Info("openclaw: connection lost mid-turn; re-sending", "run", r.id)
	if err := r.start(); err != nil {
		return err
	}
	return nil
}

func (r *run) queued() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue) > 0
}

// end records the stream's result and stops routing events to it.
func (r *run) end(err error) (voice.ReplyChunk, error) {
	if r.err == nil {
		r.err = err
		r.terminal.Store(true)
		r.unregister()
	}
	return voice.ReplyChunk{}, r.err
}

func (r *run) unregister() {
	r.a.mu.Lock()
	if r.a.runs[r.id] == r {
		delete(r.a.runs, r.id)
	}
	r.a.mu.Unlock()
}

// abort asks the gateway to stop the run (chat.abort) and notes the abort as pending on
// the session until the gateway answers it (abortSettled). It does not wait for the answer:
// the aborted event, if anyone still reads, ends the stream. Of concurrent callers (the
// context's watch, Next, Close) the first sends the abort and the others wait until it is
// noted, so none returns while a turn started next could still miss it.
func (r *run) abort() {
	if r.terminal.Load() {
		return
	}
	r.abortOnce.Do(r.sendAbort)
}

func (r *run) sendAbort() {
	r.aborting.Store(true)
	r.mu.Lock()
	c := r.conn
	r.mu.Unlock()
	if c == nil || c.dead() {
		return
	}
	settled := r.a.abortPending(r.sessionKey)
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	p := map[string]any{"sessionKey": r.sessionKey, "runId": r.id}
	if r.a.agentID != "" {
		p["agentId"] = r.a.agentID
	}
	id, answer, err := c.send(ctx, "chat.abort", p, true)
	if err != nil {
		cancel()
		settled()
		r.a.log.Debug("openclaw: chat.abort not sent", "run", r.id, "err", err)
		return
	}
	go func() {
		defer cancel()
		defer settled()
		select {
		case <-answer:
		case <-c.done:
		case <-ctx.Done():
			c.forget(id)
			r.a.log.Info("openclaw: the gateway did not answer chat.abort", "run", r.id, "waited", abortTimeout)
		}
	}()
}

// Close releases the stream; a run still going is aborted. Idempotent.
func (r *run) Close() error {
	r.closeOnce.Do(func() {
		if r.stopWatch != nil {
			r.stopWatch()
		}
		r.abort()
		r.terminal.Store(true)
		r.unregister()
		r.timer.Stop()
		close(r.closed)
	})
	return nil
}

func unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
