package hermes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/handset-voice/handset/internal/agent/httpagent"
	"github.com/handset-voice/handset/internal/agent/httpagent/sse"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/voice"
)

// wireMessage is a message as Hermes reads it.
type wireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func wire(msgs []voice.Message) []wireMessage {
	out := make([]wireMessage, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, wireMessage{Role: string(m.Role), Content: m.Content})
	}
	return out
}

// runRequest is the body of POST /v1/runs.
type runRequest struct {
	Input        string        `json:"input"`
	Instructions string        `json:"instructions,omitempty"`
	History      []wireMessage `json:"conversation_history,omitempty"`
	SessionID    string        `json:"session_id,omitempty"`
	Model        string        `json:"model,omitempty"`
}

// chatRequest is the body of POST /v1/chat/completions.
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	Stream   bool          `json:"stream"`
}

// runs starts a turn on the runs transport.
func (a *Agent) runs(ctx context.Context, req voice.TurnRequest, h http.Header) (voice.ReplyStream, error) {
	last := req.History[len(req.History)-1]
	body := runRequest{
		Input: last.Content, Instructions: session.Instructions(ctx, a.system), History: wire(req.History[:len(req.History)-1]),
		SessionID: h.Get(HeaderSessionID), Model: a.model,
	}
	w := a.watch(ctx)
	a.log.Debug("hermes run", "call", req.CallID, "turn", req.Turn, "messages", len(req.History))
	resp, err := a.do("start run", w, http.MethodPost, "/runs", h, body)
	if err != nil {
		w.Stop(httpagent.ErrClosed)
		return nil, err
	}
	var started struct {
		RunID string `json:"run_id"`
	}
	derr := decodeJSON(w.Reader(resp.Body), &started)
	_ = resp.Body.Close()
	if derr != nil || started.RunID == "" {
		w.Stop(httpagent.ErrClosed)
		return nil, a.fail("start run", voice.KindProtocol, resp.StatusCode, fmt.Errorf("no run_id in the answer: %v", derr))
	}
	s := &stream{a: a, parent: ctx, w: w, op: "run events", runID: started.RunID, h: h, parse: parseRunEvent, stopDone: make(chan struct{})}
	s.afterStop = context.AfterFunc(ctx, s.stopRun)
	eh := h.Clone()
	eh.Set("Accept", "text/event-stream")
	w.Touch()
	resp, err = a.do("run events", w, http.MethodGet, "/runs/"+url.PathEscape(started.RunID)+"/events", eh, nil)
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	s.body = resp.Body
	s.sse = sse.NewReader(w.Reader(resp.Body))
	w.Touch()
	return s, nil
}

// chat starts a turn on the chat transport.
func (a *Agent) chat(ctx context.Context, req voice.TurnRequest, h http.Header) (voice.ReplyStream, error) {
	msgs := make([]wireMessage, 0, len(req.History)+1)
	if system := session.Instructions(ctx, a.system); system != "" {
		msgs = append(msgs, wireMessage{Role: string(voice.RoleSystem), Content: system})
	}
	// Hermes keeps a chat session's conversation itself (X-Hermes-Session-Id) and reads only
	// the request's latest message: the turn goes as one message with a note of what the
	// session missed on the line.
	msgs = append(msgs, wireMessage{Role: string(voice.RoleUser), Content: req.Catchup()})
	h = h.Clone()
	h.Set("Accept", "text/event-stream")
	w := a.watch(ctx)
	a.log.Debug("hermes chat", "call", req.CallID, "turn", req.Turn, "messages", len(req.History))
	resp, err := a.do("chat", w, http.MethodPost, "/chat/completions", h, chatRequest{Model: a.model, Messages: msgs, Stream: true})
	if err != nil {
		w.Stop(httpagent.ErrClosed)
		return nil, err
	}
	w.Touch()
	s := &stream{a: a, parent: ctx, w: w, op: "chat", h: h, parse: parseChatEvent, body: resp.Body, stopDone: make(chan struct{})}
	if httpagent.MediaType(resp.Header.Get("Content-Type")) == "application/json" {
		s.whole = true
	}
	s.sse = sse.NewReader(w.Reader(resp.Body))
	s.finished.Store(true) // nothing to stop: closing the request is how chat cancels
	return s, nil
}

