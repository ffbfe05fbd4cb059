package dashboard

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/obs"
)

// turnTiming is one caller turn's latencies (obs.Turns) and where each began, in
// milliseconds from the turn's STT final (the chart's zero); NaN where unknown.
type turnTiming struct {
	obs.TurnSummary
	RequestAt, TTSRequestAt float64
}

// timings reads each caller turn's latencies and their starts from a journal: the first
// agent request and the first TTS request (the filler's too, as obs.Turns measures).
func timings(events []obs.Event) []turnTiming {
	summaries := obs.Turns(events)
	finals := map[int]time.Time{} // turn -> the STT final it committed
	var lastFinal time.Time
	firsts := map[int]map[string]time.Time{}
	for _, e := range events {
		switch e.Type {
		case obs.STTFinal:
			lastFinal = e.TS
		case obs.TurnCommit:
			if _, ok := finals[e.Turn]; !ok {
				finals[e.Turn] = lastFinal
			}
			lastFinal = time.Time{}
		case obs.AgentRequest, obs.TTSRequest:
			if firsts[e.Turn] == nil {
				firsts[e.Turn] = map[string]time.Time{}
			}
			if _, ok := firsts[e.Turn][e.Type]; !ok {
				firsts[e.Turn][e.Type] = e.TS
			}
		}
	}
	out := make([]turnTiming, len(summaries))
	for i, s := range summaries {
		out[i] = turnTiming{TurnSummary: s, RequestAt: math.NaN(), TTSRequestAt: math.NaN()}
		final := finals[s.Turn]
		if final.IsZero() {
			continue
		}
		if t, ok := firsts[s.Turn][obs.AgentRequest]; ok {
			out[i].RequestAt = float64(t.Sub(final)) / float64(time.Millisecond)
		}
		if t, ok := firsts[s.Turn][obs.TTSRequest]; ok {
			out[i].TTSRequestAt = float64(t.Sub(final)) / float64(time.Millisecond)
		}
	}
	return out
}

// latencyRow is one latency over the call: its p50 (as trace computes it) and p95.
type latencyRow struct {
	Name, Meaning string
	N             int
	P50, P95, Max float64
}

// latencyRows summarise the call's turns for the table under the chart.
func latencyRows(lat obs.Latency, turns []turnTiming) []latencyRow {
	row := func(name, meaning string, s obs.Stat, pick func(obs.TurnSummary) float64) latencyRow {
		var v []float64
		for _, t := range turns {
			if x := pick(t.TurnSummary); x >= 0 {
				v = append(v, x)
			}
		}
		return latencyRow{Name: name, Meaning: meaning, N: s.N, P50: s.P50, P95: p95(v), Max: s.Max}
	}
	return []latencyRow{
		row("endpoint_ms", "end of speech to STT final", lat.EndpointMS, func(t obs.TurnSummary) float64 { return t.EndpointMS }),
		row("agent_ttft_ms", "agent request to first token", lat.AgentTTFTMS, func(t obs.TurnSummary) float64 { return t.AgentTTFTMS }),
		row("tts_ttfb_ms", "TTS request to first byte", lat.TTSTTFBMS, func(t obs.TurnSummary) float64 { return t.TTSTTFBMS }),
		row("overhead_ms", "Handset's own share", lat.OverheadMS, func(t obs.TurnSummary) float64 { return t.OverheadMS }),
		row("response_ms", "STT final to first audio on the wire", lat.ResponseMS, func(t obs.TurnSummary) float64 { return t.ResponseMS }),
		row("filler_ms", "STT final to the filler's first audio", lat.FillerMS, func(t obs.TurnSummary) float64 { return t.FillerMS }),
	}
}

// p95 is the nearest-rank 95th percentile; -1 for no values.
func p95(v []float64) float64 {
	if len(v) == 0 {
		return -1
	}
	slices.Sort(v)
	return v[int(math.Ceil(0.95*float64(len(v))))-1]
}

// Waterfall geometry, in the SVG's own units.
const (
	wfWidth  = 760.0
	wfLabels = 170.0 // the label column
	wfRow    = 18.0
	wfGap    = 10.0
)

// bar is one span of a turn's row.
type bar struct {
	label, class string
	from, to     float64 // ms from the STT final
	figure       float64
}

// waterfall draws each caller turn's latencies on one time axis whose zero is the turn's
// STT final: end of speech before it, then the agent, the voice, and the first audio on the
// wire. Every bar carries its figure as text and as a tooltip; the table below the chart
// holds the same numbers.
func waterfall(turns []turnTiming) template.HTML {
	if len(turns) == 0 {
		return ""
	}
	lo, hi := 0.0, 1.0
	rows := make([][]bar, len(turns))
	for i, t := range turns {
		var bars []bar
		add := func(label, class string, from, figure float64) {
			if figure < 0 || math.IsNaN(from) {
				return
			}
			bars = append(bars, bar{label: label, class: class, from: from, to: from + figure, figure: figure})
			lo, hi = math.Min(lo, from), math.Max(hi, from+figure)
		}
		add("end of speech → STT final", "wf-endpoint", -t.EndpointMS, t.EndpointMS)
		add("agent first token", "wf-agent", t.RequestAt, t.AgentTTFTMS)
		add("TTS first byte", "wf-tts", t.TTSRequestAt, t.TTSTTFBMS)
		add("first audio on the wire", "wf-response", 0, t.ResponseMS)
		if t.FillerMS >= 0 {
			add("filler's first audio", "wf-filler", 0, t.FillerMS)
		}
		rows[i] = bars
	}
	scale := (wfWidth - wfLabels - 70) / (hi - lo)
	x := func(ms float64) float64 { return wfLabels + (ms-lo)*scale }
	var b strings.Builder
	y := 24.0
	body := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	for i, t := range turns {
		body(`<g class="wf-turn"><text class="wf-head" x="0" y="%.1f">Turn %d: %s (Handset's share %s)</text>`,
			y+12, t.Turn, esc(clipText(t.Caller, 50)), esc(formatMS(t.OverheadMS)))
		y += wfRow
		for _, br := range rows[i] {
			w := math.Max((br.to-br.from)*scale, 1)
			body(`<g class="wf-bar %s"><title>Turn %d, %s: %s</title>`, br.class, t.Turn, esc(br.label), esc(formatMS(br.figure)))
			body(`<text class="wf-label" x="%.1f" y="%.1f">%s</text>`, wfLabels-6, y+12, esc(br.label))
			body(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2"></rect>`, x(br.from), y+3, w, wfRow-6)
			body(`<text class="wf-figure" x="%.1f" y="%.1f">%s</text></g>`, x(br.from)+w+4, y+12, esc(formatMS(br.figure)))
			y += wfRow
		}
		body(`</g>`)
		y += wfGap
	}
	// The zero line: the STT final of every turn.
	axis := fmt.Sprintf(`<line class="wf-zero" x1="%.1f" y1="16" x2="%.1f" y2="%.1f"></line><text class="wf-axis" x="%.1f" y="11">STT final</text>`,
		x(0), x(0), y, x(0)-24)
	return template.HTML(fmt.Sprintf(`<svg class="waterfall" viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="wf-title wf-desc">`+
		`<title id="wf-title">Latency of each caller turn</title>`+
		`<desc id="wf-desc">For each turn, bars on one time axis whose zero is the STT final: end of speech to the final, the agent's first token, the voice's first byte, and the first audio on the wire. The table below holds the same figures.</desc>`+
		`%s%s</svg>`, wfWidth, y+4, axis, b.String()))
}

// esc escapes text for SVG markup written by hand.
func esc(s string) string { return html.EscapeString(s) }

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
