package webhook

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/agent/httpagent/sse"
)

// decodeAll runs a decoder over body and returns its pieces' text and the ending error.
func decodeAll(ctype string, r io.Reader) ([]string, error) {
	d, err := newDecoder(ctype, r)
	if err != nil {
		return nil, err
	}
	var out []string
	for range 1 << 20 {
		p, err := d.next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if p.text != "" {
			out = append(out, p.text)
		}
	}
	return out, errors.New("decoder never ended")
}

func TestPlainKeepsRunesWhole(t *testing.T) {
	in := "café — ½ 日本 \xff\xe2\x82A end"
	pieces, err := decodeAll("text/plain", iotest.OneByteReader(strings.NewReader(in)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pieces {
		if !utf8.ValidString(p) {
			t.Errorf("piece %q is not valid UTF-8", p)
		}
	}
	if got, want := strings.Join(pieces, ""), "café — ½ 日本 \uFFFD\uFFFD\uFFFDA end"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	if len(pieces) < 10 {
		t.Errorf("%d pieces: the text was not passed on as it arrived", len(pieces))
	}
}

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		in     string
		text   string
		hangup bool
		bad    bool
	}{
		{`{"text":"Hi."}`, "Hi.", false, false},
		{` {"reply":"Hi.","hangup":true}`, "Hi.", true, false},
		{`{"text":"","reply":"r"}`, "", false, false},
		{`{"hangup":false,"other":{"a":1}}`, "", false, false},
		{`null`, "", false, true},
		{`"Hi."`, "", false, true},
		{`{"text":["Hi."]}`, "", false, true},
		{`{"hangup":"yes"}`, "", false, true},
		{`{"text":"Hi."} trailing`, "", false, true},
	}
	for _, tt := range tests {
		p, err := parseAnswer([]byte(tt.in))
		if (err != nil) != tt.bad || p.text != tt.text || p.hangup != tt.hangup {
			t.Errorf("parseAnswer(%s) = %+v, %v", tt.in, p, err)
		}
	}
}

func TestSSELimits(t *testing.T) {
	long := "data: " + strings.Repeat("x", sse.MaxLine+1) + "\n\n"
	if _, err := decodeAll("text/event-stream", strings.NewReader(long)); !errors.As(err, new(protocolError)) {
		t.Errorf("long line: %v", err)
	}
	big := strings.Repeat("data: "+strings.Repeat("x", 1000)+"\n", sse.MaxEvent/1000+2)
	if _, err := decodeAll("text/event-stream", strings.NewReader(big)); !errors.As(err, new(protocolError)) {
		t.Errorf("big event: %v", err)
	}
}

func TestJSONTooLarge(t *testing.T) {
	big := `{"text":"` + strings.Repeat("x", maxReply) + `"}`
	if _, err := decodeAll("application/json", strings.NewReader(big)); !errors.As(err, new(protocolError)) {
		t.Errorf("err %v", err)
	}
}

var fuzzTypes = []string{"text/plain", "application/json", "text/event-stream"}

// FuzzDecode feeds any body to each answer decoder, whole and a byte at a time: neither may
// panic, every piece is valid UTF-8, and the two readings agree.
func FuzzDecode(f *testing.F) {
	for _, seed := range []struct {
		typ  uint8
		body string
	}{
		{0, "Hello there. How can I help?"},
		{0, "caf\xc3\xa9 \xff\xe2\x82"},
		{1, `{"text":"Hi."}`},
		{1, `{"reply":"Hi.","hangup":true}`},
		{1, `{"text":`},
		{2, "data: Hello \n\ndata: world\n\ndata: [DONE]\n\n"},
		{2, "\xEF\xBB\xBF: c\r\nevent: x\r\ndata: a\r\n\r\ndata: {\"text\":\"b\"}\r\rdata"},
		{2, "event: error\ndata: {\"message\":\"no\"}\n\n"},
	} {
		f.Add(seed.typ, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, typ uint8, body []byte) {
		ctype := fuzzTypes[int(typ)%len(fuzzTypes)]
		whole, errWhole := decodeAll(ctype, bytes.NewReader(body))
		bytewise, errBytes := decodeAll(ctype, iotest.OneByteReader(bytes.NewReader(body)))
		if (errWhole == nil) != (errBytes == nil) {
			t.Fatalf("%s: whole err %v, bytewise err %v", ctype, errWhole, errBytes)
		}
		a, b := strings.Join(whole, ""), strings.Join(bytewise, "")
		if a != b {
			t.Fatalf("%s: whole %q, bytewise %q", ctype, a, b)
		}
		if ctype == "text/plain" && a != validUTF8(body) {
			t.Fatalf("plain text %q, want %q", a, validUTF8(body))
		}
		for _, p := range append(whole, bytewise...) {
			if !utf8.ValidString(p) {
				t.Fatalf("%s: piece %q is not valid UTF-8", ctype, p)
			}
		}
	})
}
