package obs

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

func at(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }

func TestJournalWritesOneLinePerEventAsItHappens(t *testing.T) {
	dir := t.TempDir()
	j, err := Create(dir, "c_1", t0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "calls", "c_1", "events.jsonl")
	j.Record(at(0), Event{Type: CallStart, Carrier: "twilio"})
	j.Record(at(1500), Event{Type: TurnCommit, Turn: 1, Text: `say "hi"`})
	// Already on disk before Close: a crash now loses nothing recorded.
	events, err := ReadFile(path)
	if err != nil || len(events) != 2 {
		t.Fatalf("before close: %d events, %v", len(events), err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if e := events[1]; e.MS != 1500 || e.Turn != 1 || e.Text != `say "hi"` || !e.TS.Equal(at(1500)) {
		t.Errorf("event read back as %+v", e)
	}
	raw, _ := os.ReadFile(path)
	if strings.Contains(string(raw), `"turn":0`) || strings.Count(string(raw), "\n") != 2 {
		t.Errorf("journal lines:\n%s", raw)
	}
}

func TestReadEventsSkipsATornLastLineOnly(t *testing.T) {
	good := `{"ts":"2026-11-22T09:00:00Z","ms":0,"type":"call.start"}` + "\n"
	events, err := ReadEvents(strings.NewReader(good + `{"ts":"2026-11-22T09:00:01Z","ms":1000,"ty`))
	if err != nil || len(events) != 1 {
		t.Errorf("torn last line: %d events, %v", len(events), err)
	}
	_, err = ReadEvents(strings.NewReader(good + "garbage\n" + good))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("malformed middle line: err %v, want one naming line 2", err)
	}
}

func TestTurnsLatencyBreakdown(t *testing.T) {
	var buf bytes.Buffer
	j := NewWriter(&buf, t0)
	rec := func(ms float64, e Event) { j.Record(at(ms), e) }
	rec(0, Event{Type: CallStart})
	rec(1000, Event{Type: VADSpeechStart})
	rec(2000, Event{Type: VADSpeechEnd})
	rec(2150, Event{Type: STTFinal, Text: "hello"})
	rec(2151, Event{Type: TurnCommit, Turn: 1, Text: "hello"})
	rec(2152, Event{Type: AgentRequest, Turn: 1})
	rec(2400, Event{Type: AgentFirstToken, Turn: 1})
	rec(2600, Event{Type: TTSRequest, Turn: 1, Text: "Hi there."})
	rec(2680, Event{Type: TTSFirstByte, Turn: 1})
	rec(2683.5, Event{Type: PlayoutFirstAudio, Turn: 1})
	rec(2700, Event{Type: AgentDone, Turn: 1, Text: "Hi there. Bye."})
	rec(5000, Event{Type: STTFinal, Text: "again"})
	rec(5001, Event{Type: TurnCommit, Turn: 2, Text: "again"})
	rec(5002, Event{Type: AgentRequest, Turn: 2})
	rec(6000, Event{Type: AgentError, Turn: 2, Kind: "timeout", Message: "silent"})
	events, err := ReadEvents(&buf)
	if err != nil {
		t.Fatal(err)
	}
	turns := Turns(events)
	if len(turns) != 2 {
		t.Fatalf("turns = %+v", turns)
	}
	one := turns[0]
	want := TurnSummary{Turn: 1, Caller: "hello", Reply: "Hi there. Bye.", EndpointMS: 150, AgentTTFTMS: 248,
		TTSTTFBMS: 80, ResponseMS: 533.5, FillerMS: -1, OverheadMS: 5.5, FirstAudioMS: 2683}
	if one != want {
		t.Errorf("turn 1 = %+v\nwant     %+v", one, want)
	}
	two := turns[1]
	if two.Error != "timeout: silent" || two.ResponseMS != -1 || two.EndpointMS != -1 || two.AgentTTFTMS != -1 {
		t.Errorf("turn 2 = %+v", two)
	}
}

// TestTurnsOfAFillerTurn: the filler's audio does not end the caller's wait for the
// answer: response_ms runs to the reply's own first audio (playout.reply_audio), filler_ms
// to the filler's; a turn that never got past its filler has no response_ms.
func TestTurnsOfAFillerTurn(t *testing.T) {
	var buf bytes.Buffer
	j := NewWriter(&buf, t0)
	rec := func(ms float64, e Event) { j.Record(at(ms), e) }
	rec(0, Event{Type: CallStart})
	rec(1000, Event{Type: STTFinal, Text: "check my orders"})
	rec(1001, Event{Type: TurnCommit, Turn: 1, Text: "check my orders"})
	rec(1002, Event{Type: AgentRequest, Turn: 1})
	rec(5002, Event{Type: Filler, Turn: 1})
	rec(5003, Event{Type: TTSRequest, Turn: 1, Text: "One moment.", Kind: "filler"})
	rec(5050, Event{Type: TTSFirstByte, Turn: 1})
	rec(5052, Event{Type: PlayoutFirstAudio, Turn: 1, Kind: "filler"})
	rec(8000, Event{Type: AgentFirstToken, Turn: 1})
	rec(8001, Event{Type: TTSRequest, Turn: 1, Text: "You have two orders."})
	rec(8100, Event{Type: PlayoutReplyAudio, Turn: 1})
	rec(8200, Event{Type: AgentDone, Turn: 1, Text: "You have two orders."})
	rec(12000, Event{Type: STTFinal, Text: "and the third"})
	rec(12001, Event{Type: TurnCommit, Turn: 2, Text: "and the third"})
	rec(12002, Event{Type: AgentRequest, Turn: 2})
	rec(16002, Event{Type: TTSRequest, Turn: 2, Text: "One moment.", Kind: "filler"})
	rec(16050, Event{Type: TTSFirstByte, Turn: 2})
	rec(16052, Event{Type: PlayoutFirstAudio, Turn: 2, Kind: "filler"})
	rec(17000, Event{Type: CallEnd, Reason: "caller_hangup"})
	events, err := ReadEvents(&buf)
	if err != nil {
		t.Fatal(err)
	}
	turns := Turns(events)
	if len(turns) != 2 {
		t.Fatalf("turns = %+v", turns)
	}
	if one := turns[0]; one.FillerMS != 4052 || one.ResponseMS != 7100 || one.FirstAudioMS != 8100 || one.OverheadMS != 4 {
		t.Errorf("turn 1: filler_ms %v, response_ms %v, first_audio_ms %v, overhead_ms %v; want 4052, 7100, 8100, 4",
			one.FillerMS, one.ResponseMS, one.FirstAudioMS, one.OverheadMS)
	}
	if two := turns[1]; two.FillerMS != 4052 || two.ResponseMS != -1 || two.FirstAudioMS != -1 {
		t.Errorf("turn 2 (the caller left during the filler): filler_ms %v, response_ms %v, first_audio_ms %v; want 4052, -1, -1",
			two.FillerMS, two.ResponseMS, two.FirstAudioMS)
	}
	l := Trace(events).Latency
	if l.FillerMS.N != 2 || l.ResponseMS.N != 1 || l.ResponseMS.Max != 7100 {
		t.Errorf("latency: filler_ms %+v, response_ms %+v", l.FillerMS, l.ResponseMS)
	}
}

func TestTeeSeesEachLaterEventStamped(t *testing.T) {
	var buf bytes.Buffer
	j := NewWriter(&buf, t0)
	j.Record(at(0), Event{Type: CallStart})
	var seen []Event
	j.Tee(func(e Event) { seen = append(seen, e) })
	j.Record(at(250), Event{Type: STTFinal, Turn: 1, Text: "hello"})
	if len(seen) != 1 || seen[0].Type != STTFinal || seen[0].MS != 250 || seen[0].Text != "hello" {
		t.Errorf("tee saw %+v, want only the stamped stt.final", seen)
	}
	if strings.Count(buf.String(), "\n") != 2 {
		t.Errorf("the tee must not replace the journal: %q", buf.String())
	}
	// A second tee (the dashboard beside the browser page) adds to the first.
	var second []string
	j.Tee(func(e Event) { second = append(second, e.Type) })
	j.Record(at(300), Event{Type: CallEnd})
	if len(seen) != 2 || len(second) != 1 || second[0] != CallEnd {
		t.Errorf("after a second tee: first saw %d events, second saw %v", len(seen), second)
	}
}

// A 100 KB caller transcript, error answer or request field never makes a 100 KB journal
// line: what was said keeps 4 KB, everything else a few hundred bytes, cut on a rune.
func TestJournalBoundsTextFromOutside(t *testing.T) {
	var buf bytes.Buffer
	j := NewWriter(&buf, t0)
	huge := strings.Repeat("é", 50_000) // 100 KB
	said := []string{STTFinal, TurnCommit, AgentDone, TTSRequest, BargeIn, noteDropped}
	for _, typ := range said {
		j.Record(at(1), Event{Type: typ, Text: huge})
	}
	j.Record(at(2), Event{Type: STTPartial, Text: huge})
	j.Record(at(3), Event{Type: AgentError, Kind: "transient", Message: huge})
	j.Record(at(4), Event{Type: TransferRequested, Name: huge, Text: huge})
	j.Record(at(5), Event{Type: CallStart, Carrier: huge, CallerHash: huge, Agent: huge, STT: huge, TTS: huge, Direction: huge})
	j.Record(at(6), Event{Type: CallEnd, Reason: huge})
	j.Record(at(7), Event{Type: DTMF, Digit: huge})
	j.Record(at(8), Event{Type: TurnCommit, Text: "short stays whole"})
	events, err := ReadEvents(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if buf.Len() > len(said)*(4096+200)+7*(6*300+200) {
		t.Errorf("the journal is %d bytes", buf.Len())
	}
	for _, e := range events {
		for name, v := range map[string]string{"text": e.Text, "message": e.Message, "name": e.Name, "reason": e.Reason,
			"digit": e.Digit, "carrier": e.Carrier, "caller_hash": e.CallerHash, "agent": e.Agent, "stt": e.STT, "tts": e.TTS, "direction": e.Direction} {
			limit := 300
			if name == "text" && slices.Contains(said, e.Type) {
				limit = 4096
			}
			if len(v) > limit || (v != "" && v != "short stays whole" && (!strings.HasSuffix(v, "…") || len(v) < limit-4)) {
				t.Errorf("%s %s: %d bytes, want at most %d ending in …", e.Type, name, len(v), limit)
			}
			if strings.ContainsRune(v, '\uFFFD') {
				t.Errorf("%s %s: a rune was cut", e.Type, name)
			}
		}
	}
	if last := events[len(events)-1]; last.Text != "short stays whole" {
		t.Errorf("a short text was changed: %q", last.Text)
	}
}

// Recording an event leaves next to no garbage: every event of every call is recorded.
func TestRecordAllocatesLittle(t *testing.T) {
	if raceDetector {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := NewWriter(io.Discard, start)
	e := Event{Type: TurnCommit, Turn: 3, Text: "Can you tell me your opening hours on Saturday?"}
	j.Record(start, e)
	if allocs := testing.AllocsPerRun(100, func() { j.Record(start.Add(time.Second), e) }); allocs > 1 {
		t.Fatalf("Record allocated %.0f times an event, want at most 1 (the timestamp's text)", allocs)
	}
}
