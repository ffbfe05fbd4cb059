package bridge

import (
	"math"
	"sync"
	"time"
)

// limiter holds one token's client to its rate of turns and its turns at once: a platform
// that loops, or a leaked token, cannot take the runtime from everyone else.
type limiter struct {
	perMinute int // turns a minute; the bucket holds a quarter of it, for bursts
	most      int // turns at once

	mu      sync.Mutex
	tokens  float64
	refill  time.Time
	running int
}

func newLimiter(perMinute, most int) *limiter {
	return &limiter{perMinute: perMinute, most: most, tokens: burst(perMinute)}
}

func burst(perMinute int) float64 { return math.Max(1, float64(perMinute)/4) }

// start takes a turn's place. It returns the release to call when the turn ends, or how
// long to wait before asking again (and a nil release).
func (l *limiter) start(now time.Time) (release func(), retry time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.refill.IsZero() {
		l.tokens = math.Min(burst(l.perMinute), l.tokens+now.Sub(l.refill).Minutes()*float64(l.perMinute))
	}
	l.refill = now
	switch {
	case l.running >= l.most:
		return nil, time.Second
	case l.tokens < 1:
		return nil, time.Duration((1 - l.tokens) / float64(l.perMinute) * float64(time.Minute))
	}
	l.tokens--
	l.running++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.running--
			l.mu.Unlock()
		})
	}, 0
}
