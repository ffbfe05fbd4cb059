package mediastream

// ReorderWindow is how many frames Reorder holds waiting for a gap to fill.
const ReorderWindow = 3

// Reorder orders media frames by sequence number for carriers that do not promise order,
// without a goroutine or an allocation once warm: a frame in order passes straight through
// (no copy), one ahead of a gap is copied aside until the gap fills or the window is full,
// a duplicate or a frame older than what passed is dropped, and a gap is given up once
// ReorderWindow frames wait behind it.
//
// The sequence numbers must count media frames only (Telnyx's chunk, not its
// sequence_number, which numbers every message): a number taken by another message would
// look like a lost frame.
type Reorder struct {
	started bool
	next    uint64 // the sequence number due
	held    [ReorderWindow]heldFrame
	nheld   int
	skipped uint64
}

// heldFrame is a frame waiting behind a gap; its buffer is reused.
type heldFrame struct {
	seq  uint64
	used bool
	buf  []byte
}

// Push takes the frame numbered seq and calls emit for every frame now due, in order
// (emit must copy what it keeps). It reports whether the frame was dropped as a duplicate
// or too late.
func (r *Reorder) Push(seq uint64, frame []byte, emit func(frame []byte)) (dropped bool) {
	if !r.started {
		r.started, r.next = true, seq
	}
	switch {
	case seq < r.next:
		return true
	case seq == r.next:
		emit(frame)
		r.next++
		r.release(emit)
		return false
	}
	for i := range r.held {
		if r.held[i].used && r.held[i].seq == seq {
			return true
		}
	}
	r.hold(seq, frame)
	if r.nheld == ReorderWindow {
		// The gap is given up: resume at the oldest frame held.
		oldest := r.oldestHeld()
		r.skipped += r.held[oldest].seq - r.next
		r.next = r.held[oldest].seq
		r.release(emit)
	}
	return false
}

// Flush emits every held frame in order (the stream ended).
func (r *Reorder) Flush(emit func(frame []byte)) {
	for r.nheld > 0 {
		oldest := r.oldestHeld()
		r.skipped += r.held[oldest].seq - r.next
		r.next = r.held[oldest].seq
		r.release(emit)
	}
}

// Skipped is how many sequence numbers were given up as lost.
func (r *Reorder) Skipped() uint64 { return r.skipped }

// hold copies frame into a free slot, reusing its buffer.
func (r *Reorder) hold(seq uint64, frame []byte) {
	for i := range r.held {
		h := &r.held[i]
		if !h.used {
			h.seq, h.used, h.buf = seq, true, append(h.buf[:0], frame...)
			r.nheld++
			return
		}
	}
}

// release emits held frames while the one due is among them.
func (r *Reorder) release(emit func(frame []byte)) {
	for r.nheld > 0 {
		found := false
		for i := range r.held {
			h := &r.held[i]
			if h.used && h.seq == r.next {
				emit(h.buf)
				h.used = false
				r.nheld--
				r.next++
				found = true
				break
			}
		}
		if !found {
			return
		}
	}
}

// oldestHeld is the slot of the held frame with the lowest sequence number (nheld > 0).
func (r *Reorder) oldestHeld() int {
	oldest := -1
	for i := range r.held {
		if r.held[i].used && (oldest < 0 || r.held[i].seq < r.held[oldest].seq) {
			oldest = i
		}
	}
	return oldest
}
