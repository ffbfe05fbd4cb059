package allow

import (
	"net/netip"
	"runtime"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestRefuserAnswersAScannerAtItsRateAndLogsItOnce(t *testing.T) {
	r := NewRefuser(RefuserConfig{PerSource: 5, SourceBurst: 10})
	scanner := netip.MustParseAddr("203.0.113.9")
	answered, logged := 0, 0
	// 1000 INVITEs a second for 10 seconds.
	for i := range 10000 {
		answer, logFirst := r.Refuse(scanner, t0.Add(time.Duration(i)*time.Millisecond))
		if answer {
			answered++
		}
		if logFirst {
			logged++
		}
	}
	// The burst, then 5 a second over the remaining ~10 s.
	if answered < 10+45 || answered > 10+50 {
		t.Errorf("%d of 10000 answered, want the burst of 10 and 5 a second (55 to 60)", answered)
	}
	if logged != 1 {
		t.Errorf("logged %d times, want once", logged)
	}
	s := r.Stats()
	if s.Answered != uint64(answered) || s.Dropped != uint64(10000-answered) || s.Sources != 1 {
		t.Errorf("stats %+v after %d answered", s, answered)
	}
}

func TestRefuserTreatsAMappedAddressAsItsIPv4Source(t *testing.T) {
	r := NewRefuser(RefuserConfig{})
	if _, logFirst := r.Refuse(netip.MustParseAddr("203.0.113.9"), t0); !logFirst {
		t.Fatal("first refusal not logged")
	}
	if _, logFirst := r.Refuse(netip.MustParseAddr("::ffff:203.0.113.9"), t0); logFirst {
		t.Error("the IPv4-mapped form counted as a new source")
	}
}

func TestRefuserBoundsAnswersAndLogsOverAllSources(t *testing.T) {
	r := NewRefuser(RefuserConfig{Total: 100, TotalBurst: 100, LogsPerSecond: 20, MaxSources: 100000})
	answered, logged := 0, 0
	// 50000 spoofed sources in one second, one INVITE each.
	for i := range 50000 {
		src := netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)})
		answer, logFirst := r.Refuse(src, t0.Add(time.Duration(i)*20*time.Microsecond))
		if answer {
			answered++
		}
		if logFirst {
			logged++
		}
	}
	if answered < 100 || answered > 200 {
		t.Errorf("%d answered in one second, want the burst of 100 and at most 100 more", answered)
	}
	if logged < 20 || logged > 40 {
		t.Errorf("%d logged in one second, want 20 to 40", logged)
	}
	if s := r.Stats(); s.Unlogged != uint64(50000-logged) {
		t.Errorf("Unlogged %d, want %d", s.Unlogged, 50000-logged)
	}
}

func TestRefuserForgetsTheOldestPastItsCap(t *testing.T) {
	r := NewRefuser(RefuserConfig{MaxSources: 3, LogsPerSecond: 1000})
	a := func(last byte) netip.Addr { return netip.AddrFrom4([4]byte{192, 0, 2, last}) }
	for i := range byte(4) {
		r.Refuse(a(i), t0)
	}
	if s := r.Stats(); s.Sources != 3 || s.Evicted != 1 {
		t.Fatalf("stats %+v, want 3 sources and 1 evicted", s)
	}
	if _, logFirst := r.Refuse(a(3), t0); logFirst {
		t.Error("a remembered source was logged again")
	}
	if _, logFirst := r.Refuse(a(0), t0); !logFirst {
		t.Error("the forgotten oldest source was not logged as new")
	}
}

func TestRefuserMemoryIsBoundedUnderAFloodOfSources(t *testing.T) {
	const sources = 1_000_000
	r := NewRefuser(RefuserConfig{MaxSources: 16384})
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	// Warm to the cap first, then measure what a million more sources add.
	for i := range 16384 {
		r.Refuse(netip.AddrFrom4([4]byte{100, 64, byte(i >> 8), byte(i)}), t0)
	}
	before := heap()
	for i := range sources {
		src := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 12: byte(i >> 24), byte(i >> 16), byte(i >> 8), byte(i)})
		r.Refuse(src, t0.Add(time.Duration(i)*time.Microsecond))
	}
	after := heap()
	if s := r.Stats(); s.Sources != 16384 || s.Evicted != sources {
		t.Errorf("stats %+v, want 16384 sources and %d evicted", s, sources)
	}
	if grown := int64(after) - int64(before); grown > 1<<20 {
		t.Errorf("heap grew %d bytes over a million sources at a cap of 16384", grown)
	}
	t.Logf("heap %d KiB at the cap, %+d KiB after a million more sources", before>>10, (int64(after)-int64(before))>>10)
}

func TestRefuserTimeGoingBackwardsIsHarmless(t *testing.T) {
	r := NewRefuser(RefuserConfig{PerSource: 1, SourceBurst: 1})
	src := netip.MustParseAddr("192.0.2.1")
	if answer, _ := r.Refuse(src, t0.Add(time.Second)); !answer {
		t.Fatal("the first refusal was not answered")
	}
	if answer, _ := r.Refuse(src, t0); answer {
		t.Error("a refusal stamped earlier refilled the bucket")
	}
}

// BenchmarkRefuseFlood is a refusal during a flood from ever-new sources, the costliest
// case (each one is remembered and the oldest forgotten).
func BenchmarkRefuseFlood(b *testing.B) {
	r := NewRefuser(RefuserConfig{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r.Refuse(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), t0.Add(time.Duration(i)))
		i++
	}
}
