package store

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// LineWriter appends calls' transcript lines to a store off the calls' own goroutines: Add
// never blocks (a call's owner loop calls it), and one writer goroutine saves what has come
// in, a batch at a time (lines of many calls in one transaction), in order. One serves a
// whole server.
type LineWriter struct {
	st      Store
	log     *slog.Logger
	in      chan lineOrFlush
	done    chan struct{}
	dropped atomic.Int64

	mu     sync.RWMutex // held to send on in; Close takes it whole
	closed bool
}

type lineOrFlush struct {
	line  TranscriptLine
	flush chan struct{} // non-nil: closed once every earlier line is saved
}

// lineQueue holds unsaved lines (a few per turn of every call); a store that stalls this
// far behind loses the newest lines (counted and logged), never a call.
const lineQueue = 4096

// maxBatch bounds the lines saved in one transaction (and taken off the queue at once).
const maxBatch = 500

// lineLinger is how long the writer waits for more lines before saving a batch nobody
// flushes: a line is readable this much later, and a busy server commits a few times a
// second instead of once a line.
const lineLinger = 200 * time.Millisecond

// saveTimeout bounds one batch write, so a dead database cannot hold a call's end.
const saveTimeout = 10 * time.Second

// NewLineWriter starts a writer for lines into st.
func NewLineWriter(st Store, log *slog.Logger) *LineWriter {
	w := &LineWriter{st: st, log: log, in: make(chan lineOrFlush, lineQueue), done: make(chan struct{})}
	go w.run()
	return w
}

// Add queues l; when the queue is full the line is dropped and counted. After Close it
// does nothing.
func (w *LineWriter) Add(l TranscriptLine) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return
	}
	select {
	case w.in <- lineOrFlush{line: l}:
	default:
		if w.dropped.Add(1) == 1 {
			w.log.Warn("transcript lines dropped: the store is not keeping up", "call", l.CallID)
		}
	}
}

// Flush waits until every line added before it is saved, or ctx ends. After Close
// everything is saved already.
func (w *LineWriter) Flush(ctx context.Context) error {
	done := make(chan struct{})
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		<-w.done
		return nil
	}
	select {
	case w.in <- lineOrFlush{flush: done}:
		w.mu.RUnlock()
	case <-ctx.Done():
		w.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close saves what is queued and stops the writer. It may be called more than once.
func (w *LineWriter) Close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.in)
	}
	w.mu.Unlock()
	<-w.done
}

// Dropped is how many lines were lost to a full queue.
func (w *LineWriter) Dropped() int64 { return w.dropped.Load() }

func (w *LineWriter) run() {
	defer close(w.done)
	var batch []TranscriptLine
	var flushes []chan struct{}
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for item := range w.in {
		batch, flushes = add(batch, flushes, item)
		// Gather more before saving: what is already waiting, then, unless someone waits
		// on a flush, what comes within lineLinger. A transaction costs the same for one
		// line as for fifty, and lines come a few at a time from every call.
		linger.Reset(lineLinger)
		for len(batch) < maxBatch {
			next, ok := w.next(linger.C, len(flushes) == 0)
			if !ok {
				break
			}
			batch, flushes = add(batch, flushes, next)
		}
		linger.Stop()
		w.save(batch)
		for _, f := range flushes {
			close(f)
		}
		batch, flushes = batch[:0], flushes[:0]
	}
}

// next takes the next item already queued; with wait, it waits for one until linger
// fires. ok is false when none came (or the queue is closed).
func (w *LineWriter) next(linger <-chan time.Time, wait bool) (item lineOrFlush, ok bool) {
	select {
	case item, ok = <-w.in:
		return item, ok
	default:
	}
	if !wait {
		return item, false
	}
	select {
	case item, ok = <-w.in:
		return item, ok
	case <-linger:
		return item, false
	}
}

func add(batch []TranscriptLine, flushes []chan struct{}, item lineOrFlush) ([]TranscriptLine, []chan struct{}) {
	if item.flush != nil {
		return batch, append(flushes, item.flush)
	}
	return append(batch, item.line), flushes
}

func (w *LineWriter) save(batch []TranscriptLine) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	if err := w.st.AppendTranscript(ctx, batch); err != nil {
		w.log.Warn("transcript lines not saved", "call", batch[0].CallID, "lines", len(batch), "err", err)
	}
}
