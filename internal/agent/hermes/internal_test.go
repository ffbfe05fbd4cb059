package hermes

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/agent/httpagent/sse"
)

func TestGateHoldsPossibleWarnings(t *testing.T) {
	cases := []struct {
		deltas []string
		want   string // text released before finish
		warn   bool
	}{
		{[]string{"Hello ", "there."}, "Hello there.", false},
		{[]string{"\n\n", "Sure."}, "Sure.", false},
		{[]string{"⚠️ Provider ", "authentication failed"}, "", true},
		{[]string{"\n\n⚠", "️ x"}, "", true},
		{[]string{"Provider auth", "entication failed: bad key"}, "", true},
		{[]string{"An", "other thing."}, "Another thing.", false},
		{[]string{"An"}, "", false}, // held until finish, then released
	}
	for _, c := range cases {
		var g gate
		var out strings.Builder
		var err error
		for _, d := range c.deltas {
			var s string
			if s, err = g.add(d); err != nil {
				break
			}
			out.WriteString(s)
		}
		if err == nil {
			var rest string
			rest, err = g.finish()
			if c.want == "" && !c.warn && rest != strings.TrimSpace(strings.Join(c.deltas, "")) {
				t.Errorf("%q: finish released %q", c.deltas, rest)
			}
		}
		if got := errors.Is(err, errWarning); got != c.warn {
			t.Errorf("%q: warning %v, want %v", c.deltas, got, c.warn)
		}
		if out.String() != c.want {
			t.Errorf("%q: released %q, want %q", c.deltas, out.String(), c.want)
		}
	}
}

func TestParseRunEvent(t *testing.T) {
	cases := []struct {
		data string
		kind stepKind
		text string
	}{
		{`{"event":"message.delta","run_id":"r","delta":"Hi "}`, stepText, "Hi "},
		{`{"event":"tool.started","tool":"terminal","preview":"sleep 3"}`, stepProgress, "sleep 3"},
		{`{"event":"tool.started","tool":"_hidden"}`, stepIgnore, ""},
		{`{"event":"tool.completed","tool":"terminal","error":false}`, stepIgnore, ""},
		{`{"event":"reasoning.available","text":"secret thoughts"}`, stepIgnore, ""},
		{`{"event":"run.failed","error":"boom"}`, stepFailed, "boom"},
		{`{"event":"run.failed","error":{"message":"bang"}}`, stepFailed, "bang"},
		{`{"event":"run.cancelled"}`, stepCancelled, ""},
		{`{"event":"some.future.event","x":1}`, stepIgnore, ""},
	}
	for _, c := range cases {
		st, err := parseRunEvent("", []byte(c.data))
		if err != nil || st.Kind != c.kind || st.Text != c.text {
			t.Errorf("%s: %+v, %v; want kind %d text %q", c.data, st, err, c.kind, c.text)
		}
	}
	st, err := parseRunEvent("", []byte(`{"event":"run.completed","output":"Done.","usage":{"input_tokens":100,"output_tokens":10,"total_tokens":110}}`))
	if err != nil || st.Kind != stepDone || st.Output != "Done." || st.Usage != 110 {
		t.Errorf("run.completed: %+v, %v", st, err)
	}
	if _, err := parseRunEvent("", []byte(`not json`)); err == nil {
		t.Error("malformed event: no error")
	}
}

// FuzzRunEvents feeds arbitrary bytes through the event-stream reader and the runs event
// parser: no panic, no unbounded event, and every text or progress step carries text.
func FuzzRunEvents(f *testing.F) {
	f.Add([]byte("data: {\"event\":\"message.delta\",\"run_id\":\"run_1\",\"delta\":\"Hello \"}\n\n: keepalive\n\ndata: {\"event\":\"run.completed\",\"output\":\"Hello\",\"usage\":{\"total_tokens\":3}}\n\n: stream closed\n\n"))
	f.Add([]byte("data: {\"event\":\"tool.started\",\"tool\":\"terminal\",\"preview\":\"ls\"}\r\n\r\ndata: {\"event\":\"run.failed\",\"error\":{\"message\":\"x\"}}\r\n\r\n"))
	f.Add([]byte("data: {\"event\":\"message.delta\",\"delta\":\"\\u26a0\\ufe0f Provider\"}\n\n"))
	f.Add([]byte("event: hermes.tool.progress\ndata: {\"tool\":\"web\",\"label\":\"search\",\"status\":\"running\"}\n\n"))
	f.Add([]byte("data: [DONE]\n\ndata: {\n\n\xef\xbb\xbfdata"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := sse.NewReader(bytes.NewReader(b))
		for i := 0; i < 10000; i++ {
			ev, err := r.Next()
			if err != nil {
				return
			}
			if len(ev.Data) > sse.MaxEvent {
				t.Fatalf("event of %d bytes", len(ev.Data))
			}
			for _, parse := range []func(string, []byte) (step, error){parseRunEvent, parseChatEvent} {
				st, err := parse(ev.Type, []byte(ev.Data))
				if err != nil {
					continue
				}
				if (st.Kind == stepText || st.Kind == stepProgress) && st.Text == "" {
					t.Fatalf("%q: step %+v without text", ev.Data, st)
				}
				var g gate
				_, _ = g.add(st.Text)
				_, _ = g.finish()
			}
		}
		t.Fatal("reader did not end")
	})
}

// An error answer quoting a huge message (a runtime echoing the request) is cut to a few
// hundred bytes, on a rune, in every shape Hermes answers.
func TestErrorMessageIsBounded(t *testing.T) {
	huge := strings.Repeat("é", 50_000)
	for _, body := range []string{
		`{"error":{"message":"` + huge + `","code":"` + huge + `"}}`,
		`{"error":{"message":"` + huge + `"}}`,
		`{"error":"` + huge + `"}`,
		huge,
	} {
		msg := errorMessage([]byte(body))
		if len(msg) > 300 || !strings.Contains(msg, "é…") || !utf8.ValidString(msg) {
			t.Errorf("errorMessage(%.40s…) is %d bytes: %.80q", body, len(msg), msg)
		}
	}
}
