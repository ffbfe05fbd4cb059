package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/testpeer"
)

// The whole-call tests below run `handset serve` with one fault injected, then check
// that diagnose names the stage that broke and trace shows it.

// diagnoseJSON runs `handset diagnose --json [args]` against dataDir.
func diagnoseJSON(t *testing.T, dataDir string, args ...string) (obs.Verdict, error) {
	t.Helper()
	out, err := runJournalCommand(t, runDiagnose, dataDir, append([]string{"--json"}, args...)...)
	var v obs.Verdict
	if jerr := json.Unmarshal([]byte(out), &v); jerr != nil {
		t.Fatalf("diagnose --json printed %q (%v); err %v", out, jerr, err)
	}
	return v, err
}

// traceJSON runs `handset trace --json [args]` against dataDir.
func traceJSON(t *testing.T, dataDir string, args ...string) obs.CallTrace {
	t.Helper()
	out, err := runJournalCommand(t, runTrace, dataDir, append([]string{"--json"}, args...)...)
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	var tr obs.CallTrace
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("trace --json printed %q: %v", out, err)
	}
	return tr
}

type journalRunFunc func(context.Context, Env, []string) error

func runJournalCommand(t *testing.T, run journalRunFunc, dataDir string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := Env{Stdout: &stdout, Stderr: &stderr, Environ: []string{"HANDSET_DATA_DIR=" + dataDir}, WorkDir: t.TempDir()}
	err := run(context.Background(), env, args)
	return stdout.String(), err
}

func expectDiagnosis(t *testing.T, r *rig, stage string, problem ...string) obs.Verdict {
	t.Helper()
	events := r.journal() // waits for call.end
	v, err := diagnoseJSON(t, r.dataDir)
	if v.Stage != stage {
		t.Fatalf("diagnose named stage %q (%s), want %q; journal:\n%s", v.Stage, v.Problem, stage, dumpEvents(events))
	}
	if (err != nil) != (stage != "") {
		t.Errorf("diagnose returned %v for stage %q: want an error exactly when a stage is broken", err, stage)
	}
	for _, p := range problem {
		if !strings.Contains(v.Problem, p) {
			t.Errorf("problem %q lacks %q", v.Problem, p)
		}
	}
	if stage != "" {
		if v.Fix == "" || len(v.Evidence) == 0 {
			t.Errorf("verdict without fix or evidence: %+v", v)
		}
		tr := traceJSON(t, r.dataDir)
		for _, s := range tr.Stages {
			if s.Stage == stage && s.Status != obs.StatusFailed {
				t.Errorf("trace shows the %s stage as %s, diagnose as broken", stage, s.Status)
			}
		}
	}
	return v
}

// awaitJournal waits until the only call's journal, written as the call goes, records an
// event of type typ: a call on a loaded machine may be well behind the caller's audio.
func awaitJournal(t *testing.T, r *rig, typ string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*", "events.jsonl"))
		if len(paths) == 1 {
			if events, err := obs.ReadFile(paths[0]); err == nil && len(eventsOf(events, typ)) > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the call's journal after 30 s\n%s", typ, r.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// talkTurns places a call, waits for the greeting's end, says each turn and waits for the
// end of its reply, then hangs up.
func talkTurns(t *testing.T, r *rig, turns int) {
	t.Helper()
	ctx := context.Background()
	c := r.place(ctx)
	waitMark(ctx, t, c, "t0-end")
	for i := 1; i <= turns; i++ {
		if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, int64(90+i))); err != nil {
			t.Fatal(err)
		}
		waitMark(ctx, t, c, markEnd(i))
	}
	_ = c.Hangup()
	<-c.Done()
}

func TestTraceAndDiagnoseHealthyCall(t *testing.T) {
	forEachCarrier(t, testTraceAndDiagnoseHealthyCall)
}

