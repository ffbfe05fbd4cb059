package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/handset-voice/handset/internal/obs"
)

// sample is what the Handset under load says of itself at one moment (GET /metrics).
type sample struct {
	at          time.Time
	rss         float64 // process_resident_memory_bytes
	heap        float64 // go_memstats_heap_inuse_bytes
	goroutines  float64
	cpu         float64 // process_cpu_seconds_total
	callsActive float64
	frames      float64 // outbound frames sent
	dropped     float64 // inbound frames dropped
	malformed   float64
	lateness    histogram
	rtpLateness histogram // SIP trunks' RTP send clock
	rtpUnderrun float64   // and the silent frames it sent inside sentences
	overhead    histogram
}

// histogram is a Prometheus histogram's cumulative buckets.
type histogram struct {
	bounds []float64 // upper bounds, ascending, without +Inf
	counts []float64 // cumulative counts, one per bound
	total  float64   // the +Inf bucket (every observation)
}

// minus is the observations between an earlier snapshot and h.
func (h histogram) minus(earlier histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), total: h.total - earlier.total}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(earlier.counts) {
			out.counts[i] -= earlier.counts[i]
		}
	}
	return out
}

// quantile estimates the q-quantile, interpolating linearly inside the bucket it falls in
// (the way Prometheus' histogram_quantile does). NaN with no observations; the top bound
// when it falls past the last finite bucket.
func (h histogram) quantile(q float64) float64 {
	if h.total <= 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.total
	lower, below := 0.0, 0.0
	for i, upper := range h.bounds {
		if h.counts[i] >= rank {
			in := h.counts[i] - below
			if in <= 0 {
				return upper
			}
			return lower + (upper-lower)*(rank-below)/in
		}
		lower, below = upper, h.counts[i]
	}
	return h.bounds[len(h.bounds)-1]
}

// scraper reads a Handset's /metrics.
type scraper struct {
	url    string
	client *http.Client
}

func (s scraper) sample(ctx context.Context) (sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return sample{}, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return sample{}, fmt.Errorf("bench: metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sample{}, fmt.Errorf("bench: metrics: %s answered %s", s.url, resp.Status)
	}
	return parseSample(resp.Body, time.Now())
}

// parseSample reads the metric families bench uses from Prometheus' text format.
func parseSample(r io.Reader, at time.Time) (sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return sample{}, fmt.Errorf("bench: metrics: %w", err)
	}
	value := func(name string) float64 {
		f := families[name]
		if f == nil {
			return 0
		}
		sum := 0.0 // several series (labels) add up
		for _, m := range f.GetMetric() {
			switch {
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetUntyped() != nil:
				sum += m.GetUntyped().GetValue()
			}
		}
		return sum
	}
	hist := func(name string) histogram {
		f := families[name]
		if f == nil || len(f.GetMetric()) == 0 || f.GetMetric()[0].GetHistogram() == nil {
			return histogram{}
		}
		return histogramOf(f.GetMetric()[0].GetHistogram())
	}
	s := sample{
		at: at, rss: value("process_resident_memory_bytes"), heap: value("go_memstats_heap_inuse_bytes"),
		goroutines: value("go_goroutines"), cpu: value("process_cpu_seconds_total"),
		callsActive: value(obs.MetricCallsActive), frames: value(obs.MetricFramesSent),
		dropped: value(obs.MetricInboundDropped), malformed: value("handset_media_malformed_total"),
		lateness: hist(obs.MetricPlayoutLateness), overhead: hist(obs.MetricTurnOverhead),
		rtpLateness: hist(obs.MetricRTPSendLateness), rtpUnderrun: value(obs.MetricRTPUnderruns),
	}
	if families["go_goroutines"] == nil {
		return s, fmt.Errorf("bench: metrics: no go_goroutines: is this a Handset's /metrics?")
	}
	return s, nil
}

func histogramOf(h *dto.Histogram) histogram {
	out := histogram{total: float64(h.GetSampleCount())}
	buckets := h.GetBucket()
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].GetUpperBound() < buckets[j].GetUpperBound() })
	for _, b := range buckets {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		out.bounds = append(out.bounds, b.GetUpperBound())
		out.counts = append(out.counts, float64(b.GetCumulativeCount()))
	}
	return out
}

// pprofURL is the target's pprof endpoint of name ("heap", "profile", …).
func pprofURL(base, name string) string {
	return strings.TrimRight(base, "/") + "/debug/pprof/" + name
}
