package jobs

import (
	"testing"
	"time"
)

func TestQuietHours(t *testing.T) {
	q, err := ParseQuietHours("21:00-08:00", "America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	for _, tc := range []struct {
		at    time.Time
		quiet bool
	}{
		{time.Date(2026, 11, 25, 20, 59, 0, 0, ny), false},
		{time.Date(2026, 11, 25, 21, 0, 0, 0, ny), true},
		{time.Date(2026, 11, 26, 3, 0, 0, 0, ny), true},
		{time.Date(2026, 11, 26, 7, 59, 59, 0, ny), true},
		{time.Date(2026, 11, 26, 8, 0, 0, 0, ny), false},
		{time.Date(2026, 11, 26, 13, 0, 0, 0, time.UTC), false}, // 08:00 in New York
		{time.Date(2026, 11, 26, 12, 30, 0, 0, time.UTC), true}, // 07:30 in New York
	} {
		if got := q.Quiet(tc.at); got != tc.quiet {
			t.Errorf("Quiet(%v) = %v, want %v", tc.at, got, tc.quiet)
		}
	}
	day, _ := ParseQuietHours("12:00-13:30", "")
	if !day.Quiet(time.Date(2026, 1, 1, 13, 29, 0, 0, time.UTC)) || day.Quiet(time.Date(2026, 1, 1, 13, 30, 0, 0, time.UTC)) {
		t.Error("a window within one day")
	}
	if none, err := ParseQuietHours("", ""); none != nil || err != nil || none.Quiet(time.Now()) {
		t.Errorf("empty spec: %v %v", none, err)
	}
	for _, bad := range []string{"21-08", "21:00", "25:00-08:00", "08:00-08:00", "9pm-8am"} {
		if _, err := ParseQuietHours(bad, ""); err == nil {
			t.Errorf("ParseQuietHours(%q) accepted", bad)
		}
	}
	if _, err := ParseQuietHours("21:00-08:00", "Mars/Olympus"); err == nil {
		t.Error("unknown zone accepted")
	}
}

func TestRateLimitIsASlidingWindow(t *testing.T) {
	r := &RateLimit{N: 2, Per: time.Minute}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.Took(t0)
	r.Took(t0.Add(10 * time.Second))
	if r.Ready(t0.Add(59 * time.Second)) {
		t.Error("a third start within the minute allowed")
	}
	if !r.Ready(t0.Add(60 * time.Second)) {
		t.Error("the first start left the window but no room was made")
	}
	var unlimited *RateLimit
	if !unlimited.Ready(t0) || !(CallThrottle{}).Ready(t0) {
		t.Error("no limit configured must never hold calls back")
	}
}
