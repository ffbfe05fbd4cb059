package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

const exposition = `# TYPE go_goroutines gauge
go_goroutines 42
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 5.24288e+07
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 1.048576e+07
# TYPE handset_calls_active gauge
handset_calls_active 3
# TYPE handset_playout_frames_total counter
handset_playout_frames_total 1000
# TYPE handset_inbound_frames_dropped_total counter
handset_inbound_frames_dropped_total 2
# TYPE handset_media_malformed_total counter
handset_media_malformed_total 1
# TYPE handset_playout_lateness_seconds histogram
handset_playout_lateness_seconds_bucket{le="0.001"} 900
handset_playout_lateness_seconds_bucket{le="0.002"} 990
handset_playout_lateness_seconds_bucket{le="0.005"} 1000
handset_playout_lateness_seconds_bucket{le="+Inf"} 1000
handset_playout_lateness_seconds_sum 0.8
handset_playout_lateness_seconds_count 1000
# TYPE handset_rtp_send_lateness_seconds histogram
handset_rtp_send_lateness_seconds_bucket{le="0.001"} 40
handset_rtp_send_lateness_seconds_bucket{le="0.002"} 50
handset_rtp_send_lateness_seconds_bucket{le="+Inf"} 50
handset_rtp_send_lateness_seconds_sum 0.03
handset_rtp_send_lateness_seconds_count 50
# TYPE handset_rtp_send_underruns_total counter
handset_rtp_send_underruns_total 7
`

func TestParseSample(t *testing.T) {
	s, err := parseSample(strings.NewReader(exposition), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if s.goroutines != 42 || s.rss != 52428800 || s.cpu != 12.5 || s.heap != 10485760 || s.callsActive != 3 ||
		s.frames != 1000 || s.dropped != 2 || s.malformed != 1 {
		t.Errorf("sample = %+v", s)
	}
	if s.lateness.total != 1000 || len(s.lateness.bounds) != 3 {
		t.Errorf("lateness histogram = %+v", s.lateness)
	}
	if s.rtpLateness.total != 50 || len(s.rtpLateness.bounds) != 2 || s.rtpLateness.counts[0] != 40 {
		t.Errorf("RTP send lateness histogram = %+v", s.rtpLateness)
	}
	if s.rtpUnderrun != 7 {
		t.Errorf("RTP underruns = %v, want 7", s.rtpUnderrun)
	}
	if _, err := parseSample(strings.NewReader("# TYPE x gauge\nx 1\n"), time.Now()); err == nil {
		t.Error("a page that is not a Handset's /metrics was accepted")
	}
}

func TestHistogramQuantile(t *testing.T) {
	h := histogram{bounds: []float64{.001, .002, .005}, counts: []float64{900, 990, 1000}, total: 1000}
	for _, c := range []struct{ q, want float64 }{
		{.5, .001 * 500 / 900}, // inside the first bucket, from 0
		{.9, .001},
		{.95, .001 + .001*(950-900)/90},
		{.99, .002},
		{.995, .002 + .003*(995-990)/10},
	} {
		if got := h.quantile(c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	earlier := histogram{bounds: h.bounds, counts: []float64{400, 490, 500}, total: 500}
	d := h.minus(earlier)
	if d.total != 500 || d.counts[0] != 500 || d.counts[2] != 500 {
		t.Errorf("minus = %+v", d)
	}
	if !math.IsNaN((histogram{}).quantile(.5)) {
		t.Error("an empty histogram has a quantile")
	}
	over := histogram{bounds: []float64{.001}, counts: []float64{0}, total: 10} // all past the last bound
	if over.quantile(.99) != .001 {
		t.Errorf("past the last bound: %v", over.quantile(.99))
	}
}

func TestPercentiles(t *testing.T) {
	var v []float64
	for i := 1; i <= 200; i++ {
		v = append(v, float64(201-i)) // 200 .. 1
	}
	p50, p95, p99 := percentiles(v)
	if p50 != 100 || p95 != 190 || p99 != 198 {
		t.Errorf("p50 %v p95 %v p99 %v", p50, p95, p99)
	}
}

func TestDrift(t *testing.T) {
	first := sample{rss: 200 << 20, heap: 100 << 20, goroutines: 4000}
	end := sample{rss: 210 << 20, heap: 101 << 20, goroutines: 3960}
	d := drift(first, end)
	if d.RSSPercent != 5 || d.GoroutinesPercent != -1 {
		t.Errorf("drift = %+v, want resident +5 %% and goroutines -1 %%", d)
	}
	if d.FirstMinute.RSSKB != 200*1024 || d.End.Goroutines != 3960 {
		t.Errorf("readings = %+v", d)
	}
	if d := drift(sample{}, end); d.RSSPercent != -1 || d.GoroutinesPercent != -1 {
		t.Errorf("a reading of nothing gave %+v, want -1 (not measured)", d)
	}
}
