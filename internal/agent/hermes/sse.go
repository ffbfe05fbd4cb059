package hermes

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxEvent bounds one event's data (and one line).
const maxEvent = 1 << 20

var errTooLarge = errors.New("sse: event larger than 1 MiB")

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	Name string // the event: field; "" when none was given
	Data []byte // data: lines joined with "\n"
}

// sseReader reads a text/event-stream: lines end in LF or CRLF, ':' starts a comment (Hermes'
// ": keepalive" and ": stream closed"), a blank line dispatches, "id:" and "retry:" are
// ignored. An event left pending at a clean end of stream is still dispatched.
type sseReader struct {
	br   *bufio.Reader
	name string
	data []byte
	has  bool
}

func newSSEReader(r io.Reader) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 16<<10)}
}

// Next returns the next event, io.EOF at a clean end, or the read error.
func (s *sseReader) Next() (sseEvent, error) {
	var line []byte
	for {
		chunk, err := s.br.ReadSlice('\n')
		if len(line)+len(chunk) > maxEvent {
			return sseEvent{}, errTooLarge
		}
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			return sseEvent{}, err
		}
		eof := err == io.EOF
		if eof && len(line) == 0 {
			if ev, ok := s.dispatch(); ok {
				return ev, nil
			}
			return sseEvent{}, io.EOF
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			if ev, ok := s.dispatch(); ok {
				return ev, nil
			}
		} else if err := s.field(line); err != nil {
			return sseEvent{}, err
		}
		line = line[:0]
		if eof {
			if ev, ok := s.dispatch(); ok {
				return ev, nil
			}
			return sseEvent{}, io.EOF
		}
	}
}

func (s *sseReader) field(line []byte) error {
	if line[0] == ':' {
		return nil
	}
	name, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(name) {
	case "event":
		s.name = string(value)
	case "data":
		if len(s.data)+len(value)+1 > maxEvent {
			return errTooLarge
		}
		if s.has {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.has = true
	}
	return nil
}

func (s *sseReader) dispatch() (sseEvent, bool) {
	if !s.has {
		s.name = ""
		return sseEvent{}, false
	}
	ev := sseEvent{Name: s.name, Data: bytes.Clone(s.data)}
	s.name, s.data, s.has = "", s.data[:0], false
	return ev, true
}
