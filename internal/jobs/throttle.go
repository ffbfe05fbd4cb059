package jobs

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// QuietHours is a daily window in which no call is placed ("21:00-08:00" in a zone).
// Calls due inside it wait in the queue until it ends; nothing is dropped.
type QuietHours struct {
	from, to time.Duration // since midnight
	loc      *time.Location
}

// ParseQuietHours reads "HH:MM-HH:MM" (crossing midnight when from is later than to) in
// the IANA zone (empty: UTC). An empty spec means no quiet hours (nil, nil).
func ParseQuietHours(spec, zone string) (*QuietHours, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, nil
	}
	from, to, ok := strings.Cut(spec, "-")
	f, err1 := clockTime(from)
	t, err2 := clockTime(to)
	if !ok || err1 != nil || err2 != nil || f == t {
		return nil, fmt.Errorf("quiet hours %q: write them as HH:MM-HH:MM in 24-hour time, like 21:00-08:00", spec)
	}
	loc := time.UTC
	if zone != "" {
		if loc, err1 = time.LoadLocation(zone); err1 != nil {
			return nil, fmt.Errorf("quiet hours zone %q is not an IANA time zone (like America/New_York): %w", zone, err1)
		}
	}
	return &QuietHours{from: f, to: t, loc: loc}, nil
}

func clockTime(s string) (time.Duration, error) {
	t, err := time.Parse("15:04", strings.TrimSpace(s))
	if err != nil {
		return 0, err
	}
	return time.Duration(t.Hour())*time.Hour + time.Duration(t.Minute())*time.Minute, nil
}

// Quiet reports whether now falls in the window.
func (q *QuietHours) Quiet(now time.Time) bool {
	if q == nil {
		return false
	}
	local := now.In(q.loc)
	tod := time.Duration(local.Hour())*time.Hour + time.Duration(local.Minute())*time.Minute +
		time.Duration(local.Second())*time.Second
	if q.from < q.to {
		return tod >= q.from && tod < q.to
	}
	return tod >= q.from || tod < q.to // the window crosses midnight
}

// String writes the window as it was configured, with its zone.
func (q *QuietHours) String() string {
	hm := func(d time.Duration) string { return fmt.Sprintf("%02d:%02d", int(d.Hours()), int(d.Minutes())%60) }
	return hm(q.from) + "-" + hm(q.to) + " " + q.loc.String()
}

// RateLimit lets at most N starts happen in any window of Per.
type RateLimit struct {
	N   int
	Per time.Duration

	mu     sync.Mutex // guards starts
	starts []time.Time
}

// Ready reports whether one more may start at now.
func (r *RateLimit) Ready(now time.Time) bool {
	if r == nil || r.N <= 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prune(now)
	return len(r.starts) < r.N
}

// Took records a start at now.
func (r *RateLimit) Took(now time.Time) {
	if r == nil || r.N <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prune(now)
	r.starts = append(r.starts, now)
}

func (r *RateLimit) prune(now time.Time) {
	i := 0
	for i < len(r.starts) && now.Sub(r.starts[i]) >= r.Per {
		i++
	}
	r.starts = r.starts[i:]
}

// CallThrottle holds outbound calls back during quiet hours and beyond a rate.
type CallThrottle struct {
	Quiet *QuietHours
	Rate  *RateLimit
}

// Ready reports whether a call may be placed at now.
func (c CallThrottle) Ready(now time.Time) bool { return !c.Quiet.Quiet(now) && c.Rate.Ready(now) }

// Took records a call placed at now.
func (c CallThrottle) Took(now time.Time) { c.Rate.Took(now) }
