package store

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestSearchWords(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"  ...  ", nil},
		{`"*-:()`, nil},
		{"Refund please", []string{"refund", "please"}},
		{`"foo* NEAR(-bar:baz`, []string{"foo", "near", "bar", "baz"}},
		{"Café crème, 42", []string{"café", "crème", "42"}},
		{"don't", []string{"don", "t"}},
		{"a b c d e f g h i j", []string{"a", "b", "c", "d", "e", "f", "g", "h"}},
	}
	for _, tc := range cases {
		if d := cmp.Diff(tc.want, SearchWords(tc.text), cmpopts.EquateEmpty()); d != "" {
			t.Errorf("SearchWords(%q) (-want +got):\n%s", tc.text, d)
		}
	}
}

func TestSearchWordsBounded(t *testing.T) {
	long := strings.Repeat("é", MaxSearchText) // two bytes each: the cut falls inside a rune
	got := SearchWords(long)
	if len(got) != 1 || len(got[0]) > MaxSearchText || !strings.HasPrefix(long, got[0]) {
		t.Fatalf("SearchWords(%d bytes) = %d words, first %d bytes", len(long), len(got), len(got[0]))
	}
	if strings.ContainsRune(got[0], '\uFFFD') {
		t.Errorf("the cut split a rune: %q", got[0][len(got[0])-4:])
	}
}

func TestListLimit(t *testing.T) {
	for _, tc := range []struct{ n, def, want int }{{0, 50, 50}, {-3, 50, 50}, {7, 50, 7}, {MaxListCalls + 1, 50, MaxListCalls}} {
		if got := ListLimit(tc.n, tc.def); got != tc.want {
			t.Errorf("ListLimit(%d, %d) = %d, want %d", tc.n, tc.def, got, tc.want)
		}
	}
}
