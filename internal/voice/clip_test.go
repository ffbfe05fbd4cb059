package voice

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven " + Ellipsis},
		{"ab", 2, "ab"},
		{"abcd", 3, Ellipsis},
		{"abcd", 2, ""},
		// "é" is two bytes: a cut that would split it keeps the whole rune out
		{"aaaaééé", 8, "aaaa" + Ellipsis},
		{"aaaaaéé", 8, "aaaaa" + Ellipsis},
		// a four-byte rune
		{"a😀😀", 7, "a" + Ellipsis},
		{"a😀😀", 8, "a😀" + Ellipsis},
	}
	for _, c := range cases {
		if got := Clip(c.in, c.max); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

// Whatever the input, the result fits, is valid UTF-8 when the input is, and is a prefix
// of the input followed by the ellipsis when cut.
func TestClipBoundsEveryInput(t *testing.T) {
	big := strings.Repeat("ab€😀", 30000) // 100 KB and more, runes of 1 to 4 bytes
	for _, max := range []int{3, 4, 5, 6, 7, 100, EchoLimit, MessageLimit, TranscriptLimit} {
		for off := range 4 {
			in := big[off:]
			got := Clip(in, max)
			if len(got) > max {
				t.Fatalf("Clip(…, %d) is %d bytes", max, len(got))
			}
			prefix, ok := strings.CutSuffix(got, Ellipsis)
			if !ok || !strings.HasPrefix(in, prefix) {
				t.Fatalf("Clip(…, %d) = %q: not a prefix and an ellipsis", max, got)
			}
			if off == 0 && !utf8.ValidString(got) {
				t.Fatalf("Clip(…, %d) cut a rune: %q", max, got)
			}
		}
	}
}

func TestClipDoesNotAllocateShortText(t *testing.T) {
	s := strings.Repeat("x", EchoLimit)
	if n := testing.AllocsPerRun(100, func() { _ = Clip(s, EchoLimit) }); n != 0 {
		t.Errorf("Clip of a short text allocates %v times", n)
	}
}

// A provider's error quoting a huge answer stays a bounded message.
func TestProviderErrorBoundsItsCause(t *testing.T) {
	err := &ProviderError{Provider: "hermes", Op: "chat", Kind: KindTransient, Status: 500,
		Err: errors.New(strings.Repeat("x", 100_000))}
	msg := err.Error()
	if len(msg) > MessageLimit+100 || !strings.HasPrefix(msg, "hermes: chat: HTTP 500: xxx") || !strings.HasSuffix(msg, Ellipsis+" (transient)") {
		t.Errorf("error is %d bytes: %.80q…%q", len(msg), msg, msg[max(0, len(msg)-40):])
	}
}
