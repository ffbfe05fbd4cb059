package obs

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are one server's Prometheus metrics (GET /metrics). A nil *Metrics records
// nothing, so code under test needs none. Every method is safe for concurrent use and
// allocation-free, so the audio path may call them per frame.
type Metrics struct {
	reg *prometheus.Registry

	callsActive     prometheus.Gauge
	callsStarted    *prometheus.CounterVec // carrier, direction
	callsEnded      *prometheus.CounterVec // reason
	turns           prometheus.Counter
	turnOverhead    prometheus.Histogram
	turnResponse    prometheus.Histogram
	playoutLateness prometheus.Histogram
	rtpLateness     prometheus.Histogram
	rtpUnderruns    prometheus.Counter
	framesSent      prometheus.Counter
	inboundDropped  prometheus.Counter
	malformed       prometheus.Counter
	jobsFinished    *prometheus.CounterVec // kind, state
	bridgeTurns     *prometheus.CounterVec // outcome
	bridgeFirstText prometheus.Histogram
}

// Metric names that tools read back (handset bench).
const (
	MetricCallsActive     = "handset_calls_active"
	MetricTurnOverhead    = "handset_turn_overhead_seconds"
	MetricPlayoutLateness = "handset_playout_lateness_seconds"
	MetricRTPSendLateness = "handset_rtp_send_lateness_seconds"
	MetricRTPUnderruns    = "handset_rtp_send_underruns_total"
	MetricFramesSent      = "handset_playout_frames_total"
	MetricInboundDropped  = "handset_inbound_frames_dropped_total"
	MetricBridgeTurns     = "handset_bridge_turns_total"
	MetricBridgeFirstText = "handset_bridge_first_text_seconds"
)

// lateBuckets resolve a frame's lateness from 50 µs to 50 ms, where the 20 ms schedule's
// health shows.
var lateBuckets = []float64{.00005, .0001, .00025, .0005, .001, .002, .003, .004, .005, .0075, .01, .015, .02, .03, .05}

// overheadBuckets resolve Handset's own share of a turn's latency, from 100 µs to 1 s.
var overheadBuckets = []float64{.0001, .00025, .0005, .001, .0015, .002, .003, .005, .0075, .01, .015, .025, .05, .1, .25, .5, 1}

// NewMetrics creates the metrics, with the Go runtime and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.callsActive = prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricCallsActive, Help: "Calls running on this node."})
	m.callsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "handset_calls_started_total", Help: "Calls admitted."}, []string{"carrier", "direction"})
	m.callsEnded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "handset_calls_ended_total", Help: "Calls ended, by reason."}, []string{"reason"})
	m.turns = prometheus.NewCounter(prometheus.CounterOpts{Name: "handset_turns_total", Help: "Agent replies whose first audio reached the carrier."})
	m.turnOverhead = prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricTurnOverhead,
		Help: "What Handset itself added to a turn's response: STT final to agent request, plus TTS first byte to first audio on the wire.", Buckets: overheadBuckets})
	m.turnResponse = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "handset_turn_response_seconds",
		Help: "STT final to the reply's first audio on the wire.", Buckets: prometheus.ExponentialBuckets(.05, 1.5, 14)})
	m.playoutLateness = prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricPlayoutLateness,
		Help: "How long after its place in the 20 ms schedule each outbound frame was sent.", Buckets: lateBuckets})
	m.rtpLateness = prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricRTPSendLateness,
		Help: "How long after its place on the 20 ms RTP send clock each packet left (SIP trunks: the wire's frame jitter).", Buckets: lateBuckets})
	m.rtpUnderruns = prometheus.NewCounter(prometheus.CounterOpts{Name: MetricRTPUnderruns,
		Help: "RTP packets that carried silence inside a sentence because the call's playout fell behind the send clock (SIP trunks: a gap the caller hears)."})
	m.framesSent = prometheus.NewCounter(prometheus.CounterOpts{Name: MetricFramesSent, Help: "Outbound audio frames sent to carriers."})
	m.inboundDropped = prometheus.NewCounter(prometheus.CounterOpts{Name: MetricInboundDropped, Help: "Caller frames dropped because a call's engine fell a second behind."})
	m.malformed = prometheus.NewCounter(prometheus.CounterOpts{Name: "handset_media_malformed_total", Help: "Carrier media messages that could not be read."})
	m.bridgeTurns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricBridgeTurns,
		Help: "Turns of the agent bridge, by outcome: ok, error (the runtime failed), stopped (the client left), refused (bad request or over the rate)."}, []string{"outcome"})
	m.bridgeFirstText = prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricBridgeFirstText,
		Help: "The agent bridge: a request's arrival to its first reply text written.", Buckets: prometheus.ExponentialBuckets(.05, 1.5, 14)})
	m.jobsFinished = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "handset_jobs_finished_total", Help: "Jobs this node finished, by kind and state."}, []string{"kind", "state"})
	for _, c := range []prometheus.Collector{m.callsActive, m.callsStarted, m.callsEnded, m.turns, m.turnOverhead,
		m.turnResponse, m.playoutLateness, m.rtpLateness, m.rtpUnderruns, m.framesSent, m.inboundDropped, m.malformed, m.jobsFinished, m.bridgeTurns, m.bridgeFirstText} {
		f(c)
	}
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// CallStarted counts an admitted call.
func (m *Metrics) CallStarted(carrier, direction string) {
	if m == nil {
		return
	}
	m.callsActive.Inc()
	m.callsStarted.WithLabelValues(carrier, direction).Inc()
}

