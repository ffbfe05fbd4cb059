package obs

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// ev is one hand-built journal line at ms.
func ev(ms int64, typ string, opts ...func(*Event)) Event {
	e := Event{TS: at(float64(ms)), MS: ms, Type: typ}
	for _, o := range opts {
		o(&e)
	}
	return e
}

func onTurn(n int) func(*Event)        { return func(e *Event) { e.Turn = n } }
func withText(s string) func(*Event)   { return func(e *Event) { e.Text = s } }
func withReason(s string) func(*Event) { return func(e *Event) { e.Reason = s } }
func failed(kind, msg string) func(*Event) {
	return func(e *Event) { e.Kind, e.Message = kind, msg }
}

// startedWith is a call.start naming the providers.
func startedWith(agent, stt, tts string) Event {
	return ev(0, CallStart, func(e *Event) {
		e.Carrier, e.Direction, e.CallerHash = "twilio", "inbound", "ch_test"
		e.Agent, e.STT, e.TTS = agent, stt, tts
	})
}

// turnTimes are a caller turn's milestones, in ms after the caller stops speaking.
type turnTimes struct{ final, token, ttsReq, ttsByte, audio int64 }

var quick = turnTimes{final: 200, token: 600, ttsReq: 700, ttsByte: 800, audio: 810}

// callerTurn is one healthy caller turn: speech from at to at+1000, then the reply.
func callerTurn(n int, at int64, tt turnTimes, said string) []Event {
	end := at + 1000
	return []Event{
		ev(at, VADSpeechStart),
		ev(at+300, STTPartial, withText(said[:len(said)/2])),
		ev(end, VADSpeechEnd),
		ev(end+tt.final, STTFinal, withText(said)),
		ev(end+tt.final+5, TurnCommit, onTurn(n), withText(said)),
		ev(end+tt.final+5, AgentRequest, onTurn(n)),
		ev(end+tt.token, AgentFirstToken, onTurn(n)),
		ev(end+tt.ttsReq, TTSRequest, onTurn(n), withText("Sure.")),
		ev(end+tt.ttsByte, TTSFirstByte, onTurn(n)),
		ev(end+tt.audio, PlayoutFirstAudio, onTurn(n)),
		ev(end+tt.audio+50, AgentDone, onTurn(n), withText("Sure. We open at nine.")),
		ev(end+tt.audio+1500, PlayoutMark, onTurn(n), func(e *Event) { e.Name = "t1-s1" }),
		ev(end+tt.audio+1510, PlayoutDone, onTurn(n)),
	}
}

// healthyCall: a greeting, two answered turns, the caller hangs up.
func healthyCall(tt ...turnTimes) []Event {
	if len(tt) == 0 {
		tt = []turnTimes{quick, quick}
	}
	events := []Event{
		startedWith("openai", "deepgram", "elevenlabs"),
		ev(10, TTSRequest, withText("Hello, this is Handset.")),
		ev(15, MediaFirstIn),
		ev(120, TTSFirstByte),
		ev(130, PlayoutFirstAudio),
		ev(1500, PlayoutMark, func(e *Event) { e.Name = "t0-s1" }),
		ev(1510, PlayoutDone),
	}
	at := int64(2000)
	for i, t := range tt {
		events = append(events, callerTurn(i+1, at, t, "what are your opening hours")...)
		at += 6000
	}
	return append(events, ev(at, CallEnd, withReason("caller_hangup")))
}

// edit removes every event of the given types and adds extra, keeping the journal in
// time order.
func edit(events []Event, drop []string, extra ...Event) []Event {
	var out []Event
	for _, e := range events {
		if !slices.Contains(drop, e.Type) {
			out = append(out, e)
		}
	}
	out = append(out, extra...)
	slices.SortStableFunc(out, func(a, b Event) int { return int(a.MS - b.MS) })
	return out
}

func stageOf(t CallTrace, name string) StageReport {
	for _, s := range t.Stages {
		if s.Stage == name {
			return s
		}
	}
	return StageReport{}
}

