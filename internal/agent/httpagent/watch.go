package httpagent

import (
	"context"
	"io"
	"sync/atomic"
	"time"
)

// Watch is the request context of one exchange with a runtime, cancelled with ErrSilent
// once the runtime has sent nothing for the timeout. Only silence is timed, never a whole
// turn: an agent that runs tools for minutes while sending keepalives is not cut off.
type Watch struct {
	parent  context.Context // the turn's context as the caller gave it
	ctx     context.Context // parent plus our own cancel causes
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	timeout time.Duration
	stopped atomic.Bool
}

// NewWatch starts watching for silence under parent.
func NewWatch(parent context.Context, timeout time.Duration) *Watch {
	ctx, cancel := context.WithCancelCause(parent)
	w := &Watch{parent: parent, ctx: ctx, cancel: cancel, timeout: timeout}
	w.timer = time.AfterFunc(timeout, func() { cancel(ErrSilent) })
	return w
}

// Context is the context to send requests under.
func (w *Watch) Context() context.Context { return w.ctx }

// Parent is the turn's context the Watch was made under.
func (w *Watch) Parent() context.Context { return w.parent }

// Timeout is the silence allowed.
func (w *Watch) Timeout() time.Duration { return w.timeout }

// Touch restarts the silence clock: the runtime just sent something. After Stop it does
// nothing.
func (w *Watch) Touch() {
	if !w.stopped.Load() {
		w.timer.Reset(w.timeout)
	}
}

// Stop ends the exchange: the watchdog stops and the context is cancelled with cause
// (ErrClosed when the exchange is simply over). Only the first cause counts.
func (w *Watch) Stop(cause error) {
	w.stopped.Store(true)
	w.timer.Stop()
	w.cancel(cause)
}

// Silent reports whether the watchdog cancelled the exchange.
func (w *Watch) Silent() bool { return context.Cause(w.ctx) == ErrSilent }

// Reader returns r that restarts the silence clock whenever a read returns bytes.
func (w *Watch) Reader(r io.Reader) io.Reader { return touchReader{r: r, touch: w.Touch} }

type touchReader struct {
	r     io.Reader
	touch func()
}

func (t touchReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.touch()
	}
	return n, err
}
