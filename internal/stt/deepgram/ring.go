package deepgram

// ring is a bounded byte FIFO that keeps the newest bytes: a write that does not fit in
// limit bytes drops the oldest. Offsets are absolute (bytes ever written), so the writer
// can name a point in the audio across drops. Its buffer starts small and doubles when
// more is held, up to limit: a call holds what its audio needs (a second or two of an
// utterance), not the worst case, and a ring that has grown never allocates again. Not safe
// for concurrent use.
type ring struct {
	buf   []byte
	limit int
	r, n  int   // read index and length
	head  int64 // absolute offset of buf[r]
}

// initialRing is a ring's first buffer: 500 ms of 8 kHz mu-law.
const initialRing = 4000

func newRing(limit int) ring { return ring{buf: make([]byte, min(limit, initialRing)), limit: limit} }

// grow makes room for need bytes, doubling the buffer up to the limit; the held bytes
// keep their order at the start of the new buffer.
func (q *ring) grow(need int) {
	size := len(q.buf)
	for size < need && size < q.limit {
		size = min(2*size, q.limit)
	}
	if size == len(q.buf) {
		return
	}
	buf := make([]byte, size)
	q.copyFrom(q.head, buf[:q.n])
	q.buf, q.r = buf, 0
}

func (q *ring) len() int { return q.n }

// tail is the absolute offset just past the newest byte.
func (q *ring) tail() int64 { return q.head + int64(q.n) }

// write appends p, dropping the oldest bytes to make room; it returns how many it dropped.
func (q *ring) write(p []byte) (dropped int) {
	if q.n+len(p) > len(q.buf) {
		q.grow(q.n + len(p))
	}
	size := len(q.buf)
	if size == 0 {
		q.head += int64(len(p))
		return len(p)
	}
	if len(p) > size {
		dropped = q.n + len(p) - size
		q.head += int64(q.n + len(p) - size)
		q.r, q.n = 0, 0
		p = p[len(p)-size:]
	} else if over := q.n + len(p) - size; over > 0 {
		q.discard(over)
		dropped = over
	}
	w := (q.r + q.n) % size
	c := copy(q.buf[w:], p)
	copy(q.buf, p[c:])
	q.n += len(p)
	return dropped
}

// read moves up to len(p) of the oldest bytes into p.
func (q *ring) read(p []byte) int {
	n := q.copyFrom(q.head, p)
	q.discard(n)
	return n
}

// discard drops the n oldest bytes (at most all of them).
func (q *ring) discard(n int) {
	n = min(n, q.n)
	if n <= 0 {
		return
	}
	q.r = (q.r + n) % len(q.buf)
	q.n -= n
	q.head += int64(n)
}

// discardTo drops every byte before absolute offset off.
func (q *ring) discardTo(off int64) {
	if off > q.head {
		q.discard(int(min(off-q.head, int64(q.n))))
	}
}

// copyFrom copies bytes starting at absolute offset off into p without consuming them.
// An offset before head starts at head; it returns how many bytes it copied.
func (q *ring) copyFrom(off int64, p []byte) int {
	off = max(off, q.head)
	skip := off - q.head
	if skip >= int64(q.n) {
		return 0
	}
	avail := q.n - int(skip)
	n := min(len(p), avail)
	start := (q.r + int(skip)) % len(q.buf)
	c := copy(p[:n], q.buf[start:])
	copy(p[c:n], q.buf)
	return n
}
