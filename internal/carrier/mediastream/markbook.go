package mediastream

import "errors"

// MaxOutstandingMarks bounds the marks sent and not yet reported.
const MaxOutstandingMarks = 1024

// ErrTooManyMarks: MaxOutstandingMarks are outstanding already.
var ErrTooManyMarks = errors.New("too many marks outstanding")

// MarkBook keeps the marks (checkpoints) a leg sent, in order, to turn what the carrier
// echoes into what the call needs: every mark reported once, in order. A carrier may drop
// the echo of a mark it skipped, echo every pending one on a clear (Twilio) or only those
// that played (Plivo). Its storage is reused turn after turn: no allocation once warm.
// One goroutine at a time (the leg serialises its reader and writer).
type MarkBook struct{}

// Sent records that name was sent after every mark sent before it.
func (b *MarkBook) Sent(name string) error {
	panic("not yet")
}

// Played reads a carrier's echo of name: reported is that mark and every earlier one not
// yet reported, in order (valid until the next Sent). A late echo of a reported mark gives
// none; known is false for a name never sent (count it as malformed).
func (b *MarkBook) Played(name string) (reported []string, known bool) {
	panic("not yet")
}

// Cleared reports every outstanding mark in order (the carrier dropped their audio); later
// echoes of them are ignored.
func (b *MarkBook) Cleared() (reported []string) {
	panic("not yet")
}

// Outstanding is how many marks were sent and not reported.
func (b *MarkBook) Outstanding() int {
	panic("not yet")
}
