// Package echo tells the caller's voice from the agent's own voice coming back down the
// line. It keeps the level of the audio recently sent to the caller; an inbound frame well
// below that level is echo (a double-talk test on frame levels, after Geigel: near-end
// speech is declared only when it exceeds the far-end peak less a margin). Handset has no
// echo canceller, so this is what keeps the agent from interrupting itself.
package echo

import (
	"math"
	"sync"
	"time"
)

// Defaults.
const (
	// DefaultWindow covers the echo path: our playout lead, the carrier's buffer and the
	// round trip back to us.
	DefaultWindow = time.Second
	// DefaultMargin: echo returns at least this much quieter than what was played (phone
	// lines give 6 dB or more of echo return loss).
	DefaultMargin = 6.0
	slots         = 64 // 1.28 s of 20 ms frames
)

// Reference is the recent outbound level. Sent is called by the playout goroutine and
// Echo by the call's owner; both are cheap and never allocate.
type Reference struct {
	window time.Duration
	margin float64

	mu     sync.Mutex // guards following
	at     [slots]time.Time
	level  [slots]float64
	next   int
	filled int
}

// NewReference returns a reference with the given window and margin (zero: defaults).
func NewReference(window time.Duration, marginDB float64) *Reference {
	if window <= 0 {
		window = DefaultWindow
	}
	if marginDB <= 0 {
		marginDB = DefaultMargin
	}
	return &Reference{window: window, margin: marginDB}
}

// Sent records that audio at levelDB (RMS dBFS) went to the caller at t.
func (r *Reference) Sent(t time.Time, levelDB float64) {
	r.mu.Lock()
	r.at[r.next] = t
	r.level[r.next] = levelDB
	r.next = (r.next + 1) % slots
	r.filled = min(r.filled+1, slots)
	r.mu.Unlock()
}

// Peak is the loudest audio sent within the window before now (-Inf when none).
func (r *Reference) Peak(now time.Time) float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	peak := math.Inf(-1)
	from := now.Add(-r.window)
	for i := 0; i < r.filled; i++ {
		if t := r.at[i]; !t.Before(from) && !t.After(now) && r.level[i] > peak {
			peak = r.level[i]
		}
	}
	return peak
}

// Echo reports whether an inbound frame at levelDB is no louder than echo of what was sent
// recently could be.
func (r *Reference) Echo(now time.Time, levelDB float64) bool {
	return levelDB < r.Peak(now)-r.margin
}

// LevelDB is the RMS level of 16-bit PCM in dBFS (0 dBFS = RMS of 32768); -Inf for silence.
func LevelDB(pcm []int16) float64 {
	if len(pcm) == 0 {
		return math.Inf(-1)
	}
	var sum float64
	for _, s := range pcm {
		v := float64(s)
		sum += v * v
	}
	if sum == 0 {
		return math.Inf(-1)
	}
	return 10 * math.Log10(sum/float64(len(pcm))/(32768*32768))
}
