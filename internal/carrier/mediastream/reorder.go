package mediastream

// ReorderWindow is how many frames Reorder holds waiting for a gap to fill.
const ReorderWindow = 3

// Reorder orders media frames by sequence number for carriers that do not promise order,
// without a goroutine or an allocation once warm: a frame in order passes straight through
// (no copy), one ahead of a gap is copied aside until the gap fills or the window is full,
// a duplicate or a frame older than what passed is dropped, and a gap is given up once
// ReorderWindow frames wait behind it.
type Reorder struct{}

// Push takes the frame numbered seq and calls emit for every frame now due, in order
// (emit must copy what it keeps). It reports whether the frame was dropped as a duplicate
// or too late.
func (r *Reorder) Push(seq uint64, frame []byte, emit func(frame []byte)) (dropped bool) {
	panic("not yet")
}

// Flush emits every held frame in order (the stream ended).
func (r *Reorder) Flush(emit func(frame []byte)) {
	panic("not yet")
}

// Skipped is how many sequence numbers were given up as lost.
func (r *Reorder) Skipped() uint64 {
	panic("not yet")
}
