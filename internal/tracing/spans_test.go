package tracing

import (
	"math"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/handset-voice/handset/internal/obs"
)

// recorded builds the trace of events and returns its spans as the SDK ended them.
func recorded(t *testing.T, events []obs.Event, omitted int) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = provider.Shutdown(t.Context()) })
	emit(provider.Tracer("test"), callEvents{id: "call-1", events: events, omitted: omitted})
	return rec.Ended()
}

func attrsOf(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// tenths is a span's duration as obs gives its figures: milliseconds to a tenth.
func tenths(s sdktrace.ReadOnlySpan) float64 {
	return math.Round(float64(s.EndTime().Sub(s.StartTime()))/float64(time.Millisecond)*10) / 10
}

// tree indexes spans: the call, the turns by number, each turn's stages by name.
type tree struct {
	call   sdktrace.ReadOnlySpan
	turns  map[int64]sdktrace.ReadOnlySpan
	stages map[int64]map[string]sdktrace.ReadOnlySpan
}

func treeOf(t *testing.T, spans []sdktrace.ReadOnlySpan) tree {
	t.Helper()
	tr := tree{turns: map[int64]sdktrace.ReadOnlySpan{}, stages: map[int64]map[string]sdktrace.ReadOnlySpan{}}
	turnOfSpan := map[string]int64{}
	for _, s := range spans {
		switch s.Name() {
		case SpanCall:
			if tr.call != nil {
				t.Fatal("two call spans")
			}
			tr.call = s
		case SpanTurn:
			n := attrsOf(s.Attributes())[AttrTurnNumber].AsInt64()
			tr.turns[n] = s
			turnOfSpan[s.SpanContext().SpanID().String()] = n
		}
	}
	if tr.call == nil {
		t.Fatal("no call span")
	}
	for _, s := range spans {
		if s.Name() == SpanCall || s.Name() == SpanTurn {
			if s.Name() == SpanTurn && s.Parent().SpanID() != tr.call.SpanContext().SpanID() {
				t.Errorf("a turn span's parent is not the call span")
			}
			continue
		}
		n, ok := turnOfSpan[s.Parent().SpanID().String()]
		if !ok {
			t.Errorf("stage span %s has no turn span for a parent", s.Name())
			continue
		}
		if tr.stages[n] == nil {
			tr.stages[n] = map[string]sdktrace.ReadOnlySpan{}
		}
		if tr.stages[n][s.Name()] != nil {
			t.Errorf("turn %d: two %s spans", n, s.Name())
		}
		tr.stages[n][s.Name()] = s
	}
	return tr
}

// TestStageSpansLastTheJournalsFigures: each stage span lasts exactly the latency obs
// reads from the same journal, and each turn span carries those figures.
func TestStageSpansLastTheJournalsFigures(t *testing.T) {
	events := threeTurns()
	tr := treeOf(t, recorded(t, events, 0))
	summaries := obs.Turns(events)
	if len(summaries) != 3 {
		t.Fatalf("obs.Turns found %d turns in the script, want 3", len(summaries))
	}
	if len(tr.turns) != len(summaries)+1 {
		t.Errorf("%d turn spans, want %d (the greeting and each caller turn)", len(tr.turns), len(summaries)+1)
	}
	for _, sum := range summaries {
		n := int64(sum.Turn)
		stages := tr.stages[n]
		for name, want := range map[string]float64{
			SpanSTTEndpoint: sum.EndpointMS, SpanAgentFirstTok: sum.AgentTTFTMS, SpanTTSFirstByte: sum.TTSTTFBMS,
		} {
			s := stages[name]
			switch {
			case want < 0 && s != nil:
				t.Errorf("turn %d: a %s span, but the journal has no such figure", n, name)
			case want >= 0 && s == nil:
				t.Errorf("turn %d: no %s span, the journal says %.1f ms", n, name, want)
			case s != nil && tenths(s) != want:
				t.Errorf("turn %d: %s lasts %.1f ms, the journal says %.1f ms", n, name, tenths(s), want)
			}
		}
		attrs := attrsOf(tr.turns[n].Attributes())
		for key, want := range map[string]float64{
			AttrEndpointMS: sum.EndpointMS, AttrAgentTTFTMS: sum.AgentTTFTMS, AttrTTSTTFBMS: sum.TTSTTFBMS,
			AttrResponseMS: sum.ResponseMS, AttrOverheadMS: sum.OverheadMS,
		} {
			got, ok := attrs[key]
			switch {
			case want < 0 && ok:
				t.Errorf("turn %d: %s = %v, but the journal has no such figure", n, key, got.AsFloat64())
			case want >= 0 && (!ok || got.AsFloat64() != want):
				t.Errorf("turn %d: %s = %v, the journal says %.1f", n, key, got.String(), want)
			}
		}
		if got := attrs[AttrInterrupted].AsBool(); got != sum.Interrupted {
			t.Errorf("turn %d: interrupted %v, the journal says %v", n, got, sum.Interrupted)
		}
	}
	if got := attrsOf(tr.turns[1].Attributes())[AttrInputTokens].AsInt64(); got != 812 {
		t.Errorf("turn 1's input tokens: %d, want the runtime's 812", got)
	}
	// The agent stage lasts from its request to its reply; playout from the first audio to
	// the end of play.
	if a := tr.stages[1][SpanAgent]; a == nil || tenths(a) != 412.8+88.1+131.9+6.7+40.4 {
		t.Errorf("turn 1's agent span: %v", a)
	}
	if p := tr.stages[1][SpanPlayout]; p == nil || tenths(p) != 40.4+1300.5+10 {
		t.Errorf("turn 1's playout span: %v", p)
	}
}

// TestBargeInAndErrors: the barge-in is an event on its turn, which is marked interrupted
// and its playout ends there; the agent's timeout fails its stage, its turn and (diagnose
// names the agent) the call.
func TestBargeInAndErrors(t *testing.T) {
	events := threeTurns()
	tr := treeOf(t, recorded(t, events, 0))

	var bargeIn *sdktrace.Event
	for _, e := range tr.turns[2].Events() {
		if e.Name == obs.BargeIn {
			bargeIn = &e
		}
	}
	if bargeIn == nil {
		t.Fatal("turn 2 has no barge_in event")
	}
	if p := tr.stages[2][SpanPlayout]; p == nil || !p.EndTime().Equal(bargeIn.Time) {
		t.Errorf("turn 2's playout does not end at the barge-in: %v", p)
	}
	if !attrsOf(tr.turns[2].Attributes())[AttrInterrupted].AsBool() {
		t.Error("turn 2 is not marked interrupted")
	}

	agent := tr.stages[3][SpanAgent]
	if agent == nil || agent.Status().Code != codes.Error || !strings.Contains(agent.Status().Description, "no answer in 30 s") {
		t.Errorf("turn 3's agent span: %+v, want an error with the runtime's message", agent)
	}
	if tr.turns[3].Status().Code != codes.Error {
		t.Error("turn 3 is not marked failed")
	}
	if tr.turns[1].Status().Code == codes.Error {
		t.Error("turn 1 is marked failed")
	}
	verdict := obs.Diagnose(events)
	if verdict.Stage == "" {
		t.Fatal("diagnose finds the script healthy: the test needs a broken stage")
	}
	call := attrsOf(tr.call.Attributes())
	if got := call[AttrBrokenStage].AsString(); got != verdict.Stage || tr.call.Status().Code != codes.Error {
		t.Errorf("call span: broken stage %q, status %v; diagnose says %q", got, tr.call.Status(), verdict.Stage)
	}

	var dtmf bool
	for _, e := range tr.call.Events() {
		if e.Name == obs.DTMF {
			dtmf = true
		}
	}
	if !dtmf {
		t.Error("the call span has no dtmf event")
	}
}

// TestHealthyCall: the call's own attributes, no error anywhere, and nothing the caller
// said or keyed in any attribute or event.
func TestHealthyCall(t *testing.T) {
	events := healthyCall()
	spans := recorded(t, events, 0)
	tr := treeOf(t, spans)
	call := attrsOf(tr.call.Attributes())
	for key, want := range map[string]string{
		AttrCallID: "call-1", AttrCarrier: "twilio", AttrDirection: "inbound", AttrCallerHash: "ch_5f3a",
		AttrAgent: "openai", AttrSTT: "deepgram", AttrTTS: "elevenlabs", AttrEndReason: "caller_hangup",
	} {
		if got := call[key].AsString(); got != want {
			t.Errorf("call span %s = %q, want %q", key, got, want)
		}
	}
	if got := call[AttrTurns].AsInt64(); got != 2 {
		t.Errorf("turns = %d, want 2", got)
	}
	if !tr.call.StartTime().Equal(events[0].TS) || !tr.call.EndTime().Equal(events[len(events)-1].TS) {
		t.Errorf("the call span runs %v to %v, not call.start to call.end", tr.call.StartTime(), tr.call.EndTime())
	}
	if _, ok := call[AttrBrokenStage]; ok || tr.call.Status().Code == codes.Error {
		t.Errorf("a healthy call is marked broken: %v", tr.call.Status())
	}
	if g := tr.turns[0]; g == nil || !attrsOf(g.Attributes())[AttrGreeting].AsBool() || tr.stages[0][SpanTTSFirstByte] == nil {
		t.Error("no greeting turn with its tts.first_byte span")
	}
	for _, s := range spans {
		kvs := s.Attributes()
		for _, e := range s.Events() {
			kvs = append(kvs, e.Attributes...)
		}
		for _, kv := range kvs {
			if v := kv.Value.String(); strings.Contains(v, callerWords) || strings.Contains(v, "four") {
				t.Errorf("span %s carries what the caller said: %s=%q", s.Name(), kv.Key, v)
			}
		}
	}
}

// TestFollowBoundsAPathologicalCall: a call with far more events than a trace keeps
// still ends in one trace, which says how many events it left out.
func TestFollowBoundsAPathologicalCall(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	x := start(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)), quietLog)
	tee := x.Follow("call-2")
	s := newScript().greeting()
	const partials = 100000
	for range partials {
		s.after(0.5, obs.Event{Type: obs.STTPartial, Text: "uh"})
	}
	events := s.ends("caller_hangup")
	for _, e := range events {
		tee(e)
	}
	if err := x.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	var call sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == SpanCall {
			call = s
		}
	}
	if call == nil {
		t.Fatal("no call span")
	}
	want := len(events) - 1 - maxCallEvents // all but the kept ones and call.end
	if got := attrsOf(call.Attributes())[AttrEventsOmitted].AsInt64(); got != int64(want) {
		t.Errorf("events omitted %d, want %d", got, want)
	}
	if !call.EndTime().Equal(events[len(events)-1].TS) {
		t.Error("the call span does not end at call.end")
	}
}

// TestUnfinishedTurnEndsAtTheNext: a turn that never played to its end (its agent failed
// and nothing was spoken) lasts until the next caller turn is committed, not to the
// call's end.
func TestUnfinishedTurnEndsAtTheNext(t *testing.T) {
	s := newScript().greeting()
	s.asks(1).after(1, obs.Event{Type: obs.AgentRequest, Turn: 1}).
		after(250, obs.Event{Type: obs.AgentError, Turn: 1, Kind: "http", Message: "502 Bad Gateway"})
	s.asks(2)
	commit2 := s.events[len(s.events)-1].TS
	s.answers(2).played(2)
	tr := treeOf(t, recorded(t, s.ends("caller_hangup"), 0))
	if got := tr.turns[1].EndTime(); !got.Equal(commit2) {
		t.Errorf("turn 1 ends at %v, want turn 2's commit at %v", got, commit2)
	}
	if tr.stages[1][SpanPlayout] != nil || tr.stages[1][SpanAgent] == nil {
		t.Errorf("turn 1's stages: %v, want the failed agent span and no playout", tr.stages[1])
	}
}
