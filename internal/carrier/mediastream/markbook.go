package mediastream

import "errors"

// MaxOutstandingMarks bounds the marks sent and not yet reported.
const MaxOutstandingMarks = 1024

// ErrTooManyMarks: MaxOutstandingMarks are outstanding already.
var ErrTooManyMarks = errors.New("too many marks outstanding")

// keptReported is how many reported names a book remembers, to know a late echo from a
// name it never sent.
const keptReported = 32

// MarkBook keeps the marks (checkpoints) a leg sent, in order, to turn what the carrier
// echoes into what the call needs: every mark reported once, in order. A carrier may drop
// the echo of a mark it skipped, echo every pending one on a clear (Twilio) or only those
// that played (Plivo). Its storage is reused turn after turn: no allocation once warm.
// One goroutine at a time (the leg serialises its reader and writer).
type MarkBook struct {
	// names[:done] were reported (the latest keptReported at most), names[done:] are
	// outstanding, oldest first.
	names []string
	done  int
}

// Sent records that name was sent after every mark sent before it.
func (b *MarkBook) Sent(name string) error {
	if len(b.names)-b.done >= MaxOutstandingMarks {
		return ErrTooManyMarks
	}
	if len(b.names) == cap(b.names) && b.done > keptReported {
		// Forget the oldest reported names rather than grow: the storage is reused.
		drop := b.done - keptReported
		n := copy(b.names, b.names[drop:])
		clear(b.names[n:])
		b.names, b.done = b.names[:n], keptReported
	}
	b.names = append(b.names, name)
	return nil
}

// Played reads a carrier's echo of name: reported is that mark and every earlier one not
// yet reported, in order (valid until the next Sent). A late echo of a reported mark gives
// none; known is false for a name never sent (count it as malformed).
func (b *MarkBook) Played(name string) (reported []string, known bool) {
	for i := b.done; i < len(b.names); i++ {
		if b.names[i] == name {
			reported, b.done = b.names[b.done:i+1], i+1
			return reported, true
		}
	}
	for i := b.done - 1; i >= 0; i-- {
		if b.names[i] == name {
			return nil, true
		}
	}
	return nil, false
}

// Cleared reports every outstanding mark in order (the carrier dropped their audio); later
// echoes of them are ignored.
func (b *MarkBook) Cleared() (reported []string) {
	reported, b.done = b.names[b.done:], len(b.names)
	return reported
}

// Outstanding is how many marks were sent and not reported.
func (b *MarkBook) Outstanding() int { return len(b.names) - b.done }
