package obs

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Stage names, in the order audio flows through a call.
const (
	StageCarrier = "carrier"
	StageVAD     = "vad"
	StageSTT     = "stt"
	StageAgent   = "agent"
	StageTTS     = "tts"
	StagePlayout = "playout"
)

// Stage statuses.
const (
	StatusOK         = "ok"
	StatusWarn       = "warn"
	StatusFailed     = "failed"
	StatusNotReached = "not reached"
)

// Journal notes written by the turn machine (turn.Note*); obs may not import turn.
const (
	noteDropped = "stt.dropped"
)

// CallTrace is a call read back from its journal, stage by stage.
type CallTrace struct {
	CallID      string    `json:"call_id,omitempty"` // from the journal's folder; Trace leaves it empty
	Journal     string    `json:"journal,omitempty"` // the journal's path; Trace leaves it empty
	Carrier     string    `json:"carrier"`
	Direction   string    `json:"direction"`
	CallerHash  string    `json:"caller_hash"`
	Caller      string    `json:"caller,omitempty"`      // withheld, unverified: why there is no caller hash
	Attestation string    `json:"attestation,omitempty"` // STIR/SHAKEN: A, B, C, none, failed
	Agent       string    `json:"agent"`
	STT         string    `json:"stt"`
	TTS         string    `json:"tts"`
	Start       time.Time `json:"start,omitzero"`
	DurationMS  int64     `json:"duration_ms"`
	// Ended is false when the journal has no call.end: the call is still running, or
	// Handset stopped without finishing it.
	Ended     bool   `json:"ended"`
	EndReason string `json:"end_reason,omitempty"`

	Stages  []StageReport `json:"stages"` // carrier, vad, stt, agent, tts, playout
	Turns   []TurnSummary `json:"turns"`
	Latency Latency       `json:"latency"`
	// Signalling is the call's setup and end as its carrier's own signalling recorded them
	// (a SIP trunk's INVITE, 200 OK, ACK, first RTP out, BYE); empty for carriers whose
	// calls are set up by their own platform.
	Signalling []SignalLine `json:"signalling,omitempty"`
	// Warnings are what is worth a look even where every stage worked (slow replies).
	Warnings []Warning `json:"warnings,omitempty"`
}

// SignalLine is one line of a call's signalling timeline: a message (carrier.signal) or
// the first audio packet out (media.first_out, Name "first RTP out").
type SignalLine struct {
	MS        int64  `json:"ms"`
	Name      string `json:"name"`                // as on the wire: "INVITE", "200 OK", "BYE"
	Direction string `json:"direction,omitempty"` // "in" (from the peer) or "out" (from Handset)
	Reason    string `json:"reason,omitempty"`    // a BYE's cause; an ACK that never came says why
}

// StageReport is what one stage did during the call. Only the stage's own facts block
// (Carrier for the carrier stage, and so on) is set.
type StageReport struct {
	Stage   string `json:"stage"`
	Status  string `json:"status"` // ok, warn, failed or not reached
	Detail  string `json:"detail"` // the facts in a few words
	Problem string `json:"problem,omitempty"`

	Carrier *CarrierFacts `json:"carrier,omitempty"`
	VAD     *VADFacts     `json:"vad,omitempty"`
	STT     *STTFacts     `json:"stt,omitempty"`
	Agent   *AgentFacts   `json:"agent,omitempty"`
	TTS     *TTSFacts     `json:"tts,omitempty"`
	Playout *PlayoutFacts `json:"playout,omitempty"`

	// Errors are the stage's failures (the first few), cancellations left out.
	Errors []StageError `json:"errors,omitempty"`
}

