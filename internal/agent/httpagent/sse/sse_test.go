package sse

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// readEvents parses input to the end, through a normal reader or one that hands over a
// byte at a time through a tiny buffer (so every boundary falls between reads).
func readEvents(input string, oneByte bool) ([]Event, error) {
	var r *Reader
	if oneByte {
		r = &Reader{br: bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(input)), 16)}
	} else {
		r = NewReader(strings.NewReader(input))
	}
	return drain(r.Next, len(input))
}

// readRawEvents is readEvents through NextRaw, each event's data copied before the next
// call, as its doc allows.
func readRawEvents(input string) ([]Event, error) {
	r := NewReader(strings.NewReader(input))
	return drain(func() (Event, error) {
		ev, err := r.NextRaw()
		return Event{Type: ev.Type, Data: string(ev.Data), ID: ev.ID}, err
	}, len(input))
}

// drain reads events until io.EOF; a stream of n bytes has fewer than n+2 events.
func drain(next func() (Event, error), n int) ([]Event, error) {
	var out []Event
	for range n + 2 {
		ev, err := next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, ev)
	}
	return out, errors.New("more events than input bytes")
}

func msg(data string) Event { return Event{Type: "message", Data: data} }

func TestReader(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []Event
	}{
		{"one event", "data: hello\n\n", []Event{msg("hello")}},
		{"two events", "data: a\n\ndata: b\n\n", []Event{msg("a"), msg("b")}},
		{"multi-line data", "data: a\ndata: b\ndata:\n\n", []Event{msg("a\nb\n")}},
		{"CRLF", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", []Event{msg("a\nb"), msg("c")}},
		{"bare CR", "data: a\r\rdata: b\r\r", []Event{msg("a"), msg("b")}},
		{"mixed endings", "data: a\r\n\ndata: b\n\r\n", []Event{msg("a"), msg("b")}},
		{"keepalive comments", ": keepalive\n\ndata: x\n: ping\n\n:\n\n", []Event{msg("x")}},
		{"named event", "event: hermes.tool.progress\ndata: {}\n\ndata: y\n\n",
			[]Event{{Type: "hermes.tool.progress", Data: "{}"}, msg("y")}},
		{"event without data is dropped, type does not leak", "event: foo\n\ndata: z\n\n", []Event{msg("z")}},
		{"no space after colon", "data:x\n\n", []Event{msg("x")}},
		{"only one space stripped", "data:  x \n\n", []Event{msg(" x ")}},
		{"field without colon", "data\n\n", []Event{msg("")}},
		{"colon in value", `data: {"a":"b: c"}` + "\n\n", []Event{msg(`{"a":"b: c"}`)}},
		{"unknown fields and retry ignored", "retry: 10\nfoo: bar\ndata: d\n\n", []Event{msg("d")}},
		{"id kept across events", "id: 7\ndata: a\n\ndata: b\n\n",
			[]Event{{Type: "message", Data: "a", ID: "7"}, {Type: "message", Data: "b", ID: "7"}}},
		{"id with NUL ignored", "id: 1\x002\ndata: a\n\n", []Event{msg("a")}},
		{"BOM", "\xEF\xBB\xBFdata: a\n\n", []Event{msg("a")}},
		{"BOM only at the start", "data: a\n\n\xEF\xBB\xBFdata: b\n\n", []Event{msg("a")}},
		{"field names are case-sensitive", "Data: a\n\n", nil},
		{"unterminated last event", "data: a\n\ndata: [DONE]\n", []Event{msg("a"), msg("[DONE]")}},
		{"unterminated last line", "data: [DONE]", []Event{msg("[DONE]")}},
		{"empty", "", nil},
		{"blank lines only", "\n\r\n\r\n", nil},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			got, err := readEvents(tt.input, oneByte)
			if err != nil {
				t.Errorf("%s (one byte %v): %v", tt.name, oneByte, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("%s (one byte %v): events (-want +got):\n%s", tt.name, oneByte, diff)
			}
			if diff := cmp.Diff(refEvents(tt.input), got); diff != "" {
				t.Errorf("%s (one byte %v): differs from the reference parser (-ref +got):\n%s", tt.name, oneByte, diff)
			}
		}
		raw, err := readRawEvents(tt.input)
		if err != nil {
			t.Errorf("%s (raw): %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, raw); diff != "" {
			t.Errorf("%s (raw): events (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestLimits(t *testing.T) {
	long := strings.Repeat("x", MaxLine-len("data: "))
	got, err := readEvents("data: "+long+"\n\n", false)
	if err != nil || len(got) != 1 || got[0].Data != long {
		t.Fatalf("a line of exactly 1 MiB: %d events, err %v", len(got), err)
	}
	if _, err := readEvents("data: "+long+"x\n\n", false); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("a line over 1 MiB: err %v, want ErrLineTooLong", err)
	}
	if _, err := readEvents(strings.Repeat(":", MaxLine+1), false); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("an unterminated line over 1 MiB: err %v, want ErrLineTooLong", err)
	}
	half := "data: " + strings.Repeat("y", MaxEvent/2) + "\n"
	if _, err := readEvents(half+half+"\n", false); !errors.Is(err, ErrEventTooLarge) {
		t.Errorf("an event over 1 MiB: err %v, want ErrEventTooLarge", err)
	}
	for _, err := range []error{ErrLineTooLong, ErrEventTooLarge} {
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%v is not ErrTooLarge", err)
		}
	}
}

// refEvents is a deliberately naive parser of a whole stream, written straight from the
// spec's wording, to check the streaming reader against.
func refEvents(input string) []Event {
	input = strings.TrimPrefix(input, "\xEF\xBB\xBF")
	var lines []string
	start := 0
	for i := 0; i < len(input); i++ {
		switch input[i] {
		case '\r':
			lines = append(lines, input[start:i])
			if i+1 < len(input) && input[i+1] == '\n' {
				i++
			}
			start = i + 1
		case '\n':
			lines = append(lines, input[start:i])
			start = i + 1
		}
	}
	if start < len(input) {
		lines = append(lines, input[start:]) // our leniency: a last unterminated line counts
	}
	var (
		out      []Event
		typ, id  string
		data     string
		hasField bool
	)
	dispatch := func() {
		if hasField {
			ty := typ
			if ty == "" {
				ty = "message"
			}
			out = append(out, Event{Type: ty, Data: strings.TrimSuffix(data, "\n"), ID: id})
		}
		typ, data, hasField = "", "", false
	}
	for _, line := range lines {
		if line == "" {
			dispatch()
			continue
		}
		if line[0] == ':' {
			continue
		}
		name, value, found := strings.Cut(line, ":")
		if found {
			value = strings.TrimPrefix(value, " ")
		}
		switch name {
		case "event":
			typ = value
		case "data":
			data += value + "\n"
			hasField = true
		case "id":
			if !strings.Contains(value, "\x00") {
				id = value
			}
		}
	}
	dispatch() // our leniency: a clean end dispatches what is pending
	return out
}

// FuzzSSEReader checks the streaming reader against the naive reference on any input,
// read whole and a byte at a time.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "data: a\r\n\r\n", "data: a\r\rdata: b\r\r", ": keepalive\n\n",
		"event: x\ndata: 1\ndata: 2\n\n", "\xEF\xBB\xBFdata: a\n\n", "data: [DONE]", "id: 1\nretry: 5\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		want := refEvents(string(input))
		for _, oneByte := range []bool{false, true} {
			got, err := readEvents(string(input), oneByte)
			if err != nil {
				t.Fatalf("one byte %v: %v", oneByte, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("one byte %v: differs from the reference (-ref +got):\n%s", oneByte, diff)
			}
			for _, ev := range got {
				if strings.ContainsAny(ev.Type, "\r\n") || strings.Contains(ev.Data, "\r") {
					t.Fatalf("line break leaked into %+v", ev)
				}
			}
		}
		raw, err := readRawEvents(string(input))
		if err != nil {
			t.Fatalf("raw: %v", err)
		}
		if diff := cmp.Diff(want, raw); diff != "" {
			t.Fatalf("raw: differs from the reference (-ref +got):\n%s", diff)
		}
	})
}
