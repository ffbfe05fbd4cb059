package webhook

import (
	"errors"
	"fmt"
	"io"

	"github.com/handset-voice/handset/internal/agent/httpagent"
	"github.com/handset-voice/handset/internal/voice"
)

// maxReply bounds the text of one reply, whatever its answer type.
const maxReply = 1 << 20

// stream reads one reply. Next is called by one goroutine; Close may be called from any.
type stream struct {
	*httpagent.Reply // the response body; its Close aborts the request
	agent            *Agent
	dec              decoder

	// Owned by the Next goroutine.
	err    error // the terminal result, returned again by later calls
	total  int   // bytes of text returned
	chunks int
}

// Next returns the next piece of text, io.EOF at the end of the reply, or a
// *voice.ProviderError. After Close, or once the turn's context is cancelled, it returns an
// error of kind voice.KindCanceled.
func (s *stream) Next() (voice.ReplyChunk, error) {
	if s.err != nil {
		return voice.ReplyChunk{}, s.err
	}
	if s.Closed() {
		s.err = s.Aborted(origin, httpagent.ErrClosed, "read answer")
		return voice.ReplyChunk{}, s.err
	}
	for {
		p, err := s.dec.next()
		if err == nil && p.hangup {
			s.agent.log.Debug("webhook asked to hang up (reserved, ignored)", "provider", Name)
		}
		if err == nil && s.total+len(p.text) > maxReply {
			err = protocolError{errors.New("reply longer than 1 MiB")}
		}
		if err != nil {
			s.err = s.readErr(err)
			s.End()
			s.agent.log.Debug("agent reply ended", "provider", Name, "chunks", s.chunks, "err", s.err)
			return voice.ReplyChunk{}, s.err
		}
		if p.text != "" {
			s.total += len(p.text)
			s.chunks++
			return voice.ReplyChunk{Text: p.text}, nil
		}
	}
}

// readErr classifies what ended the answer.
func (s *stream) readErr(err error) error {
	var pe protocolError
	var ee eventError
	switch {
	case err == io.EOF:
		return io.EOF
	case s.Interrupted():
		return s.Aborted(origin, err, "read answer")
	case errors.As(err, &pe):
		return origin.Fail(voice.KindProtocol, 0, pe.err)
	case errors.As(err, &ee):
		return origin.Fail(voice.KindTransient, 0, fmt.Errorf("error event: %w", bodyError([]byte(ee.data))))
	}
	return origin.Fail(voice.KindTransient, 0, fmt.Errorf("answer ended early: %w", err))
}
