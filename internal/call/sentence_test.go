package call

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSentenceChunker(t *testing.T) {
	tests := []struct {
		name   string
		tokens []string
		want   []string
	}{
		{"two sentences streamed", []string{"I heard", " you say", ": hello", ". What", " else?"},
			[]string{"I heard you say: hello.", "What else?"}},
		{"decimal is not an end", []string{"It costs 3.5 dollars today. Yes."},
			[]string{"It costs 3.5 dollars today.", "Yes."}},
		{"abbreviation", []string{"Ask Dr. Smith about it. Then call."},
			[]string{"Ask Dr. Smith about it.", "Then call."}},
		{"tiny first piece joins the next", []string{"Hi. How are you today?"},
			[]string{"Hi. How are you today?"}},
		{"newline ends a sentence", []string{"First line\nsecond line"},
			[]string{"First line", "second line"}},
		{"question and exclamation", []string{"Really?! That is great! Okay then."},
			[]string{"Really?!", "That is great!", "Okay then."}},
		{"unpunctuated text is cut at length", []string{strings.Repeat("word ", 60)},
			[]string{strings.TrimSpace(strings.Repeat("word ", 48))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c sentenceChunker
			var got []string
			for _, tok := range tt.tokens {
				got = append(got, c.Add(tok)...)
			}
			if rest := c.Flush(); rest != "" {
				got = append(got, rest)
			}
			if tt.name == "unpunctuated text is cut at length" {
				got = got[:1]
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sentences (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSentenceChunkerSpeaksFirstSentenceBeforeTheEnd(t *testing.T) {
	var c sentenceChunker
	if got := c.Add("Sure, let me check that for you. "); len(got) != 1 {
		t.Fatalf("first sentence not released while more text may come: %q", got)
	}
	if got := c.Add("The weather"); len(got) != 0 {
		t.Fatalf("released an unfinished sentence: %q", got)
	}
}

// BenchmarkSentenceChunker is the chunker's work per streamed token of a typical reply.
func BenchmarkSentenceChunker(b *testing.B) {
	reply := strings.Fields("Sure, I can help with that. Your order shipped on Monday and should arrive by Thursday. " +
		"Dr. Smith will call you at 3 p.m. to confirm the address. Is there anything else I can do for you today?")
	b.ReportAllocs()
	for b.Loop() {
		var c sentenceChunker
		n := 0
		for _, w := range reply {
			n += len(c.Add(w + " "))
		}
		if n == 0 {
			b.Fatal("no sentence cut")
		}
	}
	b.ReportMetric(float64(len(reply)), "tokens/op")
}
