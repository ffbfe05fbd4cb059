package openai

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/voice"
)

// ErrClosed is returned by Write and Finalize after Close.
var ErrClosed = errors.New("openai stt: stream closed")

// Stream buffering limits.
const (
	// resultsBuffer is the size of Results(). When it is full the goroutine waits for
	// room (bounded by the stream's end); Write and Finalize never do.
	resultsBuffer = 16
	// maxPending is how many finalized utterances may wait for upload with their audio.
	// Past it (a server that hangs while the caller keeps talking) the oldest waiting
	// utterance loses its audio and yields an empty final, so each Finalize still gets
	// exactly one final and memory stays bounded.
	maxPending = 4
)

// Stream is one call's transcription session, the voice.RecognizerStream that Stream
// returns. Write and Finalize only touch a small mutex-guarded buffer; one goroutine takes
// the finalized utterances and sends them, one request at a time, in order.
type Stream struct {
	r      *Recognizer
	f      audio.Format
	log    *slog.Logger
	parent context.Context // the caller's: its end is a cancellation
	ctx    context.Context // ours: cancelled by Close
	cancel context.CancelFunc
	max    int // bytes of audio kept for one utterance

	results   chan voice.Transcript
	wake      chan struct{} // size 1: "look at the queue"
	done      chan struct{} // closed when the goroutine has ended
	closeOnce sync.Once

	mu      sync.Mutex // guards the following
	cur     []byte     // audio since the last Finalize, at most max bytes (the newest)
	trimmed bool       // cur lost its oldest audio (warned once per utterance)
	pending [][]byte   // finalized utterances not yet taken, oldest first
	closing bool
	ended   bool
	err     error // what ended the stream, set with ended
}

var _ voice.RecognizerStream = (*Stream)(nil)

func startStream(ctx context.Context, r *Recognizer, f audio.Format, callID voice.CallID) *Stream {
	sctx, cancel := context.WithCancel(ctx)
	log := r.log
	if callID != "" {
		log = log.With("call", string(callID))
	}
	bps := f.Encoding.BytesPerSample()
	s := &Stream{
		r: r, f: f, log: log,
		parent: ctx, ctx: sctx, cancel: cancel,
		max:     max(f.Bytes(r.maxUtterance)/bps*bps, bps),
		results: make(chan voice.Transcript, resultsBuffer),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	log.Debug("openai stt: stream opened", "format", f.String(), "model", r.model)
	go s.run()
	return s
}

// Write buffers audio for the current utterance. It never blocks: past MaxUtterance the
// oldest audio of the utterance is dropped.
func (s *Stream) Write(p []byte) error {
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.cur = append(s.cur, p...)
	warn := false
	if over := len(s.cur) - s.max; over > 0 {
		bps := s.f.Encoding.BytesPerSample()
		over = min((over+bps-1)/bps*bps, len(s.cur)) // whole samples
		s.cur = s.cur[over:]
		warn, s.trimmed = !s.trimmed, true
	}
	s.mu.Unlock()
	if warn {
		s.log.Warn("openai stt: utterance longer than the limit, dropping its oldest audio", "limit", s.r.maxUtterance)
	}
	return nil
}

// Finalize ends the current utterance: it is uploaded in the background and its text
// arrives on Results as one final transcript (empty when there was nothing to hear or the
// request failed). It never blocks.
func (s *Stream) Finalize() error {
	s.mu.Lock()
	if err := s.usableLocked(); err != nil {
		s.mu.Unlock()
		return err
	}
	s.pending = append(s.pending, s.cur)
	s.cur, s.trimmed = nil, false
	shed := false
	if n := len(s.pending); n > maxPending {
		for i := range n - maxPending {
			shed = shed || s.pending[i] != nil
			s.pending[i] = nil
		}
	}
	s.mu.Unlock()
	if shed {
		s.log.Warn("openai stt: transcriptions falling behind, dropping the audio of the oldest waiting utterance", "waiting", maxPending)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return nil
}

func (s *Stream) usableLocked() error {
	switch {
	case s.ended && s.err != nil:
		return s.err
	case s.ended || s.closing:
		return ErrClosed
	}
	return nil
}

// Results delivers one final transcript per Finalize, in order; it is closed when the
// stream ends.
func (s *Stream) Results() <-chan voice.Transcript { return s.results }

// Close ends the stream: an upload in flight is cancelled and utterances still waiting are
// dropped. It waits for the goroutine and returns the error that ended the stream (nil
// after a plain Close). Idempotent.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		s.mu.Unlock()
		s.cancel()
	})
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// run is the stream's goroutine.
func (s *Stream) run() {
	err := s.loop()
	s.cancel()
	s.mu.Lock()
	s.ended, s.err = true, err
	s.cur, s.pending = nil, nil
	s.mu.Unlock()
	close(s.results)
	s.log.Debug("openai stt: stream ended", "err", err)
	close(s.done)
}

// loop sends finalized utterances in order until the stream ends, and returns the error
// that ended it (nil for Close).
func (s *Stream) loop() error {
	for {
		utt, ok := s.take()
		if !ok {
			select {
			case <-s.ctx.Done():
				return s.ctxEnd()
			case <-s.wake:
				continue
			}
		}
		text, sent, err := s.r.transcribe(s.ctx, s.f, utt, s.log)
		if err != nil {
			if s.ctx.Err() != nil {
				return s.ctxEnd()
			}
			status := 0
			if pe := (*voice.ProviderError)(nil); errors.As(err, &pe) {
				status = pe.Status
			}
			if fatal(err) {
				s.log.Error("openai stt: transcription refused, ending the stream", "err", err,
					"kind", voice.KindOf(err).String(), "status", status)
				return err
			}
			s.log.Warn("openai stt: transcription failed, the utterance is lost", "err", err,
				"kind", voice.KindOf(err).String(), "status", status, "audio", s.f.Duration(len(utt)))
			text = ""
		} else if sent {
			s.log.Debug("openai stt: transcribed", "audio", s.f.Duration(len(utt)), "chars", len(text))
		}
		select {
		case s.results <- voice.Transcript{Text: text, Final: true}:
		case <-s.ctx.Done():
			return s.ctxEnd()
		}
	}
}

// take removes the oldest finalized utterance; ok is false when there is none.
func (s *Stream) take() (utt []byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil, false
	}
	utt = s.pending[0]
	s.pending[0] = nil
	s.pending = s.pending[1:]
	return utt, true
}

// ctxEnd is the stream's end when its context is done: nil for Close, a canceled (or
// timeout) error when the caller's context ended.
func (s *Stream) ctxEnd() error {
	if err := s.parent.Err(); err != nil {
		return &voice.ProviderError{Provider: name, Op: "stream", Kind: voice.KindOf(err), Err: err}
	}
	return nil
}
