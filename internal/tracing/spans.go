package tracing

import (
	"context"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/handset-voice/handset/internal/obs"
)

// Span names.
const (
	SpanCall           = "call"
	SpanTurn           = "turn"
	SpanSTTEndpoint    = "stt.endpoint"      // the caller stopped speaking → the final transcript
	SpanAgentFirstTok  = "agent.first_token" // the request to the agent runtime → its first token
	SpanAgent          = "agent"             // the request → the reply complete (or failed)
	SpanTTSFirstByte   = "tts.first_byte"    // the first sentence sent to the voice → its first audio
	SpanPlayout        = "playout"           // the first audio on the wire → played to the end, or interrupted
	canceledKind       = "canceled"
	greetingTurnNumber = 0
)

// callEvents is one finished call's journal as the tee kept it: the first maxEvents
// events, call.end always last, and how many were left out between.
type callEvents struct {
	id      string
	events  []obs.Event
	omitted int
}

// turnMarks are one turn's milestones, picked by the rules obs.Turns uses so that a
// stage span lasts exactly the figure the journal gives it.
type turnMarks struct {
	n                      int
	summary                *obs.TurnSummary // nil for the greeting
	speechEnd, final       *obs.Event       // the last of each before the commit
	commit                 *obs.Event
	request, firstToken    *obs.Event // the last of each, as obs.Turns
	agentEnd               *obs.Event // the first agent.done or agent.error after the request
	ttsRequest, ttsByte    *obs.Event // the first of each
	firstAudio, playoutEnd *obs.Event // playout.first_audio; playout.done or turn.interrupted
	interrupted            bool
	failed                 *obs.Event // the turn's first error that was not a cancellation
	notable                []*obs.Event
}

// start is when the turn began: the earliest of the caller's speech ending, the final
// transcript and the commit, or (the greeting) its first milestone.
func (t *turnMarks) start() (time.Time, bool) {
	var from time.Time
	for _, e := range []*obs.Event{t.speechEnd, t.final, t.commit, t.request, t.ttsRequest, t.firstAudio} {
		if e != nil && (from.IsZero() || e.TS.Before(from)) {
			from = e.TS
		}
	}
	return from, !from.IsZero()
}

// journalIndex is the call's journal read once for its spans.
type journalIndex struct {
	start, end *obs.Event
	turns      map[int]*turnMarks
	order      []*turnMarks // by first appearance
	notable    []*obs.Event // the call's own events (not a turn's)
}

// turnScoped are the event types that carry their turn's number (0: the greeting).
var turnScoped = map[string]bool{
	obs.AgentRequest: true, obs.AgentFirstToken: true, obs.AgentDone: true, obs.AgentError: true,
	obs.AgentProgress: true, obs.TTSRequest: true, obs.TTSFirstByte: true, obs.TTSError: true,
	obs.TTSFallback: true, obs.TTSLost: true, obs.PlayoutFirstAudio: true, obs.PlayoutReplyAudio: true,
	obs.PlayoutDone: true, obs.TurnInterrupted: true, obs.BargeIn: true, obs.BargeInPending: true,
	obs.BargeInResumed: true, obs.Clear: true, obs.Filler: true,
}

// notable are the events a trace shows as span events. The caller's words (text) and
// keypresses (digit) are left out: a trace leaves the machine, the journal does not.
var notable = map[string]bool{
	obs.BargeIn: true, obs.BargeInPending: true, obs.BargeInResumed: true, obs.Clear: true,
	obs.TurnInterrupted: true, obs.Filler: true, obs.DTMF: true,
	obs.STTError: true, obs.STTLost: true, obs.STTRecovered: true, obs.AgentError: true,
	obs.TTSError: true, obs.TTSFallback: true, obs.TTSLost: true, obs.MediaMalformed: true,
	obs.TransferRequested: true, obs.TransferRefused: true, obs.TransferStarted: true, obs.TransferFailed: true,
	obs.HandoffRequested: true, obs.HandoffDone: true, obs.HandoffFailed: true, obs.CallGoodbye: true,
}

// failure reports whether e is an error of the call (a cancellation is not).
func failure(e *obs.Event) bool {
	switch e.Type {
	case obs.TTSLost, obs.TransferFailed, obs.HandoffFailed:
		return true
	}
	return strings.HasSuffix(e.Type, ".error") && e.Kind != canceledKind
}

func indexJournal(events []obs.Event) *journalIndex {
	ix := &journalIndex{turns: map[int]*turnMarks{}}
	var speechEnd, final *obs.Event
	for i := range events {
		e := &events[i]
		switch e.Type {
		case obs.CallStart:
			if ix.start == nil {
				ix.start = e
			}
		case obs.CallEnd:
			ix.end = e
		case obs.VADSpeechEnd:
			speechEnd = e
		case obs.STTFinal:
			final = e
		case obs.TurnCommit:
			t := &turnMarks{n: e.Turn, commit: e, speechEnd: speechEnd, final: final}
			ix.turns[e.Turn] = t
			ix.order = append(ix.order, t)
			speechEnd, final = nil, nil
			continue
		}
		t := ix.turnOf(e)
		if t == nil {
			if notable[e.Type] {
				ix.notable = append(ix.notable, e)
			}
			continue
		}
		t.add(e)
	}
	return ix
}

