package media

import "testing"

func TestSequenceClassifiesAcrossWraparound(t *testing.T) {
	var q sequence
	steps := []struct {
		ssrc uint32
		seq  uint16
		want seqVerdict
	}{
		{1, 65534, seqRestart},
		{1, 65535, seqNewest},
		{1, 1, seqNewest}, // 0 is lost, across the wrap
		{1, 0, seqReordered},
		{1, 0, seqDuplicate},
		{1, 65535, seqDuplicate},
		{1, 2, seqNewest},
		{1, 2, seqDuplicate},
		{1, 40000, seqRestart}, // a jump
		{1, 40001, seqNewest},
		{2, 40002, seqRestart}, // a new SSRC
	}
	for i, s := range steps {
		if got := q.update(s.ssrc, s.seq); got != s.want {
			t.Fatalf("step %d (ssrc %d seq %d): verdict %d, want %d", i, s.ssrc, s.seq, got, s.want)
		}
	}
	if q.lost() != 0 {
		t.Fatalf("lost %d, want 0: the one gap was filled late", q.lost())
	}
}

func TestSequenceCountsLossOverRestarts(t *testing.T) {
	var q sequence
	for _, s := range []uint16{10, 11, 14, 15} { // 12, 13 lost
		q.update(7, s)
	}
	q.update(8, 100) // a new stream keeps the count
	q.update(8, 102) // 101 lost
	if q.lost() != 3 {
		t.Fatalf("lost %d, want 3", q.lost())
	}
}

func TestSequenceFarReorderIsDuplicateOrOld(t *testing.T) {
	var q sequence
	for s := range uint16(100) {
		q.update(1, s)
	}
	// 79 behind: past the 64-packet window, so a duplicate there cannot be told from a
	// late first copy; the jitter buffer drops it as late either way.
	if got := q.update(1, 20); got != seqReordered {
		t.Fatalf("seq 20 after 99: verdict %d, want reordered", got)
	}
	var r sequence
	r.update(1, 1000)
	for s := uint16(1001); s < 1080; s++ {
		r.update(1, s)
	}
	if got := r.update(1, 990); got != seqDuplicate {
		t.Fatalf("a number from before the stream began: verdict %d, want duplicate", got)
	}
}
