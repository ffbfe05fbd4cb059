package echo

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// referenceLocked's copies (one run, or two where the ring wraps) give what reading the
// ring sample by sample gives: positions never placed, overwritten or after the end are
// silence.
func TestReferenceWindowsMatchTheRing(t *testing.T) {
	l, err := NewLine(8000, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	size := int64(len(l.ref))
	var at int64
	for step := range 3000 {
		pcm := make([]int16, 1+rng.IntN(400))
		for i := range pcm {
			pcm[i] = int16(rng.IntN(65536) - 32768)
		}
		at += int64(rng.IntN(500)) // now and then a gap the carrier fills with silence
		l.Played(at, pcm)
		at += int64(len(pcm))
		if rng.IntN(10) == 0 {
			l.Cleared(l.refEnd - int64(rng.IntN(300)))
		}
		from := l.refEnd - int64(rng.IntN(int(size)+2000)) + 1000
		got := make([]int16, 1+rng.IntN(700))
		l.referenceLocked(got, from)
		want := make([]int16, len(got))
		for i := range want {
			if p := from + int64(i); p >= 0 && p >= l.refEnd-size && p < l.refEnd {
				want[i] = l.ref[p&(size-1)]
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: window of %d from %d (ring ends at %d) differs from the ring's samples", step, len(got), from, l.refEnd)
		}
	}
}
