package sipsim

import (
	"encoding/binary"
	"testing"
	"time"
)

func header(ts, ssrc uint32) []byte {
	h := make([]byte, rtpHeaderLen)
	h[0] = 2 << 6
	binary.BigEndian.PutUint32(h[4:], ts)
	binary.BigEndian.PutUint32(h[8:], ssrc)
	return h
}

// Packets are timed against their timestamps from the earliest-arriving one; an early
// packet or a new stream re-anchors the schedule, and timestamps wrap.
func TestArrivalClock(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var c arrivalClock
	const ms = time.Millisecond
	ts := uint32(1<<32 - 160) // the second packet's timestamp wraps to 0
	for i, tc := range []struct {
		ts, ssrc uint32
		at       time.Duration
		want     time.Duration
	}{
		{ts, 1, 0, 0},                     // anchors
		{ts + 160, 1, 23 * ms, 3 * ms},    // 20 ms on, 3 ms late, across the wrap
		{ts + 320, 1, 38 * ms, 0},         // 2 ms early: anchors here
		{ts + 480, 1, 59 * ms, 1 * ms},    // due at 58 ms from the new anchor
		{ts + 800, 1, 200 * ms, 102 * ms}, // due 60 ms after the anchor at 38 ms
		{500, 2, 210 * ms, 0},             // a new stream anchors
		{660, 2, 230 * ms, 0},             // on time
		{ts + 960, 1, 240 * ms, 0},        // the old stream again: anchors afresh
	} {
		got := c.lateness(header(tc.ts, tc.ssrc), start.Add(tc.at))
		if got != tc.want {
			t.Errorf("packet %d: %v late, want %v", i+1, got, tc.want)
		}
	}
}

// The meter's quantiles are the upper bounds of the buckets they fall in; everything past
// 100 ms lands in the last.
func TestArrivalMeterQuantiles(t *testing.T) {
	var m arrivalMeter
	if late, n := m.quantile(0.99); late != 0 || n != 0 {
		t.Fatalf("an empty meter: %v over %d", late, n)
	}
	for range 98 {
		m.add(100 * time.Microsecond)
	}
	m.add(3 * time.Millisecond)
	m.add(time.Second)
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 250 * time.Microsecond}, {0.99, 3250 * time.Microsecond}, {1, 100 * time.Millisecond}} {
		if late, n := m.quantile(tc.q); late != tc.want || n != 100 {
			t.Errorf("quantile %v: %v over %d, want %v over 100", tc.q, late, n, tc.want)
		}
	}
}
