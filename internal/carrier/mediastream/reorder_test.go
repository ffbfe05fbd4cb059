package mediastream

import (
	"fmt"
	"slices"
	"testing"
)

// run pushes frames whose one byte is their sequence number, and returns the bytes emitted.
func run(r *Reorder, seqs ...uint64) (out []byte, dropped int) {
	emit := func(f []byte) { out = append(out, f...) }
	for _, s := range seqs {
		if r.Push(s, []byte{byte(s)}, emit) {
			dropped++
		}
	}
	return out, dropped
}

func TestReorder(t *testing.T) {
	tests := []struct {
		name          string
		in            []uint64
		want          []byte
		dropped       int
		skipped       uint64
		flushedAtLast []byte
	}{
		{"in order", []uint64{5, 6, 7, 8}, []byte{5, 6, 7, 8}, 0, 0, nil},
		{"two swapped", []uint64{1, 3, 2, 4}, []byte{1, 2, 3, 4}, 0, 0, nil},
		{"late by two", []uint64{1, 3, 4, 2, 5}, []byte{1, 2, 3, 4, 5}, 0, 0, nil},
		{"duplicate passed", []uint64{1, 2, 2, 3}, []byte{1, 2, 3}, 1, 0, nil},
		{"duplicate held", []uint64{1, 3, 3, 2}, []byte{1, 2, 3}, 1, 0, nil},
		{"older than passed", []uint64{4, 5, 1}, []byte{4, 5}, 1, 0, nil},
		{"a gap passes after the window", []uint64{1, 3, 4, 5, 6}, []byte{1, 3, 4, 5, 6}, 0, 1, nil},
		{"the lost frame arrives too late", []uint64{1, 3, 4, 5, 2, 6}, []byte{1, 3, 4, 5, 6}, 1, 1, nil},
		{"a wide gap", []uint64{1, 9, 7, 8, 10}, []byte{1, 7, 8, 9, 10}, 0, 5, nil},
		{"held frames flushed at the end", []uint64{1, 3, 5}, []byte{1}, 0, 2, []byte{3, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Reorder
			got, dropped := run(&r, tt.in...)
			var flushed []byte
			r.Flush(func(f []byte) { flushed = append(flushed, f...) })
			if !slices.Equal(got, tt.want) || dropped != tt.dropped || !slices.Equal(flushed, tt.flushedAtLast) || r.Skipped() != tt.skipped {
				t.Errorf("emitted %v (dropped %d, flushed %v, skipped %d); want %v (%d, %v, %d)",
					got, dropped, flushed, r.Skipped(), tt.want, tt.dropped, tt.flushedAtLast, tt.skipped)
			}
		})
	}
}

// A frame in order is handed on as it is, not copied; a held one is a copy, so the caller
// may reuse its read buffer at once.
func TestReorderCopiesOnlyWhatItHolds(t *testing.T) {
	var r Reorder
	buf := []byte{0}
	var got [][]byte
	emit := func(f []byte) { got = append(got, f) }
	r.Push(1, buf, emit)
	if &got[0][0] != &buf[0] {
		t.Error("an in-order frame was copied")
	}
	buf[0] = 3
	r.Push(3, buf, emit)
	buf[0] = 2
	r.Push(2, buf, emit)
	if len(got) != 3 || got[2][0] != 3 || &got[2][0] == &buf[0] {
		t.Errorf("the held frame: %v", got)
	}
}

// Once warm, reordering allocates nothing, in order or not.
func TestReorderAllocatesNothing(t *testing.T) {
	var r Reorder
	frame := make([]byte, 160)
	emitted := 0
	emit := func([]byte) { emitted++ }
	r.Push(0, frame, emit) // the first frame sets where the stream starts
	seq := uint64(1)
	step := func() {
		r.Push(seq+1, frame, emit) // ahead of a gap: held
		r.Push(seq, frame, emit)   // fills it
		r.Push(seq+2, frame, emit)
		r.Push(seq+2, frame, emit) // a duplicate
		seq += 3
	}
	step()
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("allocates %v times per step", n)
	}
	if want := 1 + 3*1002; emitted != want {
		t.Errorf("emitted %d frames, want %d", emitted, want)
	}
}

// FuzzReorder: whatever the order, every frame is emitted once at most, in increasing order.
func FuzzReorder(f *testing.F) {
	f.Add([]byte{1, 3, 2, 4, 4, 9, 5})
	f.Fuzz(func(t *testing.T, seqs []byte) {
		var r Reorder
		var out []byte
		emit := func(fr []byte) { out = append(out, fr...) }
		for _, s := range seqs {
			r.Push(uint64(s), []byte{s}, emit)
		}
		r.Flush(emit)
		for i := 1; i < len(out); i++ {
			if out[i] <= out[i-1] {
				t.Fatalf("%v emitted %v", seqs, out)
			}
		}
		if len(seqs) > 0 && (len(out) == 0 || out[0] != seqs[0]) {
			t.Fatalf("%v emitted %v: the first frame sets the start", seqs, fmt.Sprint(out))
		}
	})
}

func BenchmarkReorder(b *testing.B) {
	var r Reorder
	frame := make([]byte, 160)
	emit := func([]byte) {}
	var seq uint64
	b.ReportAllocs()
	b.SetBytes(3 * 160)
	for b.Loop() {
		r.Push(seq, frame, emit)   // in order
		r.Push(seq+2, frame, emit) // held
		r.Push(seq+1, frame, emit) // fills the gap
		seq += 3
	}
}