func decodeJSON(r io.Reader, v any) error {
	b, err := io.ReadAll(io.LimitReader(r, 1<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// stream reads one reply (either transport).
type stream struct {
	a      *Agent
	parent context.Context
	w      *httpagent.Watch
	op     string
	runID  string // runs transport only
	h      http.Header
	parse  func(name string, data []byte) (step, error)
	body   io.ReadCloser
	sse    *sse.Reader
	whole  bool // chat answered one application/json completion

	// Used by Next only.
	g        gate
	sawDelta bool // a text delta arrived (held or not)
	spoke    bool // text was yielded
	pending  []voice.ReplyChunk
	err      error // sticky: returned once pending is drained

	finished  atomic.Bool // the run reached a terminal state: no stop needed
	closed    atomic.Bool
	cancelled atomic.Bool // we asked Hermes to stop the run
	afterStop func() bool
	stopOnce  sync.Once
	stopDone  chan struct{}
	closeOnce sync.Once
	// releaseOnce: the response is let go once, kept for the next turn when the reply
	// ended properly (httpagent.Finish), else closed.
	releaseOnce sync.Once
}

// Next returns the next chunk, io.EOF at the end of the reply, or a *voice.ProviderError.
func (s *stream) Next() (voice.ReplyChunk, error) {
	for {
		if len(s.pending) > 0 {
			c := s.pending[0]
			s.pending = s.pending[1:]
			return c, nil
		}
		if s.err != nil {
			return voice.ReplyChunk{}, s.err
		}
		if s.closed.Load() {
			s.err = s.a.fail(s.op, voice.KindCanceled, 0, fmt.Errorf("%w: %w", context.Canceled, httpagent.ErrClosed))
			continue
		}
		s.advance()
	}
}

// advance reads one event and queues its chunks or sets s.err.
func (s *stream) advance() {
	var (
		st  step
		err error
	)
	if s.whole {
		b, rerr := io.ReadAll(io.LimitReader(s.w.Reader(s.body), sse.MaxEvent))
		s.whole = false
		if rerr != nil {
			s.abort(rerr)
			return
		}
		st, err = s.parse("", b)
	} else {
		ev, rerr := s.sse.NextRaw()
		if rerr == io.EOF {
			if s.parent.Err() != nil || s.closed.Load() {
				s.abort(rerr)
				return
			}
			s.fail(voice.KindTransient, errors.New("the event stream ended before the reply was complete"))
			return
		}
		if errors.Is(rerr, sse.ErrTooLarge) {
			s.fail(voice.KindProtocol, rerr)
			return
		}
		if rerr != nil {
			s.abort(rerr)
			return
		}
		st, err = s.parse(ev.Type, ev.Data)
	}
	if err != nil {
		s.a.log.Debug("hermes: dropped a malformed event", "op", s.op, "err", err)
		return
	}
	switch st.Kind {
	case stepText:
		s.text(st.Text)
	case stepProgress:
		s.pending = append(s.pending, voice.ReplyChunk{Progress: st.Text})
	case stepDone, stepEnd:
		s.finished.Store(true)
		if st.Tail != "" {
			if !s.text(st.Tail) {
				return
			}
		}
		if !s.sawDelta && st.Output != "" {
			if !s.text(st.Output) {
				return
			}
		}
		rest, gerr := s.g.finish()
		if gerr != nil {
			s.fail(voice.KindTransient, gerr)
			return
		}
		if rest != "" {
			s.spoke = true
			s.pending = append(s.pending, voice.ReplyChunk{Text: rest})
		}
		if !s.spoke && st.Kind == stepDone && st.Usage == 0 {
			s.fail(voice.KindTransient, errEmpty)
			return
		}
		if st.Tokens.Reported() {
			s.pending = append(s.pending, voice.ReplyChunk{Usage: st.Tokens})
		}
		s.err = io.EOF
		s.releaseOnce.Do(func() { httpagent.Finish(s.w, s.body) }) // keep the connection
	case stepFailed:
		s.finished.Store(true)
		s.pending = nil
		s.fail(voice.KindTransient, fmt.Errorf("Hermes reported a failure: %s", st.Text))
	case stepCancelled:
		s.finished.Store(true)
		if s.cancelled.Load() || s.parent.Err() != nil || s.closed.Load() {
			s.fail(voice.KindCanceled, fmt.Errorf("%w: run stopped", context.Canceled))
			return
		}
		s.fail(voice.KindTransient, errors.New("the run was cancelled on Hermes' side"))
	}
}

// text passes a delta through the warning gate; it reports false when the reply failed.
func (s *stream) text(t string) bool {
	s.sawDelta = true
	out, err := s.g.add(t)
	if err != nil {
		s.pending = nil
		s.fail(voice.KindTransient, err)
		return false
	}
	if out != "" {
		s.spoke = true
		s.pending = append(s.pending, voice.ReplyChunk{Text: out})
	}
	return true
}

// fail ends the reply with an error; an unfinished run is stopped first.
func (s *stream) fail(kind voice.ErrorKind, err error) {
	s.err = s.a.fail(s.op, kind, 0, err)
	s.stopRun()
	s.release()
}

// abort classifies a read failure and ends the reply.
func (s *stream) abort(err error) {
	if s.closed.Load() && s.parent.Err() == nil {
		s.err = s.a.fail(s.op, voice.KindCanceled, 0, fmt.Errorf("%w: %w", context.Canceled, httpagent.ErrClosed))
	} else {
		s.err = httpagent.Aborted(origin(s.op), s.w, false, err, "")
	}
	s.stopRun()
	s.release()
}

// release frees the HTTP response once the reply has ended.
func (s *stream) release() {
	s.releaseOnce.Do(func() {
		s.w.Stop(httpagent.ErrClosed)
		if s.body != nil {
			_ = s.body.Close()
		}
	})
}

// stopRun asks Hermes to stop the run unless it already ended. It has its own short
// timeout and works after ctx is done. Concurrent callers wait for the one request.
func (s *stream) stopRun() {
	s.stopOnce.Do(func() {
		defer close(s.stopDone)
		if s.runID == "" || s.finished.Load() {
			return
		}
		s.cancelled.Store(true)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.parent), StopTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.a.base+"/runs/"+url.PathEscape(s.runID)+"/stop", nil)
		if err != nil {
			return
		}
		for k, v := range s.h {
			req.Header[k] = v
		}
		req.Header.Del("Accept")
		resp, err := s.a.client.Do(req)
		if err != nil {
			s.a.log.Warn("hermes: stopping the run failed", "run", s.runID, "err", httpagent.WithoutURL(err))
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		// 404 run_not_found: it had already ended, which is what we wanted.
		s.a.log.Debug("hermes: run stopped", "run", s.runID, "status", resp.StatusCode)
	})
}

// Close releases the stream; an unfinished run is stopped on Hermes' side before Close
// returns. Idempotent.
func (s *stream) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.afterStop != nil {
			s.afterStop()
		}
		s.release()
		s.stopRun()
	})
	return nil
}
