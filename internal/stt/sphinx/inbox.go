package sphinx

// inbox is a stream's queue from Write and Finalize to its goroutine: audio bytes in the
// stream's format, with Finalize marks at the offsets where they were called. It holds at
// most limit bytes; a push beyond drops the oldest audio (marks stay: a Finalize whose
// audio was dropped still ends the utterance). It grows on demand up to limit. The
// stream's mutex guards it.
type inbox struct {
	buf   []byte
	head  int     // buf[head:] is queued
	base  int64   // stream offset of buf[head]
	limit int     // most bytes queued
	align int     // bytes per sample: drops never split one
	marks []int64 // Finalize offsets, ascending
}

func newInbox(limit, align int) inbox {
	limit = max(limit, align)
	return inbox{limit: limit - limit%align, align: align}
}

func (q *inbox) len() int { return len(q.buf) - q.head }

// push queues p and returns how many bytes it dropped to make room.
func (q *inbox) push(p []byte) (dropped int) {
	if over := q.len() + len(p) - q.limit; over > 0 {
		if r := (q.base + int64(over)) % int64(q.align); r != 0 { // keep base on a sample boundary
			over += q.align - int(r)
		}
		if n := min(over, q.len()); n > 0 {
			q.head += n
			q.base += int64(n)
			over -= n
			dropped += n
		}
		if over > 0 { // p alone is larger than the queue: keep its newest bytes
			over = min(over, len(p))
			p = p[over:]
			q.base += int64(over)
			dropped += over
		}
	}
	if q.head > 0 && len(q.buf)+len(p) > cap(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, p...)
	return dropped
}

// mark records a Finalize after the audio queued so far.
func (q *inbox) mark() { q.marks = append(q.marks, q.base+int64(q.len())) }

// take copies the next audio into dst, stopping at the next mark, and returns how many
// bytes it copied. When a mark is next it consumes it instead and reports fin.
func (q *inbox) take(dst []byte) (n int, fin bool) {
	if len(q.marks) > 0 && q.marks[0] <= q.base {
		q.marks = q.marks[1:]
		return 0, true
	}
	avail := q.len()
	if len(q.marks) > 0 {
		avail = min(avail, int(q.marks[0]-q.base))
	}
	n = copy(dst[:min(len(dst), avail)], q.buf[q.head:])
	q.head += n
	q.base += int64(n)
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return n, false
}

// empty reports whether nothing, audio or mark, is queued.
func (q *inbox) empty() bool { return q.len() == 0 && len(q.marks) == 0 }
