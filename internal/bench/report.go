package bench

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/handset-voice/handset/internal/obs"
)

// Report is a run's result. Numbers are NaN-free: what could not be measured is -1.
type Report struct {
	CallsRequested int     `json:"calls_requested"`
	CallsHeld      int     `json:"calls_held"` // live at the end of the hold
	HoldSeconds    float64 `json:"hold_seconds"`
	TurnsCompleted int     `json:"turns_completed"`
	// Latency is Handset's own share of each turn's response (STT final to first audio
	// on the wire, minus the agent's and the TTS's waits), in milliseconds.
	Latency Percentiles `json:"gateway_latency_ms"`
	// Jitter is how late outbound frames left against their 20 ms schedule, in ms.
	Jitter Percentiles `json:"frame_jitter_ms"`
	// Arrival is how late Handset's audio packets reached the callers against the schedule
	// of their own timestamps, in ms, over the whole run: the send clock as the far end
	// hears it, the callers' scheduling included. Only kits that can time it (SIP's RTP:
	// simkit.ArrivalMeter) report it.
	Arrival *Percentiles `json:"caller_arrival_lateness_ms,omitempty"`
	// RTPSend is how late RTP packets left against their 20 ms send clock, in ms: on a
	// SIP trunk the call's playout only fills a queue and this clock times the wire, so
	// it is that carrier's frame jitter. Absent for carriers without it.
	RTPSend *Percentiles `json:"rtp_send_lateness_ms,omitempty"`
	// RTPUnderruns are the packets that send clock filled with silence inside a sentence,
	// because the call's playout fell behind it: gaps the callers heard. With RTPSend.
	RTPUnderruns  *int64  `json:"rtp_send_underruns,omitempty"`
	FramesSent    int64   `json:"frames_sent"`
	DroppedFrames Dropped `json:"dropped_frames"`
	// CPUPerCallMinute is the Handset process's CPU seconds per call-minute held.
	CPUPerCallMinute  float64 `json:"cpu_seconds_per_call_minute"`
	MemoryPerCall     Memory  `json:"memory_per_call_kb"`
	GoroutinesPerCall float64 `json:"goroutines_per_call"`
	After             After   `json:"after_calls"`
	// Drift compares the end of a long hold (two minutes or more) with its first minute:
	// a soak's check that memory and goroutines stay flat while calls come and go.
	Drift   *Drift  `json:"drift,omitempty"`
	Errors  Errors  `json:"errors"`
	Setup   Setup   `json:"setup"`
	Machine Machine `json:"machine"`
}

// Percentiles of a distribution, and how many values it has and where they came from.
type Percentiles struct {
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
	Samples int64   `json:"samples"`
	Source  string  `json:"source"` // "journals" (exact) or "histogram" (bucket estimate)
}

// Dropped frames, by where.
type Dropped struct {
	Inbound   int64 `json:"inbound"`   // caller audio a call's engine fell too far behind to take
	Malformed int64 `json:"malformed"` // carrier messages that could not be read
}

// Memory per call held (steady state minus the idle baseline, after a collection).
type Memory struct {
	RSS  float64 `json:"rss"`
	Heap float64 `json:"heap"`
}

// After is how far the Handset was from its idle baseline once every call had ended.
type After struct {
	CallsActive     int     `json:"calls_active"`
	RSSDeltaKB      float64 `json:"rss_delta_kb"`
	HeapDeltaKB     float64 `json:"heap_delta_kb"`
	GoroutinesDelta int     `json:"goroutines_delta"`
}

// Drift is the Handset's resident memory and goroutines a minute into the hold and at its
// end, and the change between them in percent.
type Drift struct {
	FirstMinute       Reading `json:"first_minute"`
	End               Reading `json:"end"`
	RSSPercent        float64 `json:"rss_percent"`
	GoroutinesPercent float64 `json:"goroutines_percent"`
}

// Reading is one sample of the process, after a collection.
type Reading struct {
	RSSKB      float64 `json:"rss_kb"`
	HeapKB     float64 `json:"heap_kb"`
	Goroutines int     `json:"goroutines"`
}

func drift(first, end sample) *Drift {
	read := func(s sample) Reading {
		return Reading{RSSKB: round1(s.rss / 1024), HeapKB: round1(s.heap / 1024), Goroutines: int(s.goroutines)}
	}
	pct := func(a, b float64) float64 {
		if a <= 0 {
			return -1
		}
		return round3((b - a) / a * 100)
	}
	return &Drift{FirstMinute: read(first), End: read(end), RSSPercent: pct(first.rss, end.rss),
		GoroutinesPercent: pct(first.goroutines, end.goroutines)}
}

