package deepgram

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/voice"
)

// resultsBuffer is the size of Results(). When it is full, interim transcripts are dropped
// and counted (the next interim or the final supersedes them); a final waits for room,
// holding back the socket reader, so no final is ever dropped while the stream lives.
const resultsBuffer = 64

// ErrClosed is returned by Write and Finalize after Close.
var ErrClosed = errors.New("deepgram: stream closed")

// Stats counts what a stream lost or repaired.
type Stats struct {
	DroppedAudio    int64 // bytes dropped because the send queue was full
	Reconnects      int   // sockets reopened after a drop
	Malformed       int   // server messages that could not be read
	DroppedInterims int   // interim transcripts dropped because Results was full
}

// LiveStream is one call's Deepgram session, the voice.RecognizerStream that Stream returns.
//
// It runs two goroutines: a writer that owns the socket (sends audio and control
// messages, and reopens the socket after a drop) and a reader that parses results.
type LiveStream struct {
	r      *Recognizer
	log    *slog.Logger
	f      audio.Format
	url    string
	parent context.Context // the caller's: its end is a cancellation
	ctx    context.Context // ours: cancelled to tear everything down
	cancel context.CancelFunc

	results   chan voice.Transcript // see resultsBuffer for the policy when full
	wake      chan struct{}         // size 1: "look at the queue"; a pending wake already says so
	done      chan struct{}         // closed when both goroutines have ended
	closeOnce sync.Once

	batch int // bytes of audio sent as one message (sendBatch)

	mu    sync.Mutex
	queue ring // audio Write queued for the writer: about QueueAudio, drops oldest
	// flush fires sendBatch after a batch's first audio was queued, so a batch that never
	// fills is sent anyway; Write arms it and the writer stops it on emptying the queue,
	// both under mu.
	flush      *time.Timer
	finPending bool  // Finalize was called ...
	finAt      int64 // ... after the audio up to this queue offset
	closing    bool
	ended      bool
	err        error // the error that ended the stream, set with ended
	dropped    int64

	commit          atomic.Int64 // audio offset up to which every word is in a delivered final
	reconnects      atomic.Int64
	malformed       atomic.Int64
	droppedInterims atomic.Int64
}

var _ voice.RecognizerStream = (*LiveStream)(nil)

func startStream(ctx context.Context, r *Recognizer, f audio.Format, u string, callID voice.CallID, conn *websocket.Conn) *LiveStream {
	sctx, cancel := context.WithCancel(ctx)
	log := r.log
	if callID != "" {
		log = log.With("call", string(callID))
	}
	s := &LiveStream{
		r: r, log: log, f: f, url: u,
		parent: ctx, ctx: sctx, cancel: cancel,
		results: make(chan voice.Transcript, resultsBuffer),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		queue:   newRing(max(f.Bytes(r.opts.QueueAudio), f.FrameBytes())),
		batch:   max(f.Bytes(sendBatch), f.FrameBytes()),
		flush:   time.NewTimer(time.Hour),
	}
	s.flush.Stop()
	w := &writer{
		s:         s,
		conn:      conn,
		ut:        &utterance{},
		replay:    newRing(max(f.Bytes(r.opts.ReplayAudio), f.FrameBytes())),
		chunk:     make([]byte, max(f.Bytes(100*time.Millisecond), f.Encoding.BytesPerSample())),
		keepAlive: time.NewTimer(r.opts.KeepAliveEvery),
	}
	s.log.Debug("deepgram: stream opened", "format", f.String())
	go s.run(w)
	return s
}

// Write queues audio for sending. It never blocks: when the queue is full the oldest audio
// is dropped and counted (Stats.DroppedAudio).
func (s *LiveStream) Write(p []byte) error {
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	was := s.queue.len()
	d := s.queue.write(p)
	s.dropped += int64(d)
	first := d > 0 && s.dropped == int64(d)
	// The writer wakes for a full batch, not for every 20 ms frame; the batch's first
	// audio starts the flush timer, which wakes it if the batch never fills.
	if was == 0 && s.queue.len() > 0 {
		s.flush.Reset(sendBatch)
	}
	wake := was < s.batch && s.queue.len() >= s.batch
	s.mu.Unlock()
	if first {
		s.log.Warn("deepgram: send queue full, dropping the oldest audio", "queue", s.r.opts.QueueAudio)
	}
	if wake {
		s.poke()
	}
	return nil
}

// Finalize asks Deepgram to finish the utterance now, after the audio already written.
func (s *LiveStream) Finalize() error {
	s.mu.Lock()
	err := s.usableLocked()
	if err == nil {
		s.finPending, s.finAt = true, s.queue.tail()
	}
	s.mu.Unlock()
	if err == nil {
		s.poke()
	}
	return err
}

func (s *LiveStream) usableLocked() error {
	switch {
	case s.ended && s.err != nil:
		return s.err
	case s.ended || s.closing:
		return ErrClosed
	}
	return nil
}

// Results delivers transcripts in order and is closed when the stream ends.
func (s *LiveStream) Results() <-chan voice.Transcript { return s.results }

