package httpagent

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/handset-voice/handset/internal/voice"
)

// Reply is the response body of one turn under its Watch. Close may come from any
// goroutine while another reads: it aborts the request, which is how an HTTP runtime
// learns to stop. However the reply ends, the connection is released once.
type Reply struct {
	w       *Watch
	body    io.ReadCloser
	closed  atomic.Bool
	release sync.Once
}

// NewReply holds body, the 2xx answer of a request sent under w.
func NewReply(w *Watch, body io.ReadCloser) *Reply { return &Reply{w: w, body: body} }

// Body reads the answer, restarting the silence clock whenever bytes arrive.
func (r *Reply) Body() io.Reader { return r.w.Reader(r.body) }

// Close aborts the request if it is still running and releases the connection. Idempotent.
func (r *Reply) Close() error {
	r.closed.Store(true)
	r.End()
	return nil
}

// Closed reports whether Close was called.
func (r *Reply) Closed() bool { return r.closed.Load() }

// End releases the request, its watchdog and the connection, once.
func (r *Reply) End() {
	r.release.Do(func() {
		r.w.Stop(ErrClosed)
		_ = r.body.Close()
	})
}

// Finish releases the request like End, for a reply the runtime ended properly (its
// stream's last event came): see Finish.
func (r *Reply) Finish() {
	r.release.Do(func() { Finish(r.w, r.body) })
}

// The most Finish reads of what follows a stream's last event, and for how long.
const (
	finishMax  = 64 << 10
	finishWait = 500 * time.Millisecond
)

// Finish releases an exchange whose answer the runtime ended properly. A stream's last
// event ([DONE], run.completed) comes before the end of the HTTP body (a chunked body's
// last chunk, a closing comment); a body closed before its end closes its connection,
// and the next turn dials the runtime again (over https, a handshake each). So what is
// left is read first, up to finishMax bytes and for at most finishWait, and the
// connection goes back to the pool. It returns at once: the reading has a goroutine of
// its own.
func Finish(w *Watch, body io.ReadCloser) {
	if body == nil {
		w.Stop(ErrClosed)
		return
	}
	go func() {
		cut := time.AfterFunc(finishWait, func() { _ = body.Close() })
		_, _ = io.CopyN(io.Discard, body, finishMax)
		cut.Stop()
		_ = body.Close()
		w.Stop(ErrClosed)
	}()
}

// Interrupted reports whether the exchange was cut off (silence, the caller's context or
// Close) rather than ended by the runtime: a failed read is then classified by Aborted.
func (r *Reply) Interrupted() bool { return r.w.ctx.Err() != nil || r.closed.Load() }

// Silent reports whether the watchdog cut the exchange off.
func (r *Reply) Silent() bool { return r.w.Silent() }

// Aborted classifies a read that failed because the exchange was cut off (see Aborted).
func (r *Reply) Aborted(o Origin, err error, during string) *voice.ProviderError {
	return Aborted(o, r.w, r.closed.Load(), err, during)
}
