package pace

import (
	"testing"
	"time"
)

const frame = 20 * time.Millisecond

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestDueAfterElapsedTime(t *testing.T) {
	cases := []struct {
		lead, elapsed time.Duration
		want          int
	}{
		{0, 0, 1}, // the first frame is due at once
		{0, 19 * time.Millisecond, 1},
		{0, 20 * time.Millisecond, 2},
		{0, time.Second, 51}, // frames 0..50: T/frame, plus the one starting now
		{0, 150 * time.Millisecond, 8},
		{60 * time.Millisecond, 0, 4}, // lead/frame extra frames up front
		{60 * time.Millisecond, time.Second, 54},
		{50 * time.Millisecond, 0, 3}, // partial lead frames round down
		{0, -time.Millisecond, 0},     // before the start nothing is due
		{60 * time.Millisecond, -61 * time.Millisecond, 0},
		{60 * time.Millisecond, -60 * time.Millisecond, 1},
	}
	for _, c := range cases {
		p := New(t0, frame, c.lead)
		p.SetMaxLag(0) // measure the schedule alone
		if got := p.Due(at(c.elapsed)); got != c.want {
			t.Errorf("lead %v, after %v: Due = %d, want %d", c.lead, c.elapsed, got, c.want)
		}
	}
}

func TestSteadySenderNeverDrifts(t *testing.T) {
	// A sender that wakes at every deadline, slightly late by a varying amount, sends
	// exactly one frame each time and after an hour is still on schedule.
	p := New(t0, frame, 0)
	jitter := []time.Duration{0, 3 * time.Millisecond, 900 * time.Microsecond, 7 * time.Millisecond}
	for i := range 180000 { // one hour of 20 ms frames
		now := p.Next().Add(jitter[i%len(jitter)])
		if n := p.Due(now); n != 1 {
			t.Fatalf("wake %d at %v: Due = %d, want 1", i, now.Sub(t0), n)
		}
		p.Sent(1)
	}
	if want := at(time.Hour); !p.Next().Equal(want) {
		t.Errorf("after an hour Next = %v, want %v", p.Next().Sub(t0), want.Sub(t0))
	}
	if p.Reanchored() != 0 || p.Count() != 180000 {
		t.Errorf("Reanchored %d Count %d", p.Reanchored(), p.Count())
	}
}

func TestLateWakeUpCatchesUpWithinMaxLag(t *testing.T) {
	p := New(t0, frame, 0)
	p.Sent(p.Due(t0)) // frame 0
	// The sender oversleeps by 150 ms (< 200 ms max lag): the frames due since go at once.
	now := at(170 * time.Millisecond) // Next was 20 ms; 150 ms late
	if n := p.Due(now); n != 8 {      // frames 1..8 (8 is due at 160 ms)
		t.Fatalf("Due = %d, want 8", n)
	}
	p.Sent(8)
	if p.Reanchored() != 0 {
		t.Error("re-anchored within the max lag")
	}
	if want := at(180 * time.Millisecond); !p.Next().Equal(want) {
		t.Errorf("Next = %v, want the original schedule's 180 ms", p.Next().Sub(t0))
	}
	if n := p.Due(now); n != 0 {
		t.Errorf("after catching up Due = %d, want 0", n)
	}
}

func TestBeyondMaxLagReanchors(t *testing.T) {
	p := New(t0, frame, 40*time.Millisecond)
	p.Sent(p.Due(t0)) // 3 frames: lead burst + the first
	// Stalled for a second: far beyond 200 ms. Sending 50 frames at once would flood.
	now := at(time.Second)
	if n := p.Due(now); n != 1 {
		t.Fatalf("Due after a 1 s stall = %d, want 1 (re-anchored)", n)
	}
	if p.Reanchored() != 1 {
		t.Fatalf("Reanchored = %d, want 1", p.Reanchored())
	}
	if !p.Next().Equal(now) {
		t.Errorf("Next = %v, want now (%v)", p.Next().Sub(t0), now.Sub(t0))
	}
	p.Sent(1)
	// From here the schedule runs at real time from the new anchor.
	if n := p.Due(now.Add(19 * time.Millisecond)); n != 0 {
		t.Errorf("Due 19 ms later = %d, want 0", n)
	}
	if n := p.Due(now.Add(100 * time.Millisecond)); n != 5 {
		t.Errorf("Due 100 ms later = %d, want 5", n)
	}
	if p.Reanchored() != 1 {
		t.Errorf("Reanchored = %d, want still 1", p.Reanchored())
	}
}

func TestMaxLagBoundary(t *testing.T) {
	for _, c := range []struct {
		late      time.Duration
		reanchor  bool
		wantFrame int
	}{
		{200 * time.Millisecond, false, 11}, // exactly the max lag: catch up
		{201 * time.Millisecond, true, 1},
	} {
		p := New(t0, frame, 0)
		p.Sent(1)
		n := p.Due(p.Next().Add(c.late))
		if n != c.wantFrame || (p.Reanchored() == 1) != c.reanchor {
			t.Errorf("%v late: Due %d, reanchored %d; want %d, %v", c.late, n, p.Reanchored(), c.wantFrame, c.reanchor)
		}
	}
	p := New(t0, frame, 0)
	p.SetMaxLag(time.Second)
	if n := p.Due(at(500 * time.Millisecond)); n != 26 || p.Reanchored() != 0 {
		t.Errorf("with max lag 1 s, 500 ms late: Due %d reanchored %d", n, p.Reanchored())
	}
}

func TestRestartStartsAFreshReply(t *testing.T) {
	p := New(t0, frame, 40*time.Millisecond)
	p.Sent(p.Due(t0))
	// The reply was three frames long; the queue ran empty. A new reply begins at 7 s.
	p.Restart(at(7 * time.Second))
	if p.Count() != 0 {
		t.Errorf("Count after Restart = %d", p.Count())
	}
	if n := p.Due(at(7 * time.Second)); n != 3 {
		t.Errorf("Due at the new start = %d, want 3 (lead burst + first frame)", n)
	}
	if p.Reanchored() != 0 {
		t.Errorf("Restart counted as a re-anchor")
	}
	// Without Restart the same gap looks like a stalled sender.
	q := New(t0, frame, 40*time.Millisecond)
	q.Sent(q.Due(t0))
	if n := q.Due(at(7 * time.Second)); n != 1 || q.Reanchored() != 1 {
		t.Errorf("without Restart: Due %d reanchored %d, want 1 and 1", n, q.Reanchored())
	}
}

func BenchmarkDueSent20ms(b *testing.B) {
	p := New(t0, frame, 60*time.Millisecond)
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		p.Sent(p.Due(now))
		now = now.Add(frame)
	}
}