// StageError is one error event of a stage.
type StageError struct {
	MS      int64  `json:"ms"`
	Turn    int    `json:"turn,omitempty"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// CarrierFacts: the caller's media. Times are milliseconds of call time, -1 for never.
type CarrierFacts struct {
	FirstMediaMS int64 `json:"first_media_ms"`
	Malformed    int   `json:"malformed"` // frames dropped as unreadable
}

// VADFacts: what the voice activity detector heard.
type VADFacts struct {
	SpeechStarts  int   `json:"speech_starts"`
	SpeechEnds    int   `json:"speech_ends"`
	FirstSpeechMS int64 `json:"first_speech_ms"`
}

// STTFacts: transcripts and failures of speech recognition.
type STTFacts struct {
	Finals       int   `json:"finals"`
	Partials     int   `json:"partials"`
	Dropped      int   `json:"dropped"` // finals the filters dropped (echo, duplicate, non-speech)
	Commits      int   `json:"commits"` // caller turns handed to the agent
	Errors       int   `json:"errors"`
	FirstFinalMS int64 `json:"first_final_ms"`
}

// AgentFacts: the agent runtime's turns.
type AgentFacts struct {
	Requests    int `json:"requests"`
	FirstTokens int `json:"first_tokens"`
	Replies     int `json:"replies"` // agent.done
	Errors      int `json:"errors"`
	Progress    int `json:"progress"` // tool progress reports
}

// TTSFacts: speech synthesis, the greeting and fillers included.
type TTSFacts struct {
	Requests   int `json:"requests"`    // sentences sent
	FirstBytes int `json:"first_bytes"` // turns whose audio started
	Errors     int `json:"errors"`
	Fillers    int `json:"fillers"`
}

// PlayoutFacts: audio on the wire and what the carrier confirmed.
type PlayoutFacts struct {
	FirstAudio   int   `json:"first_audio"` // turns whose audio reached the carrier
	Greeting     bool  `json:"greeting"`    // the greeting (turn 0) reached the carrier
	Marks        int   `json:"marks"`       // sentences the carrier confirmed playing
	Done         int   `json:"done"`        // turns played to their end
	Clears       int   `json:"clears"`
	BargeIns     int   `json:"barge_ins"`
	FirstAudioMS int64 `json:"first_audio_ms"`
}

// Latency summarises each latency of the caller turns, named as INTERFACE.md names them.
type Latency struct {
	EndpointMS  Stat `json:"endpoint_ms"`
	AgentTTFTMS Stat `json:"agent_ttft_ms"`
	TTSTTFBMS   Stat `json:"tts_ttfb_ms"`
	ResponseMS  Stat `json:"response_ms"`
	FillerMS    Stat `json:"filler_ms"` // over the turns the filler began
	OverheadMS  Stat `json:"overhead_ms"`
}

// Stat is a latency over the turns that measured it; all -1 when none did.
type Stat struct {
	N   int     `json:"n"`
	Avg float64 `json:"avg"`
	P50 float64 `json:"p50"`
	Max float64 `json:"max"`
}

// Trace reads a call's journal into its stages, turns and latencies.
func Trace(events []Event) CallTrace {
	d := digestOf(events)
	t := CallTrace{DurationMS: d.durationMS(), Turns: Turns(events)}
	if s := d.start; s != nil {
		t.Carrier, t.Direction, t.CallerHash = s.Carrier, s.Direction, s.CallerHash
		t.Caller, t.Attestation = s.Caller, s.Attestation
		t.Agent, t.STT, t.TTS = s.Agent, s.STT, s.TTS
		t.Start = s.TS
	}
	if d.end != nil {
		t.Ended, t.EndReason = true, d.end.Reason
	}
	if t.Turns == nil {
		t.Turns = []TurnSummary{}
	}
	t.Latency = latencyOf(t.Turns)
	t.Signalling = signallingOf(events)
	checks, warnings := d.checks(t.Latency)
	for _, c := range checks {
		t.Stages = append(t.Stages, c.report)
		t.Warnings = append(t.Warnings, c.warnings...)
	}
	t.Warnings = append(t.Warnings, warnings...)
	return t
}

// latencyOf summarises each latency over the turns.
func latencyOf(turns []TurnSummary) Latency {
	pick := func(f func(TurnSummary) float64) Stat {
		var v []float64
		for _, t := range turns {
			v = append(v, f(t))
		}
		return statOf(v)
	}
	return Latency{
		EndpointMS:  pick(func(t TurnSummary) float64 { return t.EndpointMS }),
		AgentTTFTMS: pick(func(t TurnSummary) float64 { return t.AgentTTFTMS }),
		TTSTTFBMS:   pick(func(t TurnSummary) float64 { return t.TTSTTFBMS }),
		ResponseMS:  pick(func(t TurnSummary) float64 { return t.ResponseMS }),
		FillerMS:    pick(func(t TurnSummary) float64 { return t.FillerMS }),
		OverheadMS:  pick(func(t TurnSummary) float64 { return t.OverheadMS }),
	}
}

// statOf summarises the measured (non-negative) values; p50 is the nearest-rank median.
func statOf(values []float64) Stat {
	var v []float64
	for _, x := range values {
		if x >= 0 {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return Stat{Avg: -1, P50: -1, Max: -1}
	}
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	return Stat{
		N:   len(v),
		Avg: math.Round(sum/float64(len(v))*10) / 10,
		P50: v[(len(v)-1)/2],
		Max: v[len(v)-1],
	}
}

// digest indexes a journal for the stage checks: events by type (cancellations left
// out: they are not failures) and the milestones of each turn, the greeting (turn 0) too.
type digest struct {
	start, end *Event
	lastMS     int64
	byType     map[string][]Event
	turns      map[int]*turnLog
	order      []int // turn numbers as they first appear
}

// turnLog is one turn's first milestones; nil pointers were never journaled.
type turnLog struct {
	n                                 int
	commit, request, firstToken, done *Event
	agentErr, ttsReq, ttsByte         *Event
	firstAudio                        *Event
	progress, interrupted, replied    bool
	untilMS                           int64 // when the turn stopped being current: the next commit, or the end
}

// turnTypes are the event types that belong to a turn (the greeting's carry turn 0).
var turnTypes = map[string]bool{
	TurnCommit: true, AgentRequest: true, AgentFirstToken: true, AgentProgress: true, AgentDone: true,
	AgentError: true, TTSRequest: true, TTSFirstByte: true, PlayoutFirstAudio: true, TurnInterrupted: true,
}

func digestOf(events []Event) *digest {
	d := &digest{byType: map[string][]Event{}, turns: map[int]*turnLog{}}
	for i := range events {
		e := &events[i]
		if e.Kind == "canceled" && strings.HasSuffix(e.Type, ".error") {
			continue
		}
		d.byType[e.Type] = append(d.byType[e.Type], *e)
		d.lastMS = max(d.lastMS, e.MS)
		switch e.Type {
		case CallStart:
			if d.start == nil {
				d.start = e
			}
		case CallEnd:
			d.end = e
		}
		if turnTypes[e.Type] {
			d.turn(e.Turn).add(e)
		}
	}
	d.setWindows()
	return d
}

func (d *digest) turn(n int) *turnLog {
	t := d.turns[n]
	if t == nil {
		t = &turnLog{n: n}
		d.turns[n] = t
		d.order = append(d.order, n)
	}
	return t
}

func (t *turnLog) add(e *Event) {
	first := func(p **Event) {
		if *p == nil {
			*p = e
		}
	}
	switch e.Type {
	case TurnCommit:
		first(&t.commit)
	case AgentRequest:
		first(&t.request)
	case AgentFirstToken:
		first(&t.firstToken)
	case AgentProgress:
		t.progress = true
	case AgentDone:
		first(&t.done)
		t.replied = t.replied || strings.TrimSpace(e.Text) != ""
	case AgentError:
		first(&t.agentErr)
	case TTSRequest:
		first(&t.ttsReq)
	case TTSFirstByte:
		first(&t.ttsByte)
	case PlayoutFirstAudio:
		first(&t.firstAudio)
	case TurnInterrupted:
		t.interrupted = true
	}
}

// setWindows gives each turn the time it had: until the next caller turn was committed,
// or the call ended.
func (d *digest) setWindows() {
	commits := d.byType[TurnCommit]
	for _, t := range d.turns {
		from := t.startMS()
		t.untilMS = d.durationMS()
		for _, c := range commits {
			if c.Turn != t.n && c.MS >= from {
				t.untilMS = c.MS
				break
			}
		}
	}
}

// startMS is when the turn began: its commit, or (the greeting) its first TTS request.
func (t *turnLog) startMS() int64 {
	for _, e := range []*Event{t.commit, t.request, t.ttsReq, t.ttsByte, t.firstAudio} {
		if e != nil {
			return e.MS
		}
	}
	return 0
}

func (d *digest) durationMS() int64 {
	if d.end != nil {
		return d.end.MS
	}
	return d.lastMS
}

func (d *digest) n(typ string) int { return len(d.byType[typ]) }

func (d *digest) first(typ string) *Event {
	if ev := d.byType[typ]; len(ev) > 0 {
		return &ev[0]
	}
	return nil
}

// firstMS is when the first event of typ happened, -1 when none did.
func (d *digest) firstMS(typ string) int64 {
	if e := d.first(typ); e != nil {
		return e.MS
	}
	return -1
}

// turnsInOrder returns the turns by number, the greeting first.
func (d *digest) turnsInOrder() []*turnLog {
	out := make([]*turnLog, 0, len(d.turns))
	for _, n := range d.order {
		out = append(out, d.turns[n])
	}
	slices.SortStableFunc(out, func(a, b *turnLog) int { return a.n - b.n })
	return out
}

// stageErrors lists a stage's error events for a report (the first few).
func stageErrors(events []Event) []StageError {
	const keep = 10
	var out []StageError
	for _, e := range events[:min(len(events), keep)] {
		out = append(out, StageError{MS: e.MS, Turn: e.Turn, Kind: e.Kind, Message: e.Message})
	}
	return out
}

// kindCounts says how many errors of each kind: "auth", or "transient 2, timeout 1".
func kindCounts(events []Event) string {
	counts := map[string]int{}
	var kinds []string
	for _, e := range events {
		k := e.Kind
		if k == "" {
			k = "unknown"
		}
		if counts[k] == 0 {
			kinds = append(kinds, k)
		}
		counts[k]++
	}
	if len(kinds) == 1 && counts[kinds[0]] == 1 {
		return kinds[0]
	}
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// seconds formats call time for sentences: "850 ms", "2.4 s".
func seconds(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

// plural is "1 final", "2 finals".
func plural(n int, one string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %ss", n, one)
}