func TestTraceOfAHealthyCall(t *testing.T) {
	tr := Trace(healthyCall())
	var order []string
	for _, s := range tr.Stages {
		order = append(order, s.Stage)
		if s.Status != StatusOK || s.Problem != "" {
			t.Errorf("stage %s: %s %q, want ok", s.Stage, s.Status, s.Problem)
		}
	}
	if want := []string{"carrier", "vad", "stt", "agent", "tts", "playout"}; !slices.Equal(order, want) {
		t.Errorf("stages %v, want %v", order, want)
	}
	if tr.Carrier != "twilio" || tr.Direction != "inbound" || tr.CallerHash != "ch_test" || tr.Agent != "openai" ||
		tr.STT != "deepgram" || tr.TTS != "elevenlabs" || !tr.Start.Equal(t0) || tr.DurationMS != 14000 ||
		!tr.Ended || tr.EndReason != "caller_hangup" {
		t.Errorf("call facts: %+v", tr)
	}
	if len(tr.Turns) != 2 || len(tr.Warnings) != 0 {
		t.Fatalf("turns %d, warnings %v", len(tr.Turns), tr.Warnings)
	}
	c := stageOf(tr, StageCarrier).Carrier
	if c == nil || c.FirstMediaMS != 15 || c.Malformed != 0 {
		t.Errorf("carrier facts %+v", c)
	}
	if s := stageOf(tr, StageSTT).STT; s == nil || s.Finals != 2 || s.Partials != 2 || s.Commits != 2 || s.FirstFinalMS != 3200 {
		t.Errorf("stt facts %+v", s)
	}
	if a := stageOf(tr, StageAgent).Agent; a == nil || a.Requests != 2 || a.FirstTokens != 2 || a.Replies != 2 || a.Errors != 0 {
		t.Errorf("agent facts %+v", a)
	}
	if p := stageOf(tr, StagePlayout).Playout; p == nil || p.FirstAudio != 3 || !p.Greeting || p.Marks != 3 || p.Done != 3 {
		t.Errorf("playout facts %+v", p)
	}
	// Only the stage's own facts block is set.
	if s := stageOf(tr, StageVAD); s.Carrier != nil || s.STT != nil || s.VAD == nil || s.VAD.SpeechStarts != 2 {
		t.Errorf("vad report %+v", s)
	}
}

func TestTraceLatencyStats(t *testing.T) {
	slow := turnTimes{final: 400, token: 1400, ttsReq: 1500, ttsByte: 1700, audio: 1720}
	tr := Trace(healthyCall(quick, slow, quick))
	l := tr.Latency
	// endpoint 200, 400, 200: avg 266.7, p50 200, max 400.
	if l.EndpointMS != (Stat{N: 3, Avg: 266.7, P50: 200, Max: 400}) {
		t.Errorf("endpoint_ms %+v", l.EndpointMS)
	}
	// agent ttft: request (final + 5) to token: 395, 995, 395.
	if l.AgentTTFTMS.P50 != 395 || l.AgentTTFTMS.Max != 995 {
		t.Errorf("agent_ttft_ms %+v", l.AgentTTFTMS)
	}
	// response: final -> audio: 610, 1320, 610; overhead: 5 + 10, 5 + 20.
	if l.ResponseMS.P50 != 610 || l.ResponseMS.Max != 1320 || l.OverheadMS.Max != 25 || l.TTSTTFBMS.Max != 200 {
		t.Errorf("response %+v overhead %+v tts %+v", l.ResponseMS, l.OverheadMS, l.TTSTTFBMS)
	}
}

