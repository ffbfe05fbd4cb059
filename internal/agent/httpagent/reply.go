package httpagent

import (
	"io"
	"sync"
	"sync/atomic"

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

// Interrupted reports whether the exchange was cut off (silence, the caller's context or
// Close) rather than ended by the runtime: a failed read is then classified by Aborted.
func (r *Reply) Interrupted() bool { return r.w.ctx.Err() != nil || r.closed.Load() }

// Silent reports whether the watchdog cut the exchange off.
func (r *Reply) Silent() bool { return r.w.Silent() }

// Aborted classifies a read that failed because the exchange was cut off (see Aborted).
func (r *Reply) Aborted(o Origin, err error, during string) *voice.ProviderError {
	return Aborted(o, r.w, r.closed.Load(), err, during)
}