// turnOf is the turn e belongs to: one already committed, or the greeting, which has no
// commit and begins with its first turn-scoped event.
func (ix *journalIndex) turnOf(e *obs.Event) *turnMarks {
	if !turnScoped[e.Type] {
		return nil
	}
	if t := ix.turns[e.Turn]; t != nil {
		return t
	}
	if e.Turn != greetingTurnNumber {
		return nil // obs.Turns reads a turn's events from its commit on
	}
	t := &turnMarks{n: greetingTurnNumber}
	ix.turns[greetingTurnNumber] = t
	ix.order = append(ix.order, t)
	return t
}

func (t *turnMarks) add(e *obs.Event) {
	first := func(p **obs.Event) {
		if *p == nil {
			*p = e
		}
	}
	switch e.Type {
	case obs.AgentRequest:
		t.request, t.agentEnd = e, nil
	case obs.AgentFirstToken:
		t.firstToken = e
	case obs.AgentDone, obs.AgentError:
		if t.request != nil && e.Kind != canceledKind {
			first(&t.agentEnd)
		}
	case obs.TTSRequest:
		first(&t.ttsRequest)
	case obs.TTSFirstByte:
		first(&t.ttsByte)
	case obs.PlayoutFirstAudio:
		first(&t.firstAudio)
	case obs.PlayoutDone:
		first(&t.playoutEnd)
	case obs.TurnInterrupted:
		t.interrupted = true
		first(&t.playoutEnd)
	}
	if failure(e) && t.failed == nil {
		t.failed = e
	}
	if notable[e.Type] {
		t.notable = append(t.notable, e)
	}
}

// emit turns one finished call into spans and ends them into tracer's processor. The
// figures come from obs: the verdict from obs.Diagnose, the turns' latencies from
// obs.Turns, and each stage span starts and ends at the very events those figures are
// measured between.
func emit(tracer trace.Tracer, c callEvents) {
	if len(c.events) == 0 {
		return
	}
	ix := indexJournal(c.events)
	turns := obs.Turns(c.events)
	verdict := obs.Diagnose(c.events)
	for i := range turns {
		if t := ix.turns[turns[i].Turn]; t != nil && t.commit != nil {
			t.summary = &turns[i]
		}
	}
	start := obs.Event{TS: c.events[0].TS} // a journal that lost its call.start still has a trace
	if ix.start != nil {
		start = *ix.start
	}
	callEnd := c.events[len(c.events)-1].TS
	attrs := []attribute.KeyValue{
		attribute.String(AttrCallID, c.id),
		attribute.String(AttrCarrier, start.Carrier),
		attribute.String(AttrDirection, start.Direction),
		attribute.String(AttrAgent, start.Agent),
		attribute.String(AttrSTT, start.STT),
		attribute.String(AttrTTS, start.TTS),
		attribute.Int(AttrTurns, len(turns)),
	}
	attrs = appendNonEmpty(attrs, AttrCallerHash, start.CallerHash)
	attrs = appendNonEmpty(attrs, AttrCaller, start.Caller)
	attrs = appendNonEmpty(attrs, AttrAttestation, start.Attestation)
	if ix.end != nil {
		attrs = appendNonEmpty(attrs, AttrEndReason, ix.end.Reason)
	}
	// Only the stage: diagnose's words about it may quote the caller.
	attrs = appendNonEmpty(attrs, AttrBrokenStage, verdict.Stage)
	if c.omitted > 0 {
		attrs = append(attrs, attribute.Int(AttrEventsOmitted, c.omitted))
	}
	ctx, root := tracer.Start(context.Background(), SpanCall, trace.WithTimestamp(start.TS),
		trace.WithAttributes(attrs...), trace.WithSpanKind(trace.SpanKindServer))
	for _, e := range ix.notable {
		addEvent(root, e)
	}
	for i, t := range ix.order {
		// A turn that never finished playing lasts until the next caller turn, or the end.
		until := callEnd
		if i+1 < len(ix.order) && ix.order[i+1].commit != nil {
			until = ix.order[i+1].commit.TS
		}
		emitTurn(ctx, tracer, t, until)
	}
	if verdict.Stage != "" {
		root.SetStatus(codes.Error, "the "+verdict.Stage+" stage is broken: handset diagnose "+c.id+" says why")
	}
	root.End(trace.WithTimestamp(callEnd))
}

