package media

// sendQueue is the audio the call queued ahead of the send clock and the marks between it.
// Positions count bytes ever queued: a mark is due once the bytes before it were consumed
// (sent on the clock, or dropped by a clear), which keeps marks in order and each reported
// once without any per-mark state but its position. Storage is made when audio first
// comes and doubles when audio does not fit, up to the limit: a call's playout keeps a
// few hundred ms queued, and 2 s of storage for every call would be most of its media's
// memory. While audio flows the storage stays, so a steady call's queueing and sending
// allocate nothing; a queue left empty for a second (the call is listening, not
// speaking) lets it go. Not safe for concurrent use; the session guards it.
type sendQueue struct {
	buf      []byte
	limit    int    // the most bytes ever queued at once
	head     int    // index of the oldest queued byte
	size     int    // bytes queued
	queued   uint64 // bytes ever queued
	consumed uint64 // bytes ever sent or dropped

	// talking: the last frame taken was all audio. markedAt is queued at the latest mark.
	// A frame found empty while talking, where no mark was queued, is an underrun: the
	// queue ran dry inside a sentence, and the caller hears a frame of silence in it.
	talking   bool
	markedAt  uint64
	underruns uint64
	idle      int // frames taken from an empty queue in a row (see releaseAfter)

	marks     []queuedMark // marks[markHead:] are pending, oldest first
	markHead  int
	reporting []string // the due names handed out by due, reused
}

type queuedMark struct {
	name string
	at   uint64 // queued count when the mark was sent
}

// initialQueue is the send queue's first storage: 320 ms of 8 kHz G.711 (160 ms of
// wideband), a little more than the call's playout keeps ahead of the clock.
const initialQueue = 2560

// releaseAfter is how many frames a queue stays empty before it lets its storage go: a
// second, longer than any pause inside a reply, so storage is made once a reply, not
// once a sentence. Between replies a call is listening, and hundreds of listening calls
// need not hold 2.5 KB each.
const releaseAfter = 50

func newSendQueue(limit int) *sendQueue {
	q := &sendQueue{}
	q.setLimit(limit)
	return q
}

// setLimit empties the queue's storage for a new limit (a new codec's bytes for the same
// duration). Only an empty queue may be given one.
func (q *sendQueue) setLimit(limit int) {
	q.limit = limit
	q.buf, q.head = nil, 0 // made for the new limit when audio comes
}

// push appends audio; false (nothing queued) when it would pass the limit.
func (q *sendQueue) push(audio []byte) bool {
	if len(audio) > q.limit-q.size {
		return false
	}
	if len(audio) == 0 {
		return true
	}
	if len(audio) > len(q.buf)-q.size {
		q.grow(q.size + len(audio))
	}
	tail := (q.head + q.size) % len(q.buf)
	n := copy(q.buf[tail:], audio)
	copy(q.buf, audio[n:])
	q.size += len(audio)
	q.queued += uint64(len(audio))
	return true
}

// grow moves the queued bytes to the front of new storage of at least need bytes.
func (q *sendQueue) grow(need int) {
	buf := make([]byte, min(q.limit, max(need, 2*len(q.buf), initialQueue)))
	first := copy(buf[:q.size], q.buf[q.head:])
	copy(buf[first:q.size], q.buf)
	q.buf, q.head = buf, 0
}

// frame fills dst with the next len(dst) bytes, padding with silence when fewer are queued,
// and reports whether any audio was taken.
func (q *sendQueue) frame(dst []byte, silence byte) bool {
	n := min(len(dst), q.size)
	if n == 0 {
		if q.talking && q.markedAt != q.consumed {
			q.underruns++
		}
		q.talking = false
		if q.idle++; q.idle == releaseAfter {
			q.buf, q.head = nil, 0
		}
		fill(dst, silence)
		return false
	}
	q.idle = 0
	q.talking = n == len(dst)
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
	q.talking = false
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
	q.markedAt = q.queued
	return true
}

// due returns the marks whose audio has all been consumed, in order, and forgets them.
// The slice is valid until the next call.
func (q *sendQueue) due() []string {
	clear(q.reporting) // the last call's names: let them go
	q.reporting = q.reporting[:0]
	for q.markHead < len(q.marks) && q.marks[q.markHead].at <= q.consumed {
		q.reporting = append(q.reporting, q.marks[q.markHead].name)
		q.markHead++
	}
	if q.markHead > 0 && q.markHead == len(q.marks) {
		// Every mark reported: keep no names, and reuse the storage from its start.
		clear(q.marks)
		q.marks, q.markHead = q.marks[:0], 0
	}
	return q.reporting
}