func TestStatOf(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Stat
	}{
		{nil, Stat{Avg: -1, P50: -1, Max: -1}},
		{[]float64{-1, -1}, Stat{Avg: -1, P50: -1, Max: -1}},
		{[]float64{300, -1, 100}, Stat{N: 2, Avg: 200, P50: 100, Max: 300}},
		{[]float64{5, 1, 3, 2}, Stat{N: 4, Avg: 2.8, P50: 2, Max: 5}},
	} {
		if got := statOf(tc.in); got != tc.want {
			t.Errorf("statOf(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestTraceJSONNames: the latency names are INTERFACE.md's, everything is snake_case,
// and a missing latency is -1, not absent.
func TestTraceJSONNames(t *testing.T) {
	raw, err := json.Marshal(Trace(edit(healthyCall(), []string{VADSpeechEnd})))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Latency map[string]map[string]float64 `json:"latency"`
		Turns   []map[string]any              `json:"turns"`
		Stages  []map[string]any              `json:"stages"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	names := []string{"endpoint_ms", "agent_ttft_ms", "tts_ttfb_ms", "response_ms", "filler_ms", "overhead_ms"}
	for _, n := range names {
		if _, ok := doc.Latency[n]; !ok {
			t.Errorf("latency has no %s: %s", n, raw)
		}
		if _, ok := doc.Turns[0][n]; !ok {
			t.Errorf("turn has no %s", n)
		}
	}
	if doc.Latency["endpoint_ms"]["p50"] != -1 || doc.Turns[0]["endpoint_ms"] != -1.0 {
		t.Errorf("missing endpoint not -1: %v / %v", doc.Latency["endpoint_ms"], doc.Turns[0]["endpoint_ms"])
	}
	var all any
	_ = json.Unmarshal(raw, &all)
	keys := map[string]bool{}
	collectKeys(all, keys)
	for k := range keys {
		if strings.ToLower(k) != k || strings.Contains(k, " ") {
			t.Errorf("JSON key %q is not snake_case", k)
		}
	}
	for _, k := range []string{"caller_hash", "duration_ms", "end_reason", "first_media_ms", "speech_starts", "first_tokens", "first_bytes", "barge_ins"} {
		if !keys[k] {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

func collectKeys(v any, into map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			into[k] = true
			collectKeys(x, into)
		}
	case []any:
		for _, x := range v {
			collectKeys(x, into)
		}
	}
}

func TestTraceOfACallWithNoMediaMarksLaterStagesNotReached(t *testing.T) {
	tr := Trace([]Event{startedWith("openai", "deepgram", "elevenlabs"), ev(2000, CallEnd, withReason("caller_hangup"))})
	want := map[string]string{"carrier": StatusFailed, "vad": StatusNotReached, "stt": StatusNotReached,
		"agent": StatusNotReached, "tts": StatusNotReached, "playout": StatusNotReached}
	for _, s := range tr.Stages {
		if s.Status != want[s.Stage] {
			t.Errorf("%s: %s, want %s", s.Stage, s.Status, want[s.Stage])
		}
	}
	if tr.Turns == nil || len(tr.Turns) != 0 {
		t.Errorf("turns %v, want an empty list", tr.Turns)
	}
}

func TestTraceWithoutCallEnd(t *testing.T) {
	events := healthyCall()
	tr := Trace(events[:len(events)-1])
	if tr.Ended || tr.EndReason != "" || tr.DurationMS != events[len(events)-2].MS {
		t.Errorf("unfinished call: ended %v reason %q duration %d", tr.Ended, tr.EndReason, tr.DurationMS)
	}
	if len(tr.Warnings) != 1 || !strings.Contains(tr.Warnings[0].Problem, "no call.end") {
		t.Errorf("warnings %+v", tr.Warnings)
	}
}

// An agent bridge session's journal has only the agent's stage, and no end to miss.
func TestTraceOfABridgeSession(t *testing.T) {
	start := ev(0, CallStart)
	start.Carrier, start.Agent = BridgeCarrier, "hermes"
	tr := Trace([]Event{start, ev(0, TurnCommit, func(e *Event) { e.Turn, e.Text = 1, "Hello." }),
		ev(0, AgentRequest, func(e *Event) { e.Turn = 1 }), ev(400, AgentFirstToken, func(e *Event) { e.Turn = 1 }),
		ev(900, AgentDone, func(e *Event) { e.Turn, e.Text = 1, "Hi there." })})
	for _, s := range tr.Stages {
		want := StatusNotReached
		if s.Stage == StageAgent {
			want = StatusOK
		}
		if s.Status != want {
			t.Errorf("%s: %s (%s), want %s", s.Stage, s.Status, s.Detail, want)
		}
	}
	if len(tr.Warnings) != 0 {
		t.Errorf("warnings %+v, want none", tr.Warnings)
	}
	if len(tr.Turns) != 1 || tr.Turns[0].AgentTTFTMS != 400 {
		t.Errorf("turns %+v, want one with its time to first token", tr.Turns)
	}
}
