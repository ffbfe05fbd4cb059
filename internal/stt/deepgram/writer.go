package deepgram

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/voice"
)

// writer is the state of a stream's writer goroutine: the socket, the replay buffer and
// the hand-over of the utterance state to each socket's reader.
type writer struct {
	s    *LiveStream
	conn *websocket.Conn
	// live is conn for the stream's cancellation watch (another goroutine): writes pass a
	// context that is never cancelled, so the WebSocket library sets up no watch per
	// message, and the stream's end closes the live socket instead, failing any write.
	live       atomic.Pointer[websocket.Conn]
	stopWatch  func() bool
	base       int64          // stream audio offset of conn's first byte
	readerDone chan readerEnd // buffered 1: why the current reader ended
	readerLive bool
	ut         *utterance // the reader's while it runs, the writer's between sockets
	replay     ring       // audio sent, kept (about ReplayAudio) until a final covers it
	chunk      []byte     // one binary frame, at most 100 ms
	keepAlive  *time.Timer
	// broken: a send failed. The audio stays queued until the socket is reopened, and the
	// reader is left to read what the server sent before the failure (a final transcript
	// there moves the replay point); brokenGrace closes the socket if it does not end.
	broken      bool
	brokenGrace *time.Timer
	closeSent   bool
	// failures counts reopen attempts since a socket last carried a server message, so a
	// server that accepts and then drops at once is not redialled forever.
	failures int
}

// brokenGraceTime bounds how long a socket that failed a send stays open for its reader.
const brokenGraceTime = time.Second

// sendBatch is how much audio goes to Deepgram in one message. A 20 ms frame a message is
// 50 socket writes a second a call, the largest cost of a call's CPU; three frames a
// message is a third of that. No transcript waits on it: Finalize and Close send what is
// queued at once, and audio never waits longer than sendBatch.
const sendBatch = 60 * time.Millisecond

// watch makes the stream's end close the current socket.
func (w *writer) watch() {
	w.live.Store(w.conn)
	if w.stopWatch == nil {
		w.stopWatch = context.AfterFunc(w.s.ctx, func() {
			if c := w.live.Load(); c != nil {
				_ = c.CloseNow()
			}
		})
	}
}

func (w *writer) startReader() {
	w.readerDone = make(chan readerEnd, 1)
	w.readerLive = true
	go w.s.read(w.conn, w.base, w.ut, w.readerDone)
}

// loop runs until the stream ends and returns the error that ended it (nil when closed).
func (w *writer) loop() error {
	s := w.s
	for {
		select {
		case <-s.ctx.Done():
			return w.ctxEnd()
		case <-s.wake:
			w.pump(false)
		case <-s.flush.C:
			w.pump(true)
		case <-w.keepAlive.C:
			w.control("KeepAlive")
			w.keepAlive.Reset(s.r.opts.KeepAliveEvery)
		case <-w.brokenC():
			_ = w.conn.CloseNow()
		case end := <-w.readerDone:
			w.readerLive = false
			if end.heard {
				w.failures = 0 // that socket worked: a new drop gets fresh attempts
			}
			if done, err := w.readerEnded(end.err); done {
				return err
			}
		}
	}
}

// ctxEnd is the stream's end when its context is done: the caller cancelled, or Close ran
// out of time waiting for the server's flush.
func (w *writer) ctxEnd() error {
	if err := w.s.parent.Err(); err != nil {
		return &voice.ProviderError{Provider: providerName, Op: "stream", Kind: voice.KindOf(err), Err: err}
	}
	w.s.log.Warn("deepgram: close timed out before the server finished", "timeout", w.s.r.opts.CloseTimeout)
	return nil
}

// readerEnded decides what the end of the socket means: the end of the stream, or a drop
// to repair by reopening. done reports whether the stream is over.
func (w *writer) readerEnded(rerr error) (done bool, err error) {
	s := w.s
	if s.ctx.Err() != nil {
		return true, w.ctxEnd()
	}
	if w.closeSent {
		if websocket.CloseStatus(rerr) != websocket.StatusNormalClosure {
			s.log.Warn("deepgram: socket ended uncleanly while closing", "err", rerr)
		}
		w.flushUtterance(true)
		return true, nil
	}
	pe := classifyDrop(rerr)
	if pe.Kind != voice.KindTransient || s.r.opts.Reconnects < 0 {
		return true, pe
	}
	if err := w.reopen(pe); err != nil {
		return true, err
	}
	return false, nil
}

// classifyDrop turns the error that ended a socket we did not close into a ProviderError.
func classifyDrop(err error) *voice.ProviderError {
	pe := &voice.ProviderError{Provider: providerName, Op: "stream", Kind: voice.KindTransient}
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		pe.Err = fmt.Errorf("socket dropped: %w", err)
		return pe
	}
	pe.Err = fmt.Errorf("server closed the socket: %d %q", int(ce.Code), ce.Reason)
	switch ce.Code {
	case websocket.StatusPolicyViolation, websocket.StatusUnsupportedData,
		websocket.StatusInvalidFramePayloadData, websocket.StatusMessageTooBig:
		pe.Kind = voice.KindBadInput // Deepgram refused what we sent: reopening won't help
	}
	return pe
}