// CallEnded counts a call's end.
func (m *Metrics) CallEnded(reason string) {
	if m == nil {
		return
	}
	m.callsActive.Dec()
	m.callsEnded.WithLabelValues(reason).Inc()
}

// TurnAnswered records a turn's response time and Handset's share of it (negative: not
// known).
func (m *Metrics) TurnAnswered(response, overhead time.Duration) {
	if m == nil {
		return
	}
	m.turns.Inc()
	if response >= 0 {
		m.turnResponse.Observe(response.Seconds())
	}
	if overhead >= 0 {
		m.turnOverhead.Observe(overhead.Seconds())
	}
}

// FrameSent records one outbound frame sent late after its scheduled time.
func (m *Metrics) FrameSent(late time.Duration) {
	if m == nil {
		return
	}
	m.framesSent.Inc()
	m.playoutLateness.Observe(max(late, 0).Seconds())
}

// RTPSent records one RTP packet sent late after its place on its send clock, and whether
// it carried silence for an underrun.
func (m *Metrics) RTPSent(late time.Duration, underrun bool) {
	if m == nil {
		return
	}
	m.rtpLateness.Observe(max(late, 0).Seconds())
	if underrun {
		m.rtpUnderruns.Inc()
	}
}

// BridgeTurn records one turn of the agent bridge: its outcome, and when its first text
// was written (firstText < 0: none was).
func (m *Metrics) BridgeTurn(outcome string, firstText time.Duration) {
	if m == nil {
		return
	}
	m.bridgeTurns.WithLabelValues(outcome).Inc()
	if firstText >= 0 {
		m.bridgeFirstText.Observe(firstText.Seconds())
	}
}

// InboundDropped counts caller frames a call dropped.
func (m *Metrics) InboundDropped(n uint64) {
	if m == nil || n == 0 {
		return
	}
	m.inboundDropped.Add(float64(n))
}

// Malformed counts unreadable carrier messages.
func (m *Metrics) Malformed(n uint64) {
	if m == nil || n == 0 {
		return
	}
	m.malformed.Add(float64(n))
}

// JobFinished counts a job this node finished.
func (m *Metrics) JobFinished(kind, state string) {
	if m == nil {
		return
	}
	m.jobsFinished.WithLabelValues(kind, state).Inc()
}
