package dial

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseSipfrag(t *testing.T) {
	for _, tc := range []struct {
		body   string
		status int
		phrase string
		ok     bool
	}{
		{"SIP/2.0 200 OK\r\n", 200, "OK", true},
		{"SIP/2.0 486 Busy Here\r\nContent-Length: 0\r\n", 486, "Busy Here", true},
		{"SIP/2.0 100 Trying", 100, "Trying", true},
		{"SIP/2.0 183", 183, "", true},
		{"HTTP/1.1 200 OK\r\n", 0, "", false},
		{"SIP/2.0 2000 OK\r\n", 0, "", false},
		{"SIP/2.0 099 Low\r\n", 0, "", false},
		{"SIP/2.0 abc\r\n", 0, "", false},
		{"", 0, "", false},
		{"SIP/2.0 200 " + strings.Repeat("x", 1000), 200, strings.Repeat("x", 64) + "…", true},
	} {
		status, phrase, ok := ParseSipfrag([]byte(tc.body))
		if status != tc.status || phrase != tc.phrase || ok != tc.ok {
			t.Errorf("ParseSipfrag(%.30q) = %d %q %v, want %d %q %v", tc.body, status, phrase, ok, tc.status, tc.phrase, tc.ok)
		}
	}
}

// A NOTIFY body is the callee's to write: whatever it holds, the parser returns a status
// in range and a phrase without control characters, bounded, or refuses it.
func FuzzParseSipfrag(f *testing.F) {
	for _, seed := range []string{"SIP/2.0 200 OK\r\n", "SIP/2.0 486 Busy Here\r\n\r\n", "SIP/2.0 1", "SIP/2.0  200", "\x00\r\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		status, phrase, ok := ParseSipfrag(body)
		if !ok {
			if status != 0 || phrase != "" {
				t.Fatalf("refused with %d %q", status, phrase)
			}
			return
		}
		if status < 100 || status > 699 || len(phrase) > maxPhrase+len("…") || !utf8.ValidString(phrase) || strings.ContainsFunc(phrase, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			t.Fatalf("ParseSipfrag(%q) = %d %q", body, status, phrase)
		}
	})
}
