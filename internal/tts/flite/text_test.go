package flite

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestSplitTextSentences(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" \n\t \r\n ", nil},
		{"Hello.", []string{"Hello."}},
		{"Hello there. How are you? Fine!", []string{"Hello there.", "How are you?", "Fine!"}},
		{"Wait; then go: now.", []string{"Wait;", "then go:", "now."}},
		{`He said "stop." Then left.`, []string{`He said "stop."`, "Then left."}},
		// Full stops that end no sentence.
		{"Dr. Smith met Mr. Jones at St. Paul.", []string{"Dr. Smith met Mr. Jones at St. Paul."}},
		{"See e.g. this, or the U.S. Army.", []string{"See e.g. this, or the U.S. Army."}},
		{"J. R. Tolkien wrote it.", []string{"J. R. Tolkien wrote it."}},
		{"It costs 3.50 now. 12 left.", []string{"It costs 3.50 now.", "12 left."}},
		{"one. two. Three.", []string{"one. two.", "Three."}},
		// A blank line ends a paragraph; a single newline does not.
		{"first line\nsame sentence\n\nnew paragraph", []string{"first line same sentence", "new paragraph"}},
	} {
		if diff := cmp.Diff(c.want, splitText(c.in)); diff != "" {
			t.Errorf("splitText(%q) (-want +got):\n%s", c.in, diff)
		}
	}
}

func TestSplitTextCleans(t *testing.T) {
	got := splitText("bad \xff\xfe bytes\x00 and\tcontrol\x07 chars.")
	want := []string{"bad bytes and control chars."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := splitText("日本語のテキスト。 😀 ok."); len(got) != 1 || !utf8.ValidString(got[0]) {
		t.Errorf("non-Latin text: %q", got)
	}
}

func TestSplitTextBoundsChunks(t *testing.T) {
	clause := "and then the caller asked about the weather in Boston tomorrow, "
	long := "Well " + strings.Repeat(clause, 8) + "which was sunny."
	text := long + " " + long
	chunks := splitText(text)
	if strings.Join(chunks, " ") != strings.Join(strings.Fields(text), " ") {
		t.Fatalf("chunks lose or reorder words:\n%q", chunks)
	}
	for i, c := range chunks {
		limit := maxChunk
		if i == 0 {
			limit = firstChunk
		}
		if n := utf8.RuneCountInString(c); n > limit {
			t.Errorf("chunk %d has %d characters, limit %d: %q", i, n, limit, c)
		}
		if !strings.HasSuffix(c, ",") && !strings.HasSuffix(c, ".") {
			t.Errorf("chunk %d is cut neither at a comma nor a sentence end: %q", i, c)
		}
	}
	// Without a clause boundary it cuts between words; a giant word stays whole.
	words := strings.Repeat("word ", 100)
	for _, c := range splitLong(words, 50) {
		if utf8.RuneCountInString(c) > 50 || strings.HasPrefix(c, " ") || strings.HasSuffix(c, " ") {
			t.Errorf("piece %q", c)
		}
	}
	giant := strings.Repeat("x", 300)
	if got := splitLong("a "+giant+" b", 50); !cmp.Equal(got, []string{"a", giant, "b"}) {
		t.Errorf("splitLong of a giant word = %q", got)
	}
}