// Errors the callers saw.
type Errors struct {
	Total          int64    `json:"total"`
	DialFailed     int64    `json:"dial_failed"`
	DroppedCalls   int64    `json:"dropped_calls"`   // ended by Handset before the caller hung up
	TurnsLost      int64    `json:"turns_lost"`      // an utterance with no reply within the wait
	ProtocolErrors int64    `json:"protocol_errors"` // messages from Handset a carrier would reject
	Examples       []string `json:"examples,omitempty"`
}

// Setup is what was measured: filled in by the command.
type Setup struct {
	Mode            string  `json:"mode"` // child process, in process, target
	VAD             string  `json:"vad"`
	Audio           string  `json:"audio"`
	AgentFirstToken float64 `json:"agent_first_token_ms"`
	TTSFirstByte    float64 `json:"tts_first_byte_ms"`
	Ramp            float64 `json:"ramp_calls_per_second"`
	// HistoryLimit is the messages each call's history holds (HANDSET_AGENT_HISTORY_LIMIT; 0
	// all): the one part of a call that grows with its turns, up to this window. Nil against
	// a --target, whose settings the bench does not know.
	HistoryLimit *int `json:"history_limit,omitempty"`
	// Recorded: every call was recorded (HANDSET_RECORD); false against a --target.
	Recorded bool `json:"recorded,omitempty"`
}

// Machine is where the bench ran.
type Machine struct {
	Cores     int    `json:"cores"`
	GoVersion string `json:"go"`
	OS        string `json:"os"`
}

// fill computes the report from the samples: base (idle), start and end of the hold, and
// after the calls.
func (r *Report) fill(o Options, base, start, end, after sample, held int64, t *tally) {
	r.CallsHeld = int(held)
	r.TurnsCompleted = int(t.turns.Load())
	r.FramesSent = int64(after.frames - base.frames)
	r.DroppedFrames = Dropped{Inbound: int64(after.dropped - base.dropped), Malformed: int64(after.malformed - base.malformed)}
	late := after.lateness.minus(base.lateness)
	r.Jitter = fromHistogram(late)
	if rtp := after.rtpLateness.minus(base.rtpLateness); rtp.total > 0 {
		p := fromHistogram(rtp)
		n := int64(after.rtpUnderrun - base.rtpUnderrun)
		r.RTPSend, r.RTPUnderruns = &p, &n
	}
	r.Latency = fromHistogram(after.overhead.minus(base.overhead))
	r.CPUPerCallMinute, r.MemoryPerCall.RSS, r.MemoryPerCall.Heap, r.GoroutinesPerCall = -1, -1, -1, -1
	if held > 0 {
		minutes := end.at.Sub(start.at).Minutes()
		if minutes > 0 {
			r.CPUPerCallMinute = round3((end.cpu - start.cpu) / (float64(held) * minutes))
		}
		r.MemoryPerCall = Memory{RSS: round1((end.rss - base.rss) / 1024 / float64(held)), Heap: round1((end.heap - base.heap) / 1024 / float64(held))}
		r.GoroutinesPerCall = round1((end.goroutines - base.goroutines) / float64(held))
	}
	r.After = After{CallsActive: int(after.callsActive), RSSDeltaKB: round1((after.rss - base.rss) / 1024),
		HeapDeltaKB: round1((after.heap - base.heap) / 1024), GoroutinesDelta: int(after.goroutines - base.goroutines)}
	r.Errors = Errors{DialFailed: t.dialFailed.Load(), DroppedCalls: t.droppedCalls.Load(), TurnsLost: t.turnsLost.Load(),
		ProtocolErrors: t.protocolErrors.Load()}
	r.Errors.Total = r.Errors.DialFailed + r.Errors.DroppedCalls + r.Errors.TurnsLost + r.Errors.ProtocolErrors
	t.mu.Lock()
	r.Errors.Examples = append([]string(nil), t.examples...)
	t.mu.Unlock()
}

// fromHistogram estimates percentiles in milliseconds from seconds buckets.
func fromHistogram(h histogram) Percentiles {
	ms := func(q float64) float64 {
		v := h.quantile(q)
		if math.IsNaN(v) {
			return -1
		}
		return round3(v * 1000)
	}
	return Percentiles{P50: ms(.5), P95: ms(.95), P99: ms(.99), Samples: int64(h.total), Source: "histogram"}
}