// Close sends the queued audio and CloseStream, waits up to CloseTimeout for Deepgram to
// flush its last results and close, then tears down. It returns the error that ended the
// stream (nil after a graceful close). Idempotent. Keep reading Results until it is closed
// to receive the flushed final.
func (s *LiveStream) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		s.poke()
		t := time.AfterFunc(s.r.opts.CloseTimeout, s.cancel)
		<-s.done
		t.Stop()
	})
	<-s.done
	return s.err
}

// Stats returns the stream's counters so far.
func (s *LiveStream) Stats() Stats {
	s.mu.Lock()
	d := s.dropped
	s.mu.Unlock()
	return Stats{
		DroppedAudio:    d,
		Reconnects:      int(s.reconnects.Load()),
		Malformed:       int(s.malformed.Load()),
		DroppedInterims: int(s.droppedInterims.Load()),
	}
}

func (s *LiveStream) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run is the writer goroutine: it drives the socket until the stream ends, then tears down.
func (s *LiveStream) run(w *writer) {
	w.watch()
	w.startReader()
	err := w.loop()
	s.cancel()
	w.stopWatch()
	_ = w.conn.CloseNow()
	if w.readerLive {
		<-w.readerDone
		w.readerLive = false
	}
	w.keepAlive.Stop()
	w.setHealthy() // stops the broken-socket timer
	w.flushUtterance(false)
	st := s.Stats()
	s.mu.Lock()
	s.ended, s.err = true, err
	s.mu.Unlock()
	close(s.results)
	s.log.Debug("deepgram: stream ended", "err", err, "reconnects", st.Reconnects,
		"dropped_audio", s.f.Duration(int(st.DroppedAudio)), "malformed", st.Malformed, "dropped_interims", st.DroppedInterims)
	close(s.done)
}

// readerEnd is why a socket's reader ended, and whether the server had said anything.
type readerEnd struct {
	err   error
	heard bool
}

// read is the reader goroutine of one socket: it parses results until the socket ends and
// reports why on done. base is the stream audio offset of the socket's first byte.
func (s *LiveStream) read(conn *websocket.Conn, base int64, ut *utterance, done chan<- readerEnd) {
	heard := false
	for {
		typ, data, err := conn.Read(s.ctx)
		if err != nil {
			done <- readerEnd{err: err, heard: heard}
			return
		}
		heard = true
		if typ != websocket.MessageText {
			continue
		}
		m, err := parseServerMessage(data)
		if err != nil {
			if s.malformed.Add(1) == 1 {
				s.log.Warn("deepgram: unreadable server message dropped", "err", err)
			}
			continue
		}
		s.handle(m, base, ut)
	}
}

// handle turns one server message into transcripts. Deepgram's is_final segments of an
// utterance are accumulated; the utterance ends at speech_final, a Finalize answer or
// UtteranceEnd, and is delivered once, whole.
func (s *LiveStream) handle(m serverMessage, base int64, ut *utterance) {
	switch m.Type {
	case typeResults:
		if !m.IsFinal {
			if m.Transcript != "" {
				s.deliver(voice.Transcript{Text: ut.with(m.Transcript)})
			}
			return
		}
		ut.add(m.Transcript, m.End())
		switch {
		case m.SpeechFinal || m.FromFinalize:
			s.endUtterance(ut, base)
		case m.Transcript != "":
			s.deliver(voice.Transcript{Text: ut.text()})
		case len(ut.segments) == 0:
			s.commitTo(base, m.End()) // a finalized stretch without words: nothing to replay
		}
	case typeUtteranceEnd:
		s.endUtterance(ut, base)
	}
}

func (s *LiveStream) endUtterance(ut *utterance, base int64) {
	if text := ut.text(); text != "" {
		s.deliver(voice.Transcript{Text: text, Final: true})
	}
	s.commitTo(base, ut.end)
	ut.reset()
}

// commitTo records that audio up to end seconds into the socket starting at base needs no
// replay. Only the current reader calls it.
func (s *LiveStream) commitTo(base int64, end float64) {
	off := base + int64(s.f.Bytes(time.Duration(end*float64(time.Second))))
	if off > s.commit.Load() {
		s.commit.Store(off)
	}
}

// deliver hands t to the owner under the policy described at resultsBuffer.
func (s *LiveStream) deliver(t voice.Transcript) {
	if !t.Final {
		select {
		case s.results <- t:
		default:
			s.droppedInterims.Add(1)
		}
		return
	}
	select {
	case s.results <- t:
	case <-s.ctx.Done():
		s.log.Warn("deepgram: final transcript lost at teardown")
	}
}

// utterance holds the is_final segments of the utterance being heard.
type utterance struct {
	segments []string
	end      float64 // end of the last is_final result, seconds into the socket's audio
}

func (u *utterance) add(text string, end float64) {
	if text != "" {
		u.segments = append(u.segments, text)
	}
	u.end = end
}

func (u *utterance) text() string { return strings.Join(u.segments, " ") }

// with is the utterance so far followed by an interim hypothesis.
func (u *utterance) with(interim string) string {
	if len(u.segments) == 0 {
		return interim
	}
	return u.text() + " " + interim
}

func (u *utterance) reset() {
	u.segments = u.segments[:0]
	u.end = 0
}
