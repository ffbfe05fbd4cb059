package mediastream

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func sendAll(t testing.TB, b *MarkBook, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := b.Sent(n); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMarkBookPlayed(t *testing.T) {
	var b MarkBook
	sendAll(t, &b, "t1-s1", "t1-s2", "t1-s3", "t1-s4")
	steps := []struct {
		echo  string
		want  []string
		known bool
	}{
		{"t1-s1", []string{"t1-s1"}, true},
		{"t1-s3", []string{"t1-s2", "t1-s3"}, true}, // the carrier skipped s2's echo
		{"t1-s2", nil, true},                        // a late echo of a reported mark
		{"t1-s3", nil, true},                        // a repeated echo
		{"nobody", nil, false},                      // never sent
		{"t1-s4", []string{"t1-s4"}, true},
	}
	for _, s := range steps {
		got, known := b.Played(s.echo)
		if !slices.Equal(got, s.want) || known != s.known {
			t.Errorf("Played(%s) = %v, %v; want %v, %v", s.echo, got, known, s.want, s.known)
		}
	}
	if b.Outstanding() != 0 {
		t.Errorf("outstanding %d after every echo", b.Outstanding())
	}
}

func TestMarkBookCleared(t *testing.T) {
	var b MarkBook
	sendAll(t, &b, "a", "b", "c")
	b.Played("a")
	if got := b.Cleared(); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("Cleared = %v, want [b c]", got)
	}
	if got := b.Cleared(); len(got) != 0 {
		t.Errorf("a second Cleared = %v", got)
	}
	// Twilio echoes every pending mark on a clear: those echoes were reported already.
	for _, n := range []string{"b", "c"} {
		if got, known := b.Played(n); got != nil || !known {
			t.Errorf("echo of cleared %s: %v, %v", n, got, known)
		}
	}
	sendAll(t, &b, "d")
	if got, _ := b.Played("d"); !slices.Equal(got, []string{"d"}) {
		t.Errorf("next turn: %v", got)
	}
}

// A long call reuses the book's storage: the oldest reported names are forgotten (their
// late echoes become unknown), the recent ones still known.
func TestMarkBookReusesStorage(t *testing.T) {
	var b MarkBook
	for turn := range 200 {
		for s := range 3 {
			sendAll(t, &b, fmt.Sprintf("t%d-s%d", turn, s))
		}
		if got, _ := b.Played(fmt.Sprintf("t%d-s2", turn)); len(got) != 3 {
			t.Fatalf("turn %d reported %v", turn, got)
		}
	}
	if cap(b.names) > 4*keptReported {
		t.Errorf("storage grew to %d names over 600 marks", cap(b.names))
	}
	if _, known := b.Played("t199-s0"); !known {
		t.Error("a recent late echo is unknown")
	}
	if _, known := b.Played("t0-s0"); known {
		t.Error("the first mark of a long call is still remembered")
	}
}

func TestMarkBookBound(t *testing.T) {
	var b MarkBook
	for i := range MaxOutstandingMarks {
		sendAll(t, &b, fmt.Sprint(i))
	}
	if err := b.Sent("one more"); !errors.Is(err, ErrTooManyMarks) {
		t.Errorf("mark %d: %v", MaxOutstandingMarks+1, err)
	}
	if got := b.Cleared(); len(got) != MaxOutstandingMarks {
		t.Errorf("cleared %d", len(got))
	}
	if err := b.Sent("after the clear"); err != nil {
		t.Errorf("after a clear: %v", err)
	}
}

// Once warm, a turn of marks allocates nothing.
func TestMarkBookAllocatesNothing(t *testing.T) {
	var b MarkBook
	names := []string{"t-s1", "t-s2", "t-s3", "t-s4"}
	turn := func() {
		for _, n := range names {
			_ = b.Sent(n)
		}
		b.Played("t-s2")
		b.Played("nobody")
		b.Cleared()
	}
	for range 100 {
		turn()
	}
	if n := testing.AllocsPerRun(1000, turn); n != 0 {
		t.Errorf("a turn allocates %v times", n)
	}
}

func BenchmarkMarkBook(b *testing.B) {
	var book MarkBook
	names := []string{"t-s1", "t-s2", "t-s3", "t-s4"}
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range names {
			_ = book.Sent(n)
		}
		book.Played("t-s1")
		book.Played("t-s3")
		book.Cleared()
	}
}