func testTraceAndDiagnoseHealthyCall(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "a call in real time")
	r := startServeWith(t, kit, []string{"what are your opening hours", "and on sundays"})
	talkTurns(t, r, 2)
	expectDiagnosis(t, r, "", obs.Healthy)

	tr := traceJSON(t, r.dataDir)
	if len(tr.Turns) != 2 {
		t.Fatalf("trace turns: %+v", tr.Turns)
	}
	for _, turn := range tr.Turns {
		for name, v := range map[string]float64{"endpoint_ms": turn.EndpointMS, "agent_ttft_ms": turn.AgentTTFTMS,
			"tts_ttfb_ms": turn.TTSTTFBMS, "response_ms": turn.ResponseMS, "overhead_ms": turn.OverheadMS} {
			if v < 0 {
				t.Errorf("turn %d: %s = %v, want measured", turn.Turn, name, v)
			}
		}
	}
	// The runtime's token counts, as it reported them with each reply (the fake counts words).
	reqs := r.agent.Requests()
	for i, turn := range tr.Turns {
		in := 0
		for _, m := range reqs[min(i, len(reqs)-1)].Messages {
			in += len(strings.Fields(m.Content))
		}
		if len(reqs) != 2 || turn.InputTokens != in || turn.OutputTokens != len(strings.Fields(turn.Reply)) {
			t.Errorf("turn %d: tokens %d in, %d out; want %d in (the request's words) and %d out (the reply's); %d requests",
				turn.Turn, turn.InputTokens, turn.OutputTokens, in, len(strings.Fields(turn.Reply)), len(reqs))
		}
	}
	for _, s := range []obs.Stat{tr.Latency.EndpointMS, tr.Latency.AgentTTFTMS, tr.Latency.TTSTTFBMS, tr.Latency.ResponseMS, tr.Latency.OverheadMS} {
		if s.N != 2 || s.P50 < 0 || s.Max < s.P50 {
			t.Errorf("latency summary %+v", s)
		}
	}
	for _, s := range tr.Stages {
		if s.Status == obs.StatusFailed || s.Status == obs.StatusNotReached {
			t.Errorf("stage %s: %s (%s)", s.Stage, s.Status, s.Problem)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(r.dataDir, "calls"))
	if len(entries) != 1 || tr.CallID != entries[0].Name() || tr.Carrier != kit.Name() || tr.Agent != "openai" || !tr.Ended {
		t.Errorf("call facts: id %q carrier %q agent %q ended %v", tr.CallID, tr.Carrier, tr.Agent, tr.Ended)
	}

	// The human forms: a stage table and the turn table, no colour off a terminal.
	out, err := runJournalCommand(t, runTrace, r.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf("tokens: %d in, %d out over 2 turn(s)", tr.Turns[0].InputTokens+tr.Turns[1].InputTokens, tr.Turns[0].OutputTokens+tr.Turns[1].OutputTokens)
	for _, want := range []string{"✓ carrier", "✓ playout", "agent ttft", "and on sundays", "p50", "journal " + filepath.Join(r.dataDir, "calls"),
		"tokens in/out", fmt.Sprintf("%d/%d", tr.Turns[0].InputTokens, tr.Turns[0].OutputTokens), tokens} {
		if !strings.Contains(out, want) {
			t.Errorf("trace output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes off a terminal:\n%s", out)
	}
	out, err = runJournalCommand(t, runDiagnose, r.dataDir, tr.CallID)
	if err != nil || !strings.Contains(out, "✓ no problem found") {
		t.Errorf("diagnose: %v\n%s", err, out)
	}
}

func TestDiagnoseSTTKeyRejected(t *testing.T) {
	r := startServe(t, []string{"hello"}, "DEEPGRAM_API_KEY=not-the-key")
	ctx := context.Background()
	c := r.dial(ctx)
	waitMark(ctx, t, c, "t0-end")
	if err := c.SayAndWait(ctx, speech(1200*time.Millisecond, 81)); err != nil {
		t.Fatal(err)
	}
	awaitJournal(t, r, obs.VADSpeechEnd) // the VAD has heard the end of it
	_ = c.Hangup()
	<-c.Done()
	v := expectDiagnosis(t, r, "stt", "DEEPGRAM_API_KEY was rejected (HTTP 401)", "the caller spoke")
	if !strings.Contains(v.Fix, "DEEPGRAM_API_KEY") || !strings.Contains(strings.Join(v.Evidence, "\n"), "stt.error auth") {
		t.Errorf("verdict %+v", v)
	}
	// The human form names the stage and the fix.
	out, err := runJournalCommand(t, runDiagnose, r.dataDir)
	if err == nil || !strings.Contains(out, "✗ stt: DEEPGRAM_API_KEY was rejected") || !strings.Contains(out, "fix: Set DEEPGRAM_API_KEY") {
		t.Errorf("diagnose: %v\n%s", err, out)
	}
}

func TestDiagnoseAgentFailures(t *testing.T) {
	testpeer.Slow(t, "calls in real time")
	t.Run("runtime error", func(t *testing.T) {
		r := startServe(t, []string{"FAIL500 please"})
		talkTurns(t, r, 1)
		expectDiagnosis(t, r, "agent", "server or network error (HTTP 500)", "1 of 1 caller turn failed")
	})
	t.Run("key rejected", func(t *testing.T) {
		r := startServe(t, []string{"hello there"}, "HANDSET_AGENT_KEY=not-the-key")
		talkTurns(t, r, 1)
		v := expectDiagnosis(t, r, "agent", "HANDSET_AGENT_KEY was rejected (HTTP 401)")
		if !strings.Contains(v.Fix, "HANDSET_AGENT_KEY") {
			t.Errorf("fix %q", v.Fix)
		}
	})
}

// TestDiagnoseTTSKeyRejected: no voice can speak, so the call ends at once as tts_failed
// (the greeting and the error message both refused), and diagnose says why.
func TestDiagnoseTTSKeyRejected(t *testing.T) {
	r := startServe(t, []string{"hello there"}, "ELEVENLABS_API_KEY=not-the-key")
	c := r.dial(context.Background())
	<-c.Done()
	v := expectDiagnosis(t, r, "tts", "ELEVENLABS_API_KEY was rejected (HTTP 401): no voice could speak, not even the error message, so the call ended (tts_failed)")
	if !strings.Contains(v.Fix, "ELEVENLABS_API_KEY") {
		t.Errorf("fix %q", v.Fix)
	}
}

// TestDiagnoseCarrierSentNoAudio: the carrier connects the stream and starts it, but never
// sends a media frame; the caller hangs up after a while.
func TestDiagnoseCarrierSentNoAudio(t *testing.T) { forEachCarrier(t, testDiagnoseCarrierSentNoAudio) }

func testDiagnoseCarrierSentNoAudio(t *testing.T, kit simkit.Kit) {
	r := startServeVendor(t, kit, simkit.VendorOptions{Silent: true}, nil)
	ctx := context.Background()
	c := r.call(ctx, simkit.CallOptions{})
	// The greeting is on its way, yet nothing comes back.
	if err := c.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Count(phone.AudioReceived) > 0 || s.Ended }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // how long the silent call lasts, not a wait for anything
	if err := c.Hangup(); err != nil {
		t.Fatal(err)
	}
	<-c.Done()
	events := r.journal()
	if len(eventsOf(events, obs.MediaFirstIn)) != 0 {
		t.Fatalf("the silent stream still produced media:\n%s", dumpEvents(events))
	}
	if start := eventsOf(events, obs.CallStart); len(start) != 1 || start[0].Carrier != kit.Name() {
		t.Fatalf("call.start %+v, want the call through %s", start, kit.Name())
	}
	expectDiagnosis(t, r, "carrier", "connected but sent no audio")
}

// writeTestJournal writes a call's journal under dataDir/calls/id.
func writeTestJournal(t *testing.T, dataDir, id string, start time.Time, lines ...obs.Event) string {
	t.Helper()
	dir := filepath.Join(dataDir, "calls", id)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	j := obs.NewWriter(&b, start)
	for i, e := range lines {
		j.Record(start.Add(time.Duration(i)*time.Second), e)
	}
	path := filepath.Join(dir, "events.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o640); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTraceFindsTheCall(t *testing.T) {
	dataDir := t.TempDir()
	start := obs.Event{Type: obs.CallStart, Carrier: "twilio", Agent: "echo", STT: "sphinx", TTS: "flite"}
	end := obs.Event{Type: obs.CallEnd, Reason: "caller_hangup"}
	day := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	newer := writeTestJournal(t, dataDir, "c_bbbb02", day.Add(time.Hour), start, end)
	older := writeTestJournal(t, dataDir, "c_aaaa01", day, start, end)
	// The older call's file is the one written last: the latest call goes by call.start.
	if err := os.Chtimes(newer, day, day); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ arg, want string }{
		{"", "c_bbbb02"},
		{"c_aaaa01", "c_aaaa01"},
		{"c_aa", "c_aaaa01"},
		{filepath.Dir(older), "c_aaaa01"},
		{older, "c_aaaa01"},
		{dataDir, "c_bbbb02"},
	}
	for _, tc := range cases {
		var args []string
		if tc.arg != "" {
			args = []string{tc.arg}
		}
		if tr := traceJSON(t, dataDir, args...); tr.CallID != tc.want || tr.Agent != "echo" {
			t.Errorf("trace %q: call %q, want %q", tc.arg, tr.CallID, tc.want)
		}
	}
	// A journal kept elsewhere has no call id.
	elsewhere := filepath.Join(t.TempDir(), "copy.jsonl")
	raw, _ := os.ReadFile(older)
	if err := os.WriteFile(elsewhere, raw, 0o640); err != nil {
		t.Fatal(err)
	}
	if tr := traceJSON(t, dataDir, elsewhere); tr.CallID != "" || tr.Journal != elsewhere || tr.Agent != "echo" {
		t.Errorf("a copied journal: id %q journal %q", tr.CallID, tr.Journal)
	}
	// CALL before --json works too.
	out, err := runJournalCommand(t, runTrace, dataDir, "c_aaaa01", "--json")
	if err != nil || !strings.Contains(out, `"call_id": "c_aaaa01"`) {
		t.Errorf("CALL then --json: %v\n%s", err, out)
	}
	for arg, msg := range map[string]string{"c_": "could be any of 2 calls", "c_zz": `no call "c_zz"`, "nope/events.jsonl": "no such file"} {
		if _, err := runJournalCommand(t, runTrace, dataDir, arg); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("trace %q: %v, want an error saying %q", arg, err, msg)
		}
	}
	var ue *usageError
	if _, err := runJournalCommand(t, runTrace, dataDir, "c_aaaa01", "c_bbbb02"); !errors.As(err, &ue) {
		t.Errorf("two calls: %v, want a usage error", err)
	}
}

func TestTraceAndDiagnoseWithNoCalls(t *testing.T) {
	dataDir := t.TempDir()
	for name, run := range map[string]journalRunFunc{"trace": runTrace, "diagnose": runDiagnose} {
		_, err := runJournalCommand(t, run, dataDir)
		if err == nil || !strings.Contains(err.Error(), "no calls in "+filepath.Join(dataDir, "calls")) ||
			!strings.Contains(err.Error(), "HANDSET_DATA_DIR") {
			t.Errorf("%s with no calls: %v", name, err)
		}
	}
	writeTestJournal(t, dataDir, "c_empty", time.Now())
	if _, err := runJournalCommand(t, runDiagnose, dataDir); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty journal: %v", err)
	}
}
