// Package sse reads a text/event-stream body (server-sent events), as the streaming agent
// runtimes receive their replies, bounding what one stream may make us hold in memory.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// Limits on what one stream may make us hold in memory.
const (
	MaxLine  = 1 << 20 // longest line accepted (1 MiB)
	MaxEvent = 1 << 20 // most data one event may accumulate
)

// Errors of a stream that exceeds a limit; both are ErrTooLarge.
var (
	ErrTooLarge      = errors.New("sse: stream exceeds a limit")
	ErrLineTooLong   = fmt.Errorf("%w: line longer than 1 MiB", ErrTooLarge)
	ErrEventTooLarge = fmt.Errorf("%w: event data larger than 1 MiB", ErrTooLarge)
)

// Event is one dispatched server-sent event.
type Event struct {
	Type string // the event: field, "message" when none was given
	Data string // the data: lines joined with "\n"
	ID   string // the last id: field seen (kept across events, as the spec says)
}

// RawEvent is an Event whose data is the reader's own bytes, valid until the next call to
// the reader: a stream that parses each event at once need not copy it.
type RawEvent struct {
	Type string
	Data []byte
	ID   string
}

// Reader parses a text/event-stream body as the HTML "Server-sent events" section
// (9.2.6, "Interpreting an event stream") describes: lines end in CRLF, LF or CR; a
// leading UTF-8 BOM is dropped; ':' starts a comment; a blank line dispatches.
//
// One deliberate leniency: at a clean end of stream, a final line without its terminator is
// still interpreted, and an event whose blank line never came is still dispatched, so a
// server that forgets the trailing newlines after "data: [DONE]" does not lose its ending.
type Reader struct {
	br *bufio.Reader

	line    []byte // the line being assembled
	skipLF  bool   // the last line ended in CR: a leading LF belongs to it
	started bool   // the first line (which may carry a BOM) has been read

	typ     string
	data    []byte
	id      string
	pending bool // a field was seen since the last dispatch
}

// readBuffer is the reader's buffer: a stream's events are tokens, a few dozen bytes
// each, and a longer line is assembled across reads. A reader is made per agent turn,
// so a larger buffer would be garbage the collector sweeps at every turn of every call.
const readBuffer = 4 << 10

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, readBuffer)}
}

// Next returns the next event. At the end of the stream it returns io.EOF (after
// dispatching any event left pending by a clean end); other read errors pass through
// unchanged and drop the pending event.
func (s *Reader) Next() (Event, error) {
	ev, err := s.NextRaw()
	if err != nil {
		return Event{}, err
	}
	return Event{Type: ev.Type, Data: string(ev.Data), ID: ev.ID}, nil
}

// NextRaw is Next without the copy of the event's data.
func (s *Reader) NextRaw() (RawEvent, error) {
	for {
		line, err := s.readLine()
		if err == io.EOF {
			if len(line) > 0 {
				if err := s.field(line); err != nil {
					return RawEvent{}, err
				}
			}
			if ev, ok := s.dispatch(); ok {
				return ev, nil
			}
			return RawEvent{}, io.EOF
		}
		if err != nil {
			return RawEvent{}, err
		}
		if len(line) == 0 {
			if ev, ok := s.dispatch(); ok {
				return ev, nil
			}
			continue
		}
		if err := s.field(line); err != nil {
			return RawEvent{}, err
		}
	}
}

// field interprets one non-empty line.
func (s *Reader) field(line []byte) error {
	if line[0] == ':' {
		return nil // a comment, often a keepalive
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "event":
		s.typ = string(value)
	case "data":
		if len(s.data)+len(value)+1 > MaxEvent {
			return ErrEventTooLarge
		}
		s.data = append(s.data, value...)
		s.data = append(s.data, '\n')
		s.pending = true
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			s.id = string(value)
		}
	}
	// retry and unknown fields are ignored.
	return nil
}

// dispatch ends the current event. It reports false when there was no data to dispatch.
func (s *Reader) dispatch() (RawEvent, bool) {
	typ, data, had := s.typ, s.data, s.pending
	s.typ, s.data, s.pending = "", s.data[:0], false
	if !had {
		return RawEvent{}, false
	}
	if typ == "" {
		typ = "message"
	}
	return RawEvent{Type: typ, Data: data[:len(data)-1], ID: s.id}, true
}

// readLine returns the next line without its terminator. The slice is valid until the next
// call. At the end of the stream it returns what was left of an unterminated line with io.EOF.
func (s *Reader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		if s.br.Buffered() == 0 {
			if _, err := s.br.Peek(1); err != nil {
				return s.firstLine(), err
			}
		}
		buf, _ := s.br.Peek(s.br.Buffered())
		if s.skipLF {
			s.skipLF = false
			if buf[0] == '\n' {
				_, _ = s.br.Discard(1)
				continue
			}
		}
		i := bytes.IndexAny(buf, "\r\n")
		if i < 0 {
			if len(s.line)+len(buf) > MaxLine {
				return nil, ErrLineTooLong
			}
			s.line = append(s.line, buf...)
			_, _ = s.br.Discard(len(buf))
			continue
		}
		if len(s.line)+i > MaxLine {
			return nil, ErrLineTooLong
		}
		s.line = append(s.line, buf[:i]...)
		s.skipLF = buf[i] == '\r'
		_, _ = s.br.Discard(i + 1)
		return s.firstLine(), nil
	}
}

// firstLine drops the byte order mark the stream may start with.
func (s *Reader) firstLine() []byte {
	if !s.started {
		s.started = true
		s.line = bytes.TrimPrefix(s.line, []byte("\xEF\xBB\xBF"))
	}
	return s.line
}
