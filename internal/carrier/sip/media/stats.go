package media

import "time"

// Stats are one session's counters since New, read by the call's journal and the bench.
type Stats struct {
	PacketsOut, BytesOut uint64 // RTP packets sent and their payload bytes (audio and DTMF)
	PacketsIn, BytesIn   uint64 // valid RTP packets accepted from the peer, payload bytes
	Lost                 uint64 // sequence numbers never received (RFC 3550 expected − received)
	Late                 uint64 // audio packets that arrived after their time to play
	Reordered            uint64 // packets that arrived after a later sequence number
	Duplicates           uint64 // packets whose sequence number was already received
	Strangers            uint64 // packets dropped because they came from another address
	Malformed            uint64 // packets that could not be parsed or had an unknown payload type
	Concealed            uint64 // played frames filled with silence because audio was missing
	Resets               uint64 // jitter buffer restarts: SSRC changes, timestamp or sequence jumps
	DTMFIn, DTMFOut      uint64 // digits received (once per event) and sent
	// Underruns are the frames the send clock found the queue dry inside a sentence (after
	// audio, with no mark there): the call's playout fell behind, and a frame of silence
	// went out in the middle of the agent's words.
	Underruns uint64
	// Jitter is the RFC 3550 interarrival jitter estimate; Depth the jitter buffer's
	// current target delay in 20 ms frames.
	Jitter time.Duration
	Depth  int
	// FirstIn and FirstOut are when the first valid packet arrived and the first
	// packet left; zero until then.
	FirstIn, FirstOut time.Time
	// Lateness is how late each packet left against its 20 ms schedule.
	Lateness Lateness
}

// Lateness is a histogram of send lateness: how long after its due time on the 20 ms
// schedule each packet was written. Buckets are 250 µs wide up to 10 ms, then 10 ms wide
// up to 100 ms; later packets land in the last bucket.
type Lateness struct {
	Buckets [latenessBuckets]uint32
	Max     time.Duration
}

const (
	fineBuckets     = 40 // 250 µs each: 0-10 ms
	coarseBuckets   = 10 // 10 ms each: 10-100 ms, the last also holds everything later
	latenessBuckets = fineBuckets + coarseBuckets
	fineWidth       = 250 * time.Microsecond
	coarseWidth     = 10 * time.Millisecond
)

// upper is the upper bound of bucket i.
func (Lateness) upper(i int) time.Duration {
	if i < fineBuckets {
		return time.Duration(i+1) * fineWidth
	}
	return fineBuckets*fineWidth + time.Duration(i-fineBuckets+1)*coarseWidth
}

// add records one packet d late.
func (l *Lateness) add(d time.Duration) {
	if d < 0 {
		d = 0
	}
	l.Max = max(l.Max, d)
	var i int
	if d < fineBuckets*fineWidth {
		i = int(d / fineWidth)
	} else {
		i = min(fineBuckets+int((d-fineBuckets*fineWidth)/coarseWidth), latenessBuckets-1)
	}
	l.Buckets[i]++
}

// Merge adds another histogram's counts (the bench sums its sessions).
func (l *Lateness) Merge(o Lateness) {
	for i, n := range o.Buckets {
		l.Buckets[i] += n
	}
	l.Max = max(l.Max, o.Max)
}

// Count is the number of packets recorded.
func (l Lateness) Count() uint64 {
	var n uint64
	for _, c := range l.Buckets {
		n += uint64(c)
	}
	return n
}

// Quantile is the upper bound of the bucket holding the q-quantile (0 < q <= 1), capped at
// Max; 0 when nothing was recorded.
func (l Lateness) Quantile(q float64) time.Duration {
	total := l.Count()
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for i, c := range l.Buckets {
		seen += uint64(c)
		if seen >= rank {
			return min(l.upper(i), l.Max)
		}
	}
	return l.Max
}
