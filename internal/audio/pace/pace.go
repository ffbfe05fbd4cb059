// Package pace owns the schedule outbound audio is sent on. A Pacer is pure arithmetic on
// times the caller passes in (no clock, no timers, no goroutines): frame n of a reply is due
// at start + n·frame − lead, so sending never drifts the way "sleep 20 ms, send" does, and
// a late wake-up is caught up by sending every frame that has fallen due.
package pace

import "time"

// DefaultMaxLag is how far behind schedule a Pacer may fall before it re-anchors.
const DefaultMaxLag = 200 * time.Millisecond

// Pacer decides how many frames a sender may release. Frame n (counting from 0 since the
// anchor) is due at start + n·frame − lead: lead lets the first frames go out early to fill
// the far end's jitter buffer, and the first frame is due at once. A Pacer is not safe for
// concurrent use; the one goroutine that sends owns it.
type Pacer struct {
	start      time.Time
	frame      time.Duration
	lead       time.Duration
	maxLag     time.Duration
	sent       int // frames sent since start
	reanchored int
}

// New returns a Pacer whose frame 0 is due at start − lead. frame is the duration of one
// frame of audio (normally audio.FrameDuration) and must be positive; lead must not be
// negative. The maximum lag starts at DefaultMaxLag. New panics on bad arguments, which
// are programming errors.
func New(start time.Time, frame, lead time.Duration) *Pacer {
	if frame <= 0 || lead < 0 {
		panic("pace: New needs frame > 0 and lead >= 0")
	}
	return &Pacer{start: start, frame: frame, lead: lead, maxLag: DefaultMaxLag}
}

// SetMaxLag sets how late (now − Next) the sender may be before Due re-anchors the
// schedule instead of releasing the whole backlog at once. A value <= 0 never re-anchors.
func (p *Pacer) SetMaxLag(d time.Duration) { p.maxLag = d }

// Due returns how many more frames may be sent by now: those whose deadline is at or
// before now and have not been reported by Sent. If the sender is more than the maximum
// lag behind (now − Next() > max lag), Due first re-anchors the schedule so that the next
// frame is due exactly now, counts it in Reanchored, and returns 1: the backlog is then
// played at real-time speed instead of in one burst the far end would discard.
func (p *Pacer) Due(now time.Time) int {
	if p.maxLag > 0 && now.Sub(p.Next()) > p.maxLag {
		p.start = now.Add(p.lead - time.Duration(p.sent)*p.frame)
		p.reanchored++
	}
	since := now.Sub(p.start) + p.lead
	if since < 0 {
		return 0
	}
	return max(0, int(since/p.frame)+1-p.sent)
}

// Sent records that n more frames went out.
func (p *Pacer) Sent(n int) { p.sent += n }

// Next is the deadline of the next frame to send: start + sent·frame − lead. A sender
// sleeps (on its clock's timer) until then when Due returns 0.
func (p *Pacer) Next() time.Time {
	return p.start.Add(time.Duration(p.sent)*p.frame - p.lead)
}

// Count is the number of frames sent since the schedule was anchored by New or Restart.
func (p *Pacer) Count() int { return p.sent }

// Reanchored is how many times Due re-anchored because the sender fell too far behind.
func (p *Pacer) Reanchored() int { return p.reanchored }

// Restart anchors a fresh schedule at now with nothing sent, as for New: use it when the
// playout queue ran empty and a new reply begins, so the reply starts with its lead burst
// instead of counting as a late sender.
func (p *Pacer) Restart(now time.Time) {
	p.start = now
	p.sent = 0
}