// emitTurn makes a turn's span and its stage spans, each where the journal has both ends;
// superseded is when the turn stopped being current, should it not have played to its end.
func emitTurn(ctx context.Context, tracer trace.Tracer, t *turnMarks, superseded time.Time) {
	from, ok := t.start()
	if !ok {
		return
	}
	until := superseded
	if t.playoutEnd != nil {
		until = t.playoutEnd.TS
	}
	attrs := []attribute.KeyValue{attribute.Int(AttrTurnNumber, t.n), attribute.Bool(AttrInterrupted, t.interrupted)}
	if t.summary == nil {
		attrs = append(attrs, attribute.Bool(AttrGreeting, true))
	} else {
		s := t.summary
		attrs = appendFigure(attrs, AttrEndpointMS, s.EndpointMS)
		attrs = appendFigure(attrs, AttrAgentTTFTMS, s.AgentTTFTMS)
		attrs = appendFigure(attrs, AttrTTSTTFBMS, s.TTSTTFBMS)
		attrs = appendFigure(attrs, AttrResponseMS, s.ResponseMS)
		attrs = appendFigure(attrs, AttrFillerMS, s.FillerMS)
		attrs = appendFigure(attrs, AttrOverheadMS, s.OverheadMS)
		if s.InputTokens > 0 || s.OutputTokens > 0 {
			attrs = append(attrs, attribute.Int(AttrInputTokens, s.InputTokens), attribute.Int(AttrOutputTokens, s.OutputTokens))
		}
	}
	tctx, span := tracer.Start(ctx, SpanTurn, trace.WithTimestamp(from), trace.WithAttributes(attrs...))
	// stage makes one stage's span from a to b; failed, when set, marks it an error.
	stage := func(name string, a, b *obs.Event, failed string, extra ...attribute.KeyValue) {
		if a == nil || b == nil || b.TS.Before(a.TS) {
			return
		}
		_, s := tracer.Start(tctx, name, trace.WithTimestamp(a.TS), trace.WithAttributes(extra...))
		if failed != "" {
			s.SetStatus(codes.Error, failed)
		}
		s.End(trace.WithTimestamp(b.TS))
	}
	stage(SpanSTTEndpoint, t.speechEnd, t.final, "")
	stage(SpanAgentFirstTok, t.request, t.firstToken, "")
	agentFailed := ""
	if t.agentEnd != nil && t.agentEnd.Type == obs.AgentError {
		agentFailed = errorText(t.agentEnd)
	}
	stage(SpanAgent, t.request, t.agentEnd, agentFailed)
	stage(SpanTTSFirstByte, t.ttsRequest, t.ttsByte, "")
	playoutEnd := t.playoutEnd
	if playoutEnd == nil && t.firstAudio != nil {
		playoutEnd = &obs.Event{TS: superseded} // the next turn, or the call's end, cut it short
	}
	stage(SpanPlayout, t.firstAudio, playoutEnd, "", attribute.Bool(AttrInterrupted, t.interrupted))
	for _, e := range t.notable {
		addEvent(span, e)
	}
	if t.failed != nil {
		span.SetStatus(codes.Error, t.failed.Type+": "+errorText(t.failed))
	}
	if until.Before(from) {
		until = from
	}
	span.End(trace.WithTimestamp(until))
}

// errorText is an error event in a few words: "timeout: no answer in 30 s".
func errorText(e *obs.Event) string {
	switch {
	case e.Kind == "":
		return e.Message
	case e.Message == "":
		return e.Kind
	}
	return e.Kind + ": " + e.Message
}

// addEvent puts a journal event on span, with the fields it carries (never its text: the
// caller's words, nor a keypress's digit).
func addEvent(span trace.Span, e *obs.Event) {
	var attrs []attribute.KeyValue
	if e.Turn != 0 {
		attrs = append(attrs, attribute.Int(AttrTurnNumber, e.Turn))
	}
	attrs = appendNonEmpty(attrs, AttrEventKind, e.Kind)
	attrs = appendNonEmpty(attrs, AttrEventName, e.Name)
	attrs = appendNonEmpty(attrs, AttrEventMessage, e.Message)
	attrs = appendNonEmpty(attrs, AttrEventReason, e.Reason)
	if e.Count != 0 {
		attrs = append(attrs, attribute.Int(AttrEventCount, e.Count))
	}
	if failure(e) {
		attrs = append(attrs, attribute.String(AttrErrorType, e.Kind))
	}
	span.AddEvent(e.Type, trace.WithTimestamp(e.TS), trace.WithAttributes(attrs...))
}

func appendNonEmpty(attrs []attribute.KeyValue, key, value string) []attribute.KeyValue {
	if value == "" {
		return attrs
	}
	return append(attrs, attribute.String(key, value))
}

// appendFigure adds a latency the journal measured (obs gives -1 for one it did not).
func appendFigure(attrs []attribute.KeyValue, key string, ms float64) []attribute.KeyValue {
	if ms < 0 {
		return attrs
	}
	return append(attrs, attribute.Float64(key, ms))
}
