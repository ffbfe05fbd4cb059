package media

// sendQueue is the audio the call queued ahead of the send clock and the marks between it.
// Positions count bytes ever queued: a mark is due once the bytes before it were consumed
// (sent on the clock, or dropped by a clear), which keeps marks in order and each reported
// once without any per-mark state but its position. Storage is fixed at its capacity, so
// queueing and sending allocate nothing. Not safe for concurrent use; the session guards it.
type sendQueue struct {
	buf      []byte
	head     int    // index of the oldest queued byte
	size     int    // bytes queued
	queued   uint64 // bytes ever queued
	consumed uint64 // bytes ever sent or dropped

	marks     []queuedMark // marks[markHead:] are pending, oldest first
	markHead  int
	reporting []string // the due names handed out by due, reused
}

type queuedMark struct {
	name string
	at   uint64 // queued count when the mark was sent
}

func newSendQueue(capacity int) *sendQueue {
	return &sendQueue{buf: make([]byte, capacity)}
}

// push appends audio; false (nothing queued) when it would not fit.
func (q *sendQueue) push(audio []byte) bool {
	if len(audio) > len(q.buf)-q.size {
		return false
	}
	tail := (q.head + q.size) % len(q.buf)
	n := copy(q.buf[tail:], audio)
	copy(q.buf, audio[n:])
	q.size += len(audio)
	q.queued += uint64(len(audio))
	return true
}

// frame fills dst with the next len(dst) bytes, padding with silence when fewer are queued,
// and reports whether any audio was taken.
func (q *sendQueue) frame(dst []byte, silence byte) bool {
	n := min(len(dst), q.size)
	if n == 0 {
		fill(dst, silence)
		return false
	}
	first := copy(dst[:n], q.buf[q.head:])
	copy(dst[first:n], q.buf)
	fill(dst[n:], silence)
	q.head = (q.head + n) % len(q.buf)
	q.size -= n
	q.consumed += uint64(n)
	return true
}

// drop discards the queued audio; the marks after it become due.
func (q *sendQueue) drop() {
	q.consumed += uint64(q.size)
	q.head, q.size = 0, 0
}

// mark records name after everything queued so far; false when MaxMarks are pending.
func (q *sendQueue) mark(name string) bool {
	if len(q.marks)-q.markHead >= MaxMarks {
		return false
	}
	if q.markHead > 0 && len(q.marks) == cap(q.marks) {
		// Move the pending marks to the front rather than grow: the storage is reused.
		n := copy(q.marks, q.marks[q.markHead:])
		clear(q.marks[n:]) // release the reported names
		q.marks, q.markHead = q.marks[:n], 0
	}
	q.marks = append(q.marks, queuedMark{name: name, at: q.queued})
	return true
}

// due returns the marks whose audio has all been consumed, in order, and forgets them.
// The slice is valid until the next call.
func (q *sendQueue) due() []string {
	q.reporting = q.reporting[:0]
	for q.markHead < len(q.marks) && q.marks[q.markHead].at <= q.consumed {
		q.reporting = append(q.reporting, q.marks[q.markHead].name)
		q.markHead++
	}
	return q.reporting
}
