package sipsim

import (
	"encoding/binary"
	"sync/atomic"
	"time"
)

// The arrival meter times Handset's RTP as the far end hears it: each audio packet's
// arrival against the schedule its own timestamp gives (8000 per second from the
// earliest-arriving packet of its stream). It measures the RTP send clock from outside,
// with the loopback and the callers' own scheduling in it: an upper bound on the
// lateness Handset's media session sees at its sockets.

// arrivalStep is the width of the meter's buckets; arrivalBuckets of them reach 100 ms,
// and the last also holds everything later.
const (
	arrivalStep    = 250 * time.Microsecond
	arrivalBuckets = 400
)

// arrivalMeter is a histogram shared by every call of a vendor, updated without locks.
type arrivalMeter struct {
	buckets [arrivalBuckets]atomic.Int64
	count   atomic.Int64
}

func (m *arrivalMeter) add(late time.Duration) {
	i := min(int(max(late, 0)/arrivalStep), arrivalBuckets-1)
	m.buckets[i].Add(1)
	m.count.Add(1)
}

// quantile is the upper bound of the bucket holding the qth quantile, and the count.
func (m *arrivalMeter) quantile(q float64) (time.Duration, int64) {
	n := m.count.Load()
	if n == 0 {
		return 0, 0
	}
	want := int64(q*float64(n) + 0.5)
	var seen int64
	for i := range m.buckets {
		seen += m.buckets[i].Load()
		if seen >= max(want, 1) {
			return time.Duration(i+1) * arrivalStep, n
		}
	}
	return arrivalBuckets * arrivalStep, n
}

// arrivalClock is one call's schedule: where its stream's timestamps are anchored.
type arrivalClock struct {
	anchored bool
	ssrc     uint32
	ts0      uint32
	t0       time.Time
}

// lateness is how late an audio packet (its RTP header in hdr) arriving at now is against
// the stream's schedule. A packet earlier than the schedule, or of a new stream, anchors it
// afresh and is on time.
func (c *arrivalClock) lateness(hdr []byte, now time.Time) time.Duration {
	ts, ssrc := binary.BigEndian.Uint32(hdr[4:8]), binary.BigEndian.Uint32(hdr[8:12])
	elapsed := int32(ts - c.ts0) // wraps as RTP timestamps do
	if !c.anchored || ssrc != c.ssrc || elapsed < 0 {
		c.anchored, c.ssrc, c.ts0, c.t0 = true, ssrc, ts, now
		return 0
	}
	due := c.t0.Add(time.Duration(elapsed) * time.Second / 8000)
	if late := now.Sub(due); late >= 0 {
		return late
	}
	c.ts0, c.t0 = ts, now
	return 0
}
