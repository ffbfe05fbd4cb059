package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/handset-voice/handset/internal/agent/httpagent"
	"github.com/handset-voice/handset/internal/agent/httpagent/sse"
	"github.com/handset-voice/handset/internal/voice"
)

// maxWholeReply bounds a non-streaming (application/json) answer.
const maxWholeReply = 8 << 20

// hermesProgress is the named event Hermes Agent interleaves with chunks while a tool runs
// (its JSON is not a chunk): {"tool","emoji","label","toolCallId","status"}.
const hermesProgress = "hermes.tool.progress"

// stream reads one reply. Next is called by one goroutine; Close may be called from any.
type stream struct {
	*httpagent.Reply // the response body; its Close aborts the request
	agent            *Agent

	sse   *sse.Reader // nil when the runtime answered application/json
	whole bool        // read the body as one chat.completion

	// Owned by the Next goroutine.
	err      error                // the terminal result, returned again by later calls
	pending  *voice.ProviderError // an error to return after the text that came with it
	finished bool                 // a finish_reason was seen: a clean end of body is complete
	chunks   int
}

// Next returns the next piece of text (or tool progress), io.EOF at the end of the reply,
// or a *voice.ProviderError. After Close, or once the turn's context is cancelled, it
// returns an error of kind voice.KindCanceled.
func (s *stream) Next() (voice.ReplyChunk, error) {
	if s.err != nil {
		return voice.ReplyChunk{}, s.err
	}
	if s.Closed() {
		s.err = s.Aborted(s.agent.origin(), httpagent.ErrClosed, "read stream")
		return voice.ReplyChunk{}, s.err
	}
	var (
		c   voice.ReplyChunk
		err error
	)
	if s.whole {
		c, err = s.readWhole()
	} else {
		c, err = s.next()
	}
	if err != nil {
		s.err = err
		if errors.Is(err, io.EOF) {
			s.Finish() // the stream ended with its reply: keep the connection
		} else {
			s.End()
		}
		s.agent.log.Debug("agent reply ended", "provider", s.agent.name, "chunks", s.chunks, "err", err)
		return voice.ReplyChunk{}, err
	}
	s.chunks++
	return c, nil
}

// next reads events until one carries text or progress, or the stream ends.
func (s *stream) next() (voice.ReplyChunk, error) {
	if s.pending != nil {
		return voice.ReplyChunk{}, s.pending
	}
	for {
		ev, err := s.sse.NextRaw() // ev.Data is the reader's until the next read: parsed, not kept
		if err != nil {
			return voice.ReplyChunk{}, s.readErr(err)
		}
		switch ev.Type {
		case "message":
		case "error":
			return voice.ReplyChunk{}, s.agent.fail(voice.KindTransient, 0,
				fmt.Errorf("error event: %w", errorFromBody(ev.Data)))
		case hermesProgress:
			if label := progressLabel(ev.Data); label != "" {
				return voice.ReplyChunk{Progress: label}, nil
			}
			continue
		default:
			continue // other named events are not for us
		}
		if string(bytes.TrimSpace(ev.Data)) == "[DONE]" {
			return voice.ReplyChunk{}, io.EOF
		}
		c, err := parseChunk(ev.Data)
		if err != nil {
			return voice.ReplyChunk{}, s.agent.fail(voice.KindProtocol, 0, err)
		}
		if c.Finish != "" {
			s.finished = true
		}
		switch {
		case c.Err != nil:
			s.pending = s.agent.fail(c.Err.kind(), 0, fmt.Errorf("in stream: %w", c.Err))
		case c.Finish == "error":
			s.pending = s.agent.fail(voice.KindTransient, 0, errors.New(`in stream: finish_reason "error"`))
		}
		if c.Text != "" || c.Usage.Reported() {
			return voice.ReplyChunk{Text: c.Text, Usage: c.Usage}, nil
		}
		if s.pending != nil {
			return voice.ReplyChunk{}, s.pending
		}
	}
}

// readErr classifies a failed read of the event stream.
func (s *stream) readErr(err error) error {
	aborted := s.Interrupted()
	switch {
	case aborted && s.finished && s.Silent():
		// The reply was complete; the runtime just never closed the stream.
		return io.EOF
	case aborted:
		return s.Aborted(s.agent.origin(), err, "read stream")
	case errors.Is(err, sse.ErrTooLarge):
		return s.agent.fail(voice.KindProtocol, 0, err)
	case err == io.EOF && s.finished:
		return io.EOF
	case err == io.EOF:
		return s.agent.fail(voice.KindTransient, 0, errors.New("stream ended early: no [DONE] and no finish_reason"))
	}
	return s.agent.fail(voice.KindTransient, 0, fmt.Errorf("stream ended early: %w", err))
}

// readWhole serves a runtime that ignored "stream": true and answered one
// chat.completion: its content is the only chunk.
func (s *stream) readWhole() (voice.ReplyChunk, error) {
	if s.chunks > 0 {
		return voice.ReplyChunk{}, io.EOF
	}
	data, err := io.ReadAll(io.LimitReader(s.Body(), maxWholeReply+1))
	if err != nil {
		return voice.ReplyChunk{}, s.readErr(err)
	}
	s.finished = true
	if len(data) > maxWholeReply {
		return voice.ReplyChunk{}, s.agent.fail(voice.KindProtocol, 0, errors.New("completion larger than 8 MiB"))
	}
	c, ve, err := parseCompletion(data)
	switch {
	case err != nil:
		return voice.ReplyChunk{}, s.agent.fail(voice.KindProtocol, 0, err)
	case ve != nil:
		return voice.ReplyChunk{}, s.agent.fail(ve.kind(), 0, fmt.Errorf("in completion: %w", ve))
	case c.Text == "" && !c.Usage.Reported():
		return voice.ReplyChunk{}, io.EOF
	}
	return voice.ReplyChunk{Text: c.Text, Usage: c.Usage}, nil
}

// progressLabel reads a Hermes tool-progress event: the label (or the tool name) while a
// tool runs, "" otherwise. Tools whose names start with "_" are internal.
func progressLabel(data []byte) string {
	var p struct {
		Tool   string `json:"tool"`
		Label  string `json:"label"`
		Status string `json:"status"`
	}
	if json.Unmarshal(data, &p) != nil || p.Status != "running" || strings.HasPrefix(p.Tool, "_") {
		return ""
	}
	if p.Label != "" {
		return voice.Clip(p.Label, 80)
	}
	return voice.Clip(p.Tool, 80)
}
