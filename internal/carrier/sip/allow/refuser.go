package allow

import (
	"net/netip"
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
}

// NewRefuser makes a Refuser; zero fields of cfg take defaults: 5 answers a second per
// source (burst 10), 200 a second in all (burst 400), 20 log lines a second, 16384
// sources.
func NewRefuser(cfg RefuserConfig) *Refuser {
	panic("not implemented")
}

// Refuse records a refusal of a request from src at now. answer: send the 403 (else drop
// the request silently). logFirst: this is the first refusal from src Handset remembers,
// log it (with the method and user agent); later ones are only counted. A source forgotten
// to stay under MaxSources is logged again when it returns.
func (r *Refuser) Refuse(src netip.Addr, now time.Time) (answer, logFirst bool) {
	panic("not implemented")
}

// Stats returns the counts so far.
func (r *Refuser) Stats() RefuserStats {
	panic("not implemented")
}
