package allow

import (
	"maps"
	"net/netip"
	"sync"
	"time"
)

// RefuserConfig bounds the refusals. Zero fields take the defaults in NewRefuser.
type RefuserConfig struct {
	// PerSource is how many refusals a second one source gets answered (403), with
	// bursts of SourceBurst; the rest are dropped without a reply.
	PerSource   float64
	SourceBurst int
	// Total bounds the answers a second over all sources (a flood from spoofed addresses
	// must not turn Handset into a reflector), with bursts of TotalBurst.
	Total      float64
	TotalBurst int
	// LogsPerSecond bounds the first-refusal log lines a second over all sources.
	LogsPerSecond float64
	// MaxSources caps the sources remembered; past it the longest-remembered is forgotten.
	MaxSources int
}

// RefuserStats counts refusals since the Refuser was made.
type RefuserStats struct {
	Answered, Dropped uint64 // refusals answered 403, and dropped silently
	Unlogged          uint64 // first refusals of a source not logged (the log rate was spent)
	Sources           int    // sources remembered now
	Evicted           uint64 // sources forgotten to stay under MaxSources
}

// Refuser decides, for each request refused for its source, whether to answer it and
// whether to log it. Safe for concurrent use; its memory is bounded by MaxSources.
type Refuser struct {
	cfg RefuserConfig

	mu      sync.Mutex
	sources map[netip.Addr]bucket
	// order holds the remembered sources oldest first, as a ring once full: the next to
	// forget is order[oldest].
	order  []netip.Addr
	oldest int
	total  bucket
	logs   bucket
	stats  RefuserStats
}

// NewRefuser makes a Refuser; zero fields of cfg take defaults: 5 answers a second per
// source (burst 10), 200 a second in all (burst 400), 20 log lines a second, 16384
// sources.
func NewRefuser(cfg RefuserConfig) *Refuser {
	orDefault := func(v *float64, d float64) {
		if *v <= 0 {
			*v = d
		}
	}
	orDefaultInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	orDefault(&cfg.PerSource, 5)
	orDefaultInt(&cfg.SourceBurst, 10)
	orDefault(&cfg.Total, 200)
	orDefaultInt(&cfg.TotalBurst, 400)
	orDefault(&cfg.LogsPerSecond, 20)
	orDefaultInt(&cfg.MaxSources, 16384)
	return &Refuser{
		cfg:     cfg,
		sources: make(map[netip.Addr]bucket),
		total:   bucket{tokens: float64(cfg.TotalBurst)},
		logs:    bucket{tokens: cfg.LogsPerSecond},
	}
}

// Refuse records a refusal of a request from src at now. answer: send the 403 (else drop
// the request silently). logFirst: this is the first refusal from src Handset remembers,
// log it (with the method and user agent); later ones are only counted. A source forgotten
// to stay under MaxSources is logged again when it returns.
func (r *Refuser) Refuse(src netip.Addr, now time.Time) (answer, logFirst bool) {
	src = src.Unmap().WithZone("")
	r.mu.Lock()
	defer r.mu.Unlock()
	b, known := r.sources[src]
	if !known {
		b = r.remember(src, now)
		logFirst = r.logs.take(now, r.cfg.LogsPerSecond, r.cfg.LogsPerSecond)
		if !logFirst {
			r.stats.Unlogged++
		}
	}
	b.refill(now, r.cfg.PerSource, float64(r.cfg.SourceBurst))
	r.total.refill(now, r.cfg.Total, float64(r.cfg.TotalBurst))
	answer = b.tokens >= 1 && r.total.tokens >= 1
	if answer {
		b.tokens--
		r.total.tokens--
		r.stats.Answered++
	} else {
		r.stats.Dropped++
	}
	r.sources[src] = b
	return answer, logFirst
}

// remember makes room for a new source, forgetting the oldest when at the cap, and returns
// its full bucket (the caller stores it). Once every turn of the ring the table is copied:
// a Go map keeps the room of its deleted keys, and a stream of new sources would grow it
// without end.
func (r *Refuser) remember(src netip.Addr, now time.Time) bucket {
	if len(r.order) < r.cfg.MaxSources {
		r.order = append(r.order, src)
	} else {
		delete(r.sources, r.order[r.oldest])
		r.order[r.oldest] = src
		r.oldest = (r.oldest + 1) % len(r.order)
		r.stats.Evicted++
		if r.oldest == 0 {
			fresh := make(map[netip.Addr]bucket, len(r.sources))
			maps.Copy(fresh, r.sources)
			r.sources = fresh
		}
	}
	return bucket{tokens: float64(r.cfg.SourceBurst), last: now}
}

// Stats returns the counts so far.
func (r *Refuser) Stats() RefuserStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Sources = len(r.sources)
	return s
}

// bucket is a token bucket: tokens accrue at a rate up to a burst, one per event allowed.
type bucket struct {
	tokens float64
	last   time.Time
}

func (b *bucket) refill(now time.Time, rate, burst float64) {
	if b.last.IsZero() {
		b.last = now
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(burst, b.tokens+elapsed.Seconds()*rate)
		b.last = now
	}
}

// take refills and then spends one token if there is one.
func (b *bucket) take(now time.Time, rate, burst float64) bool {
	b.refill(now, rate, burst)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
