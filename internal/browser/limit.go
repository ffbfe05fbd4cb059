package browser

import (
	"fmt"
	"math"
	"net/netip"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/clock"
)

// Rate limits how often one client address may start browser calls: Burst calls at once,
// then one for each Every that passes (a token bucket).
type Rate struct {
	Burst int
	Every time.Duration
}

// DefaultRate lets one address start five calls at once, then one every 12 s (five a
// minute): plenty for a person calling back, too few to fill the node.
var DefaultRate = Rate{Burst: 5, Every: 12 * time.Second}

// sweepAt is how many addresses the limiter remembers before it forgets those whose
// bucket has refilled (they would be treated the same as a new address).
const sweepAt = 1024

// limiter admits browser calls within their own cap and each address's rate, so browser
// callers cannot take the calls HANDSET_MAX_CALLS keeps for phone callers.
type limiter struct {
	max   int // browser calls at once; 0 for no cap of their own
	rate  Rate
	clock clock.Clock

	mu      sync.Mutex // guards following
	active  int
	buckets map[netip.Prefix]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was counted
}

func newLimiter(max int, rate Rate, clk clock.Clock) *limiter {
	if rate.Burst <= 0 || rate.Every <= 0 {
		rate = DefaultRate
	}
	if clk == nil {
		clk = clock.Real{}
	}
	return &limiter{max: max, rate: rate, clock: clk, buckets: make(map[netip.Prefix]*bucket)}
}

// admit takes a place for a call from addr; release gives it back when the call ends. An
// attempt refused for the cap does not use up the address's rate. refused is the reason,
// for the socket's close frame, or "".
func (l *limiter) admit(addr netip.Prefix) (release func(), refused string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.active >= l.max {
		return nil, fmt.Sprintf("too many browser calls at once (the limit is %d): try again later", l.max)
	}
	now := l.clock.Now()
	b := l.bucketLocked(addr, now)
	if b.tokens < 1 {
		wait := time.Duration((1 - b.tokens) * float64(l.rate.Every))
		return nil, fmt.Sprintf("too many calls from your address: try again in %d s", int(math.Ceil(wait.Seconds())))
	}
	b.tokens--
	l.active++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.active--
			l.mu.Unlock()
		})
	}, ""
}

// bucketLocked is addr's bucket, refilled up to now.
func (l *limiter) bucketLocked(addr netip.Prefix, now time.Time) *bucket {
	burst := float64(l.rate.Burst)
	refill := func(b *bucket) {
		if d := now.Sub(b.at); d > 0 {
			b.tokens = min(burst, b.tokens+float64(d)/float64(l.rate.Every))
			b.at = now
		}
	}
	b, ok := l.buckets[addr]
	if ok {
		refill(b)
		return b
	}
	if len(l.buckets) >= sweepAt {
		for k, old := range l.buckets {
			if refill(old); old.tokens >= burst {
				delete(l.buckets, k)
			}
		}
	}
	b = &bucket{tokens: burst, at: now}
	l.buckets[addr] = b
	return b
}
