package obs

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/registry"
)

// Verdict is what Diagnose makes of a call: the first broken stage, what went wrong
// there and the fix, with the journal lines that led to it.
type Verdict struct {
	CallID string `json:"call_id,omitempty"` // from the journal's folder; Diagnose leaves it empty
	// Stage is carrier, vad, stt, agent, tts or playout; empty when no stage is broken.
	Stage    string   `json:"stage"`
	Problem  string   `json:"problem"`
	Fix      string   `json:"fix"`
	Evidence []string `json:"evidence"`
	// Warnings are worth a look but did not break the call (or broke a later stage too).
	Warnings []Warning `json:"warnings,omitempty"`
}

// Warning is a problem short of a broken stage; Stage is empty for the call as a whole.
type Warning struct {
	Stage   string `json:"stage"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
}

// Healthy is the Problem of a verdict that found no broken stage.
const Healthy = "no problem found"

// Thresholds of the decision tree.
const (
	slowResponseMS = 1500 // response_ms p50 above this is a slow call
	slowEndpointMS = 1000 // endpoint_ms p50 above this is slow endpointing
	agentStuckMS   = 5000 // an agent turn with no answer for this long is stuck
	ttsStuckMS     = 3000 // a sentence with no audio for this long is stuck
	playoutStuckMS = 2000 // synthesised audio not on the wire this long is stuck
	noMarksMS      = 5000 // audio out this long with no mark back: the carrier is not playing it
	shortCallMS    = 3000 // less audio than this and silence is a hang-up, not a deaf VAD
	settleMS       = 2000 // time STT and turn-taking get after speech before absence counts
)

// Diagnose walks the stages in order (carrier, vad, stt, agent, tts, playout) and names
// the first broken one. A stage that only saw nothing (the VAD heard no speech) gives way
// to a later stage that recorded an error, since a caller who hears nothing says nothing.
func Diagnose(events []Event) Verdict {
	if len(events) == 0 {
		return Verdict{Problem: "the journal is empty", Fix: "Handset writes call.start as it admits a call: an empty journal means it stopped at once; the server log says why.", Evidence: []string{}}
	}
	d := digestOf(events)
	lat := latencyOf(Turns(events))
	checks, callWarnings := d.checks(lat)
	pick := -1
	for i, c := range checks {
		if c.report.Status == StatusFailed {
			pick = i
			break
		}
	}
	if pick >= 0 && checks[pick].report.Stage == StageVAD {
		for j := pick + 1; j < len(checks); j++ {
			if checks[j].report.Status == StatusFailed && checks[j].explicit {
				pick = j
				break
			}
		}
	}
	var v Verdict
	for i, c := range checks {
		if c.report.Status == StatusFailed && i != pick {
			v.Warnings = append(v.Warnings, Warning{Stage: c.report.Stage, Problem: c.report.Problem, Fix: c.fix})
		}
		v.Warnings = append(v.Warnings, c.warnings...)
	}
	v.Warnings = append(v.Warnings, callWarnings...)
	if pick < 0 {
		v.Problem, v.Evidence = Healthy, d.healthEvidence(lat)
		return v
	}
	c := checks[pick]
	v.Stage, v.Problem, v.Fix, v.Evidence = c.report.Stage, c.report.Problem, c.fix, c.evidence
	return v
}

// check is one stage's finding: its report, and when it failed, the fix and evidence.
type check struct {
	report   StageReport
	fix      string
	evidence []string
	// explicit: the failure is an error the journal recorded, not only a missing event.
	explicit bool
	warnings []Warning
}

// BridgeCarrier is the carrier an agent bridge session's journal names in call.start:
// the voice platform in front of it has the audio, and only the agent is Handset's.
const BridgeCarrier = "bridge"

// bridged reports whether the journal is an agent bridge session's.
func (d *digest) bridged() bool { return d.start != nil && d.start.Carrier == BridgeCarrier }

func (c *check) fail(problem, fix string, explicit bool, evidence ...string) {
	c.report.Status, c.report.Problem, c.fix, c.explicit = StatusFailed, problem, fix, explicit
	c.evidence = evidence
}

func (c *check) warn(problem, fix string) {
	c.warnings = append(c.warnings, Warning{Stage: c.report.Stage, Problem: problem, Fix: fix})
}

// checks runs every stage's check and settles their statuses; call-wide warnings (the
// slow-reply ones go to the stage they name) come back separately.
func (d *digest) checks(lat Latency) ([]check, []Warning) {
	checks := []check{d.carrier(), d.vad(), d.stt(), d.agent(), d.tts(), d.playout()}
	if d.bridged() {
		for i, c := range checks {
			if c.report.Stage != StageAgent {
				checks[i] = check{report: StageReport{Stage: c.report.Stage, Status: StatusNotReached,
					Detail: "the voice platform's (an agent bridge session)"}}
			}
		}
	}
	var general []Warning
	for _, w := range d.callWarnings(lat) {
		attached := false
		for i := range checks {
			if checks[i].report.Stage == w.Stage && checks[i].report.Status != StatusNotReached {
				checks[i].warnings, attached = append(checks[i].warnings, w), true
			}
		}
		if !attached {
			general = append(general, w)
		}
	}
	for i := range checks {
		r := &checks[i].report
		switch {
		case r.Status != "":
		case len(checks[i].warnings) > 0:
			problems := make([]string, len(checks[i].warnings))
			for j, w := range checks[i].warnings {
				problems[j] = w.Problem
			}
			r.Status, r.Problem = StatusWarn, strings.Join(problems, "; ")
		default:
			r.Status = StatusOK
		}
	}
	return checks, general
}

// callWarnings: slow replies (named after their biggest wait), slow endpointing, and an
// end that needs a look.
func (d *digest) callWarnings(lat Latency) []Warning {
	var out []Warning
	if r := lat.ResponseMS; r.N > 0 && r.P50 > slowResponseMS {
		out = append(out, d.slowReplies(lat))
	}
	if e := lat.EndpointMS; e.N > 0 && e.P50 > slowEndpointMS {
		out = append(out, Warning{Stage: StageSTT,
			Problem: fmt.Sprintf("transcripts arrive late: %.0f ms (p50) from the end of the caller's speech to the final transcript", e.P50),
			Fix: "The caller waits this on top of the reply: check the network to the STT provider" +
				orEmpty(" (", sttProvider(d.name(StageSTT)).url, ")") + ", or choose a faster STT model.",
		})
	}
	switch {
	case d.end == nil && d.bridged():
		// a bridge session has no end Handset sees: its journal holds the turns so far
	case d.end == nil:
		out = append(out, Warning{Problem: "the journal has no call.end: the call is still running, or Handset stopped before it ended",
			Fix: "If Handset crashed or was killed, the server log says why; the journal is complete up to its last line."})
	case d.end.Reason == "internal_error":
		out = append(out, Warning{Problem: fmt.Sprintf("the call ended on an internal error at %s: a bug in Handset", seconds(d.end.MS)),
			Fix: "The server log has the panic and its stack; please report it with this journal."})
	case d.end.Reason == "max_duration":
		out = append(out, Warning{Problem: fmt.Sprintf("the call was cut off at the maximum call length (%s)", seconds(d.end.MS)),
			Fix: "HANDSET_MAX_CALL sets the limit."})
	}
	return out
}

// slowReplies names the biggest wait inside response_ms.
func (d *digest) slowReplies(lat Latency) Warning {
	ttft, ttfb, over := lat.AgentTTFTMS.P50, lat.TTSTTFBMS.P50, lat.OverheadMS.P50
	writing := -1.0
	if ttft >= 0 && ttfb >= 0 && over >= 0 {
		writing = lat.ResponseMS.P50 - ttft - ttfb - over
	}
	head := fmt.Sprintf("slow replies: the caller waits %.0f ms (p50) after speaking; ", lat.ResponseMS.P50)
	agent := agentProvider(d.name(StageAgent))
	biggest := max(ttft, ttfb, over, writing)
	if biggest < 0 {
		return Warning{Problem: head + "the journal does not say which wait is to blame",
			Fix: "Run `handset trace` on the call for the per-turn breakdown."}
	}
	switch biggest {
	case ttft:
		return Warning{Stage: StageAgent, Problem: head + fmt.Sprintf("most of it is the agent's first token (%.0f ms p50)", ttft),
			Fix: agent.slowFix}
	case writing:
		return Warning{Stage: StageAgent, Problem: head + fmt.Sprintf("most of it is the agent writing its first sentence (%.0f ms p50 after its first token)", writing),
			Fix: "Ask for a short first sentence in HANDSET_SYSTEM_PROMPT, or use a faster model (HANDSET_AGENT_MODEL): speech starts only once a whole sentence is in."}
	case ttfb:
		return Warning{Stage: StageTTS, Problem: head + fmt.Sprintf("most of it is TTS's first byte (%.0f ms p50)", ttfb),
			Fix: ttsProvider(d.name(StageTTS)).slowFix}
	}
	return Warning{Problem: head + fmt.Sprintf("most of it is Handset itself (%.0f ms p50)", over),
		Fix: "Handset's own share should be a few milliseconds: the host is probably short of CPU (other load, too many calls at once for its cores)."}
}

// name is the provider a stage used, from call.start.
func (d *digest) name(stage string) string {
	if d.start == nil {
		return ""
	}
	switch stage {
	case StageCarrier:
		return d.start.Carrier
	case StageSTT:
		return d.start.STT
	case StageTTS:
		return d.start.TTS
	case StageAgent:
		return d.start.Agent
	}
	return ""
}

// healthEvidence sums up a call with no broken stage.
func (d *digest) healthEvidence(lat Latency) []string {
	out := []string{}
	if d.start != nil {
		out = append(out, evidenceLine(d.start))
	}
	answered := 0
	for _, t := range d.turnsInOrder() {
		if t.n > 0 && t.firstAudio != nil {
			answered++
		}
	}
	commits := d.n(TurnCommit)
	out = append(out, fmt.Sprintf("%d of %s answered with audio", answered, plural(commits, "caller turn")))
	if r := lat.ResponseMS; r.N > 0 {
		out = append(out, fmt.Sprintf("response_ms p50 %.0f ms, max %.0f ms", r.P50, r.Max))
	}
	if d.end != nil {
		out = append(out, evidenceLine(d.end))
	}
	return out
}

// evidenceLine renders a journal line for a verdict: "812 ms stt.error auth: …".
func evidenceLine(e *Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d ms %s", e.MS, e.Type)
	if e.Turn > 0 {
		fmt.Fprintf(&b, " turn %d", e.Turn)
	}
	switch {
	case e.Type == CallStart:
		fmt.Fprintf(&b, " carrier=%s agent=%s stt=%s tts=%s", e.Carrier, e.Agent, e.STT, e.TTS)
	case e.Type == CarrierSignal:
		fmt.Fprintf(&b, " %s %s", e.Kind, e.Name)
		if e.Reason != "" {
			b.WriteString(" (" + e.Reason + ")")
		}
	case e.Message != "" && e.Kind != "":
		fmt.Fprintf(&b, " %s: %s", e.Kind, e.Message)
	case e.Message != "":
		b.WriteString(": " + e.Message)
	case e.Reason != "":
		b.WriteString(" " + e.Reason)
	case e.Text != "":
		fmt.Fprintf(&b, " %q", clip(e.Text, 60))
	}
	return b.String()
}

// evidenceOf renders up to n events.
func evidenceOf(events []Event, n int) []string {
	var out []string
	for i := range events[:min(len(events), n)] {
		out = append(out, evidenceLine(&events[i]))
	}
	if len(events) > n {
		out = append(out, fmt.Sprintf("… and %d more %s", len(events)-n, events[0].Type))
	}
	return out
}

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func orEmpty(before, s, after string) string {
	if s == "" {
		return ""
	}
	return before + s + after
}

// provider is how a verdict names a provider and the settings that fix it.
type provider struct {
	name     string // as a sentence names it: "Deepgram"
	keyVar   string // the setting holding its key; empty for engines that take none
	keyFix   string
	url      string // the setting with its address; empty for engines on this host
	urlHint  string // added to "check URL is reachable"
	modelFix string // the settings that name its model or voice
	slowFix  string // what makes it answer sooner
}

// sttProvider names a speech-to-text provider as its catalogue entry describes it.
func sttProvider(name string) provider {
	if p, ok := registry.Find[registry.STT](name); ok {
		return described(p.Info())
	}
	return provider{name: nameOr(name, "the STT provider"), keyVar: "the STT key", keyFix: "Check the STT provider's key (HANDSET_STT names the provider).",
		modelFix: "Check the STT provider's model and language settings."}
}

// ttsProvider names a text-to-speech provider as its catalogue entry describes it.
func ttsProvider(name string) provider {
	const slowFix = "Use a faster TTS model or provider."
	if p, ok := registry.Find[registry.TTS](name); ok {
		d := described(p.Info())
		d.slowFix = cmp.Or(d.slowFix, slowFix)
		return d
	}
	return provider{name: nameOr(name, "the TTS provider"), keyVar: "the TTS key", keyFix: "Check the TTS provider's key (HANDSET_TTS names the provider).",
		modelFix: "Check the TTS provider's model and voice settings.", slowFix: slowFix}
}

// described is a provider as it describes itself: its title and its hints.
func described(a registry.About) provider {
	h := a.Hints
	return provider{name: a.Title, keyVar: h.KeyVar, keyFix: h.KeyFix, url: h.URLVar, urlHint: h.URLHint,
		modelFix: h.ModelFix, slowFix: h.SlowFix}
}

// agentProvider names the runtime as the registry describes it (its Title and Hints);
// an unknown or unset one gets advice that fits any runtime.
func agentProvider(name string) provider {
	p := provider{name: nameOr(name, "the agent runtime"), keyVar: "HANDSET_AGENT_KEY", url: "HANDSET_AGENT_URL",
		keyFix:   "Set HANDSET_AGENT_KEY to a key the runtime at HANDSET_AGENT_URL accepts.",
		modelFix: "Check HANDSET_AGENT_MODEL names a model the runtime has.",
		slowFix:  "Use a faster model (HANDSET_AGENT_MODEL)." + registry.LongTurnFiller}
	a, ok := registry.Find[registry.Agent](name)
	if !ok {
		return p
	}
	h := a.Hints
	return provider{name: a.Title, keyVar: h.KeyVar, keyFix: h.KeyFix, url: h.URLVar, urlHint: h.URLHint,
		modelFix: cmp.Or(h.ModelFix, p.modelFix), slowFix: cmp.Or(h.SlowFix, p.slowFix)}
}

// explain turns a stage's first error into a cause and a fix that names the setting.
func explain(p provider, stage string, e *Event) (cause, fix string) {
	status := httpStatus(e.Message)
	switch e.Kind {
	case "auth":
		if p.keyVar == "" {
			return p.name + " refused its credentials" + status, p.modelFix
		}
		return p.keyVar + " was rejected" + status, p.keyFix
	case "quota":
		return p.name + " refused for quota or rate limit" + status,
			"Add credit or raise the rate limit of the " + p.name + " account, or take fewer calls at once (HANDSET_MAX_CALLS)."
	case "transient":
		return p.name + " failed with a server or network error" + status,
			"Usually passes on its own; if it keeps happening, check " + reach(p) + "."
	case "timeout":
		if stage == StageAgent {
			return p.name + " did not answer in time",
				p.name + " is slow or stuck: check that it is running and not overloaded, and that " + reach(p) + ". HANDSET_AGENT_TIMEOUT (60s by default) is how long Handset waits for it to say anything, HANDSET_AGENT_TURN_TIMEOUT (90s) how long a whole turn may take, tools included."
		}
		return p.name + " did not answer in time", "Check " + reach(p) + "."
	case "bad_input":
		return p.name + " refused the request" + status, p.modelFix
	case "protocol":
		if p.url == "" {
			return p.name + " answered something Handset cannot read", p.modelFix
		}
		return p.name + " answered something Handset cannot read",
			"Check " + p.url + " points at " + p.name + " itself, not a web page, a proxy's error page or another API."
	}
	return p.name + " failed", "The error message says why; check " + reach(p) + "."
}

// reach is what to check when a provider cannot be reached.
func reach(p provider) string {
	if p.url == "" {
		return p.name + " works on this host" + p.urlHint
	}
	return p.url + " is reachable from this host" + p.urlHint
}

// httpStatus finds "HTTP 401" in a provider error message: " (HTTP 401)", or "".
func httpStatus(msg string) string {
	i := strings.Index(msg, "HTTP ")
	if i < 0 || len(msg) < i+8 {
		return ""
	}
	code := msg[i+5 : i+8]
	for _, c := range code {
		if c < '0' || c > '9' {
			return ""
		}
	}
	return " (HTTP " + code + ")"
}

func nameOr(name, fallback string) string {
	if name == "" {
		return fallback
	}
	return name
}