// pump sends the queued audio, then a pending Finalize at its place in the audio, then
// CloseStream once Close asked for it and the queue is empty. Unless force, less than a
// batch of audio with nothing else pending waits for more, until the stream's flush timer
// (armed by Write at the batch's first audio) forces it.
func (w *writer) pump(force bool) {
	s := w.s
	s.mu.Lock()
	wait := !force && !s.finPending && !s.closing && s.queue.len() < s.batch
	s.mu.Unlock()
	if wait {
		return
	}
	for !w.broken {
		s.mu.Lock()
		limit := len(w.chunk)
		fin := false
		if s.finPending {
			if rem := s.finAt - s.queue.head; rem <= 0 {
				fin, s.finPending = true, false
			} else {
				limit = int(min(int64(limit), rem))
			}
		}
		n := 0
		if !fin {
			n = s.queue.read(w.chunk[:limit])
			if s.queue.len() == 0 {
				s.flush.Stop() // nothing left to wait for; the next audio arms it again
			}
		}
		closeNow := !fin && n == 0 && s.closing && !w.closeSent
		s.mu.Unlock()
		switch {
		case fin:
			if !w.control("Finalize") {
				s.mu.Lock()
				s.finPending, s.finAt = true, s.queue.head // send it after the replay
				s.mu.Unlock()
			}
		case n > 0:
			w.sendAudio(w.chunk[:n])
		case closeNow:
			w.closeSent = w.control("CloseStream")
			return
		default:
			return
		}
	}
}

// sendAudio keeps p for replay and sends it.
func (w *writer) sendAudio(p []byte) {
	w.replay.write(p) // past ReplayAudio the oldest goes: a drop then replays the newest
	w.replay.discardTo(w.s.commit.Load())
	if err := w.conn.Write(context.Background(), websocket.MessageBinary, p); err != nil {
		w.fail()
		return
	}
	w.keepAlive.Reset(w.s.r.opts.KeepAliveEvery)
}

// control sends a control message such as {"type":"KeepAlive"}; false if it failed.
func (w *writer) control(typ string) bool {
	if w.broken {
		return false
	}
	if err := w.conn.Write(context.Background(), websocket.MessageText, []byte(`{"type":"`+typ+`"}`)); err != nil {
		w.fail()
		return false
	}
	return true
}

// fail marks the socket broken after a failed send. The reader will report the drop.
func (w *writer) fail() {
	if w.broken {
		return
	}
	w.broken = true
	if w.brokenGrace == nil {
		w.brokenGrace = time.NewTimer(brokenGraceTime)
	} else {
		w.brokenGrace.Reset(brokenGraceTime)
	}
}

// brokenC fires when a broken socket's grace is over; nil (never) while it is healthy.
func (w *writer) brokenC() <-chan time.Time {
	if !w.broken || w.brokenGrace == nil {
		return nil
	}
	return w.brokenGrace.C
}

// reopen dials a new socket after a drop and replays the audio no final transcript has
// covered yet, so the utterance in progress is heard again from its start.
func (w *writer) reopen(cause *voice.ProviderError) error {
	s, opts := w.s, w.s.r.opts
	s.log.Info("deepgram: socket dropped, reopening", "err", cause.Err)
	backoff := opts.ReconnectBackoff << min(w.failures, 10)
	last := cause
	for w.failures < opts.Reconnects {
		w.failures++
		t := time.NewTimer(backoff)
		select {
		case <-s.ctx.Done():
			t.Stop()
			return w.ctxEnd()
		case <-t.C:
		}
		backoff *= 2
		conn, err := s.r.dial(s.ctx, s.url, "reopen stream")
		if err != nil {
			if s.ctx.Err() != nil {
				return w.ctxEnd()
			}
			if !errors.As(err, &last) || !last.Retryable() {
				return err // refused (a revoked key, say): trying again won't help
			}
			continue
		}
		from := min(max(s.commit.Load(), w.replay.head), w.replay.tail())
		w.replay.discardTo(from)
		_ = w.conn.CloseNow() // the old socket, if it is still open
		w.conn, w.base = conn, from
		w.watch()
		w.setHealthy()
		w.ut.reset()
		if !w.replayFrom(from) {
			last = &voice.ProviderError{Provider: providerName, Op: "reopen stream", Kind: voice.KindTransient,
				Err: errors.New("socket failed during replay")}
			continue
		}
		w.startReader()
		w.keepAlive.Reset(opts.KeepAliveEvery)
		s.reconnects.Add(1)
		s.log.Info("deepgram: stream reopened", "attempt", w.failures, "replayed", s.f.Duration(int(w.replay.tail()-from)))
		w.pump(true) // audio queued while the socket was down
		return nil
	}
	return &voice.ProviderError{Provider: providerName, Op: "reopen stream", Kind: last.Kind, Status: last.Status,
		Err: fmt.Errorf("gave up after %d attempts: %w", w.failures, last.Err)}
}

func (w *writer) setHealthy() {
	w.broken = false
	if w.brokenGrace != nil {
		w.brokenGrace.Stop()
	}
}

// replayFrom sends the kept audio from offset from on the new socket.
func (w *writer) replayFrom(from int64) bool {
	for off := from; off < w.replay.tail(); {
		n := w.replay.copyFrom(off, w.chunk)
		if err := w.conn.Write(context.Background(), websocket.MessageBinary, w.chunk[:n]); err != nil {
			w.fail()
			return false
		}
		off += int64(n)
	}
	return true
}

// flushUtterance delivers the words of an unfinished utterance as a final, when the stream
// ends. wait says whether it may wait for room in Results (bounded by the stream's context).
func (w *writer) flushUtterance(wait bool) {
	text := w.ut.text()
	w.ut.reset()
	if text == "" {
		return
	}
	t := voice.Transcript{Text: text, Final: true}
	if wait {
		w.s.deliver(t)
		return
	}
	select {
	case w.s.results <- t:
	default:
		w.s.log.Warn("deepgram: final transcript lost at teardown: results full")
	}
}
