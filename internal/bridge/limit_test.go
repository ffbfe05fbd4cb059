package bridge

import (
	"testing"
	"time"
)

// The bucket holds a quarter of a minute's turns and refills at the rate; turns at once are
// capped apart from it, and a release is counted once however often it is called.
func TestLimiterRateAndTurnsAtOnce(t *testing.T) {
	l := newLimiter(8, 3) // 2 at once from the bucket, then one every 7.5 s
	now := time.Unix(1000, 0)
	for i := range 2 {
		if release, retry := l.start(now); release == nil {
			t.Fatalf("turn %d refused (retry %v)", i+1, retry)
		}
	}
	if release, retry := l.start(now); release != nil || retry != 7500*time.Millisecond {
		t.Fatalf("a third turn at once: release %v, retry %v; want 7.5 s", release != nil, retry)
	}
	now = now.Add(7500 * time.Millisecond)
	release, _ := l.start(now)
	if release == nil {
		t.Fatal("refused after the refill")
	}
	// three running: the cap refuses a fourth though the bucket has refilled
	now = now.Add(time.Minute)
	if release, retry := l.start(now); release != nil || retry != time.Second {
		t.Fatalf("a fourth at once: release %v, retry %v; want 1 s", release != nil, retry)
	}
	release()
	release()
	if got := l.running; got != 2 {
		t.Fatalf("%d running after one release called twice, want 2", got)
	}
	if r, _ := l.start(now); r == nil {
		t.Fatal("refused with a place free and tokens in the bucket")
	}
}
