package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/agent/httpagent"
	"github.com/handset-voice/handset/internal/agent/httpagent/sse"
	"github.com/handset-voice/handset/internal/voice"
)

// piece is one decoded part of an answer.
type piece struct {
	text   string
	hangup bool // the answer asked to end the call (reserved)
}

// decoder reads the pieces of one answer; next returns io.EOF at its end.
type decoder interface {
	next() (piece, error)
}

// protocolError is an answer we cannot read.
type protocolError struct{ err error }

func (e protocolError) Error() string { return e.err.Error() }

// eventError is an SSE event named "error"; data is its payload.
type eventError struct{ data string }

func (e eventError) Error() string { return "error event" }

// newDecoder picks the decoder for an answer's Content-Type.
func newDecoder(contentType string, r io.Reader) (decoder, error) {
	switch mt := httpagent.MediaType(contentType); mt {
	case "", "text/plain":
		return &plainDecoder{r: r}, nil
	case "application/json":
		return &jsonDecoder{r: r}, nil
	case "text/event-stream":
		return &sseDecoder{sse: sse.NewReader(r)}, nil
	default:
		return nil, fmt.Errorf("content type %q: want text/plain, application/json or text/event-stream", voice.Clip(mt, 64))
	}
}

// plainDecoder passes a text/plain body on as it arrives, holding back only a UTF-8
// sequence split between reads. Invalid bytes become U+FFFD, one per byte.
type plainDecoder struct {
	r    io.Reader
	buf  [4096]byte
	tail []byte // the start of a rune whose rest has not arrived
	eof  bool
}

func (d *plainDecoder) next() (piece, error) {
	if d.eof {
		return piece{}, io.EOF
	}
	n, err := d.r.Read(d.buf[:])
	data := append(d.tail, d.buf[:n]...)
	d.tail = nil
	if err == io.EOF {
		d.eof = true
		if len(data) == 0 {
			return piece{}, io.EOF
		}
		return piece{text: validUTF8(data)}, nil
	}
	if err != nil {
		return piece{}, err
	}
	cut := completeRunes(data)
	if cut < len(data) {
		d.tail = append([]byte(nil), data[cut:]...)
	}
	return piece{text: validUTF8(data[:cut])}, nil
}

// completeRunes returns how much of b ends on a rune boundary: all of it, unless b ends
// with the first bytes of a valid multi-byte sequence.
func completeRunes(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// validUTF8 returns b as a string with each invalid byte replaced by U+FFFD.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			s.WriteRune(utf8.RuneError)
		} else {
			s.Write(b[:n])
		}
		b = b[n:]
	}
	return s.String()
}

// jsonDecoder reads an application/json answer whole.
type jsonDecoder struct {
	r    io.Reader
	done bool
}

func (d *jsonDecoder) next() (piece, error) {
	if d.done {
		return piece{}, io.EOF
	}
	d.done = true
	data, err := io.ReadAll(io.LimitReader(d.r, maxReply+1))
	if err != nil {
		return piece{}, err
	}
	if len(data) > maxReply {
		return piece{}, protocolError{errors.New("JSON answer larger than 1 MiB")}
	}
	p, err := parseAnswer(data)
	if err != nil {
		return piece{}, protocolError{err}
	}
	return p, nil
}

// parseAnswer reads a JSON answer object: {"text": "..."} or {"reply": "..."}, with an
// optional "hangup" flag. Other fields are ignored.
func parseAnswer(data []byte) (piece, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return piece{}, errors.New(`JSON answer: want an object like {"text": "..."}`)
	}
	var w struct {
		Text   *string `json:"text"`
		Reply  *string `json:"reply"`
		Hangup bool    `json:"hangup"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return piece{}, fmt.Errorf("JSON answer: %w", err)
	}
	p := piece{hangup: w.Hangup}
	switch {
	case w.Text != nil:
		p.text = *w.Text
	case w.Reply != nil:
		p.text = *w.Reply
	}
	return p, nil
}

// sseDecoder reads a text/event-stream answer.
type sseDecoder struct {
	sse  *sse.Reader
	done bool
}

func (d *sseDecoder) next() (piece, error) {
	for !d.done {
		ev, err := d.sse.NextRaw() // ev.Data is the reader's until the next read: parsed, not kept
		if errors.Is(err, sse.ErrTooLarge) {
			return piece{}, protocolError{err}
		}
		if err != nil {
			return piece{}, err
		}
		data := ev.Data
		switch ev.Type {
		case "message":
		case "error":
			return piece{}, eventError{data: string(data)}
		default:
			continue // named events are not for us
		}
		trimmed := bytes.TrimSpace(data)
		if string(trimmed) == "[DONE]" {
			d.done = true
			break
		}
		if bytes.HasPrefix(trimmed, []byte("{")) && json.Valid(trimmed) {
			p, err := parseAnswer(trimmed)
			if err != nil {
				return piece{}, protocolError{fmt.Errorf("event data: %w", err)}
			}
			return p, nil
		}
		return piece{text: validUTF8(data)}, nil
	}
	return piece{}, io.EOF
}