// journalLatency reads every journal of calls started since `since` (the data folder is on
// this machine) and takes the exact overhead of each turn.
func journalLatency(callsDir string, since time.Time) Percentiles {
	paths, _ := filepath.Glob(filepath.Join(callsDir, "*", "events.jsonl"))
	var values []float64
	for _, p := range paths {
		if fi, err := os.Stat(p); err != nil || fi.ModTime().Before(since) {
			continue
		}
		events, err := obs.ReadFile(p)
		if err != nil {
			continue
		}
		for _, t := range obs.Turns(events) {
			if t.OverheadMS >= 0 {
				values = append(values, t.OverheadMS)
			}
		}
	}
	p50, p95, p99 := percentiles(values)
	out := Percentiles{P50: round3(p50), P95: round3(p95), P99: round3(p99), Samples: int64(len(values)), Source: "journals"}
	if len(values) == 0 {
		out.P50, out.P95, out.P99 = -1, -1, -1
	}
	return out
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Complete reports whether every figure the report promises was measured.
func (r Report) Complete() error {
	var missing []string
	check := func(name string, ok bool) {
		if !ok {
			missing = append(missing, name)
		}
	}
	check("calls_held", r.CallsHeld > 0)
	check("turns_completed", r.TurnsCompleted > 0)
	check("gateway_latency_ms", r.Latency.Samples > 0 && r.Latency.P99 >= 0)
	check("frame_jitter_ms", r.Jitter.Samples > 0 && r.Jitter.P99 >= 0)
	check("cpu_seconds_per_call_minute", r.CPUPerCallMinute >= 0)
	check("memory_per_call_kb", r.MemoryPerCall.RSS != -1 && r.MemoryPerCall.Heap != -1)
	check("goroutines_per_call", r.GoroutinesPerCall >= 0)
	if len(missing) > 0 {
		return fmt.Errorf("bench: the report is missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// Print writes the report as a table for people.
func (r Report) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	ms := func(p Percentiles) string {
		if p.Samples == 0 {
			return "not measured"
		}
		return fmt.Sprintf("p50 %.3f  p95 %.3f  p99 %.3f ms  (%d, %s)", p.P50, p.P95, p.P99, p.Samples, p.Source)
	}
	row("calls held", fmt.Sprintf("%d of %d, for %.0f s", r.CallsHeld, r.CallsRequested, r.HoldSeconds))
	row("turns completed", fmt.Sprint(r.TurnsCompleted))
	row("gateway-added latency", ms(r.Latency))
	row("outbound frame jitter", ms(r.Jitter))
	if r.RTPSend != nil {
		row("RTP send lateness", ms(*r.RTPSend))
	}
	if r.RTPUnderruns != nil {
		row("RTP underruns", fmt.Sprintf("%d silent frames inside sentences (the playout fell behind the send clock)", *r.RTPUnderruns))
	}
	if r.Arrival != nil {
		row("audio arrival lateness", ms(*r.Arrival))
	}
	row("frames sent / dropped", fmt.Sprintf("%d / %d inbound dropped, %d malformed", r.FramesSent, r.DroppedFrames.Inbound, r.DroppedFrames.Malformed))
	row("CPU per call-minute", fmt.Sprintf("%.3f s", r.CPUPerCallMinute))
	row("memory per call", fmt.Sprintf("%.0f KB resident, %.0f KB Go heap", r.MemoryPerCall.RSS, r.MemoryPerCall.Heap))
	row("goroutines per call", fmt.Sprintf("%.1f", r.GoroutinesPerCall))
	row("after the calls", fmt.Sprintf("%d calls active; resident %+.0f KB, heap %+.0f KB, goroutines %+d against the idle baseline",
		r.After.CallsActive, r.After.RSSDeltaKB, r.After.HeapDeltaKB, r.After.GoroutinesDelta))
	if d := r.Drift; d != nil {
		row("drift over the hold", fmt.Sprintf("resident %.0f → %.0f KB (%+.1f %%), goroutines %d → %d (%+.1f %%), from a minute in to the end",
			d.FirstMinute.RSSKB, d.End.RSSKB, d.RSSPercent, d.FirstMinute.Goroutines, d.End.Goroutines, d.GoroutinesPercent))
	}
	row("errors", fmt.Sprintf("%d (dial %d, dropped calls %d, turns lost %d, protocol %d)", r.Errors.Total,
		r.Errors.DialFailed, r.Errors.DroppedCalls, r.Errors.TurnsLost, r.Errors.ProtocolErrors))
	for _, e := range r.Errors.Examples {
		row("", e)
	}
	notes := ""
	switch h := r.Setup.HistoryLimit; {
	case h != nil && *h > 0:
		notes = fmt.Sprintf("; notes kept %d messages", *h)
	case h != nil:
		notes = "; notes kept whole"
	}
	if r.Setup.Recorded {
		notes += "; calls recorded"
	}
	row("setup", fmt.Sprintf("%s, VAD %s, %s; fake agent first token %.0f ms, TTS first byte %.0f ms; ramp %.0f calls/s%s",
		r.Setup.Mode, r.Setup.VAD, r.Setup.Audio, r.Setup.AgentFirstToken, r.Setup.TTSFirstByte, r.Setup.Ramp, notes))
	row("machine", fmt.Sprintf("%d cores, %s, %s", r.Machine.Cores, r.Machine.OS, r.Machine.GoVersion))
	_ = tw.Flush()
}
