package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/obs"
)

// runTrace prints a call stage by stage (carrier, vad, stt, agent, tts, playout) with its
// per-turn latencies.
func runTrace(_ context.Context, env Env, args []string) error {
	call, asJSON, err := openCall("trace", "Stage-by-stage view of a call, with its per-turn latencies.", env, args)
	if err != nil {
		return err
	}
	t := obs.Trace(call.events)
	t.CallID, t.Journal = call.id, call.path
	if asJSON {
		return printJSONTo(env.Stdout, t)
	}
	printTrace(env.Stdout, t, newStatusMarks(env))
	return nil
}

// callJournal is the journal a trace or diagnose reads.
type callJournal struct {
	id, path string
	events   []obs.Event
}

// openCall parses the flags of trace and diagnose (--json, then CALL, in any order) and
// reads the call's journal.
func openCall(name, summary string, env Env, args []string) (callJournal, bool, error) {
	fs, g := newFlagSet(name, env)
	asJSON := fs.Bool("json", false, "print JSON instead of text")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: handset %s [flags] [CALL]\n\n%s\n\n", name, summary)
		fmt.Fprintln(w, "CALL is a call id (or the start of one) under HANDSET_DATA_DIR/calls, a call's folder, or its")
		fmt.Fprintln(w, "events.jsonl; the latest call by default.\n\nFlags:")
		fs.PrintDefaults()
	}
	var positional []string
	for {
		if err := parse(fs, args); err != nil {
			return callJournal{}, false, err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(positional) > 1 {
		return callJournal{}, false, &usageError{msg: fmt.Sprintf("one call at a time, got %d: %s", len(positional), strings.Join(positional, " ")),
			hint: "handset " + name + " [CALL]"}
	}
	cfg, err := loadConfig(env, g, nil)
	if err != nil {
		return callJournal{}, false, err
	}
	warnSettings(newLogger(env.Stderr, cfg), cfg)
	var arg string
	if len(positional) == 1 {
		arg = positional[0]
	}
	path, err := findJournal(name, env, cfg, arg)
	if err != nil {
		return callJournal{}, false, err
	}
	events, err := obs.ReadFile(path)
	if err != nil {
		return callJournal{}, false, fmt.Errorf("read %s: %w", path, err)
	}
	if len(events) == 0 {
		return callJournal{}, false, fmt.Errorf("%s is empty: the call wrote nothing (the server log says why)", path)
	}
	return callJournal{id: callIDOf(path), path: path, events: events}, *asJSON, nil
}

// callIDOf is the call id of a journal at <data dir>/calls/<call id>/events.jsonl; empty
// for a journal kept anywhere else.
func callIDOf(path string) string {
	dir := filepath.Dir(path)
	if filepath.Base(filepath.Dir(dir)) != "calls" {
		return ""
	}
	return filepath.Base(dir)
}

// findJournal resolves CALL to an events.jsonl: a file, a call's folder, a data folder
// (its latest call), or a call id (or a unique start of one) under the data dir's calls.
func findJournal(command string, env Env, cfg *config.Config, arg string) (string, error) {
	callsDir := filepath.Join(pathInWorkDir(env, cfg.DataDir), "calls")
	if arg == "" {
		return latestJournal(command, callsDir, cfg)
	}
	p := pathInWorkDir(env, arg)
	if fi, err := os.Stat(p); err == nil {
		if !fi.IsDir() {
			return p, nil
		}
		if j := filepath.Join(p, "events.jsonl"); journalFileExists(j) {
			return j, nil
		}
		if sub := filepath.Join(p, "calls"); journalDirExists(sub) {
			return latestJournal(command, sub, cfg)
		}
		return "", fmt.Errorf("%s holds no events.jsonl: give a call's folder, its events.jsonl, or a call id", p)
	}
	if strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".jsonl") {
		return "", fmt.Errorf("%s: no such file or folder", p)
	}
	if j := filepath.Join(callsDir, arg, "events.jsonl"); journalFileExists(j) {
		return j, nil
	}
	entries, _ := os.ReadDir(callsDir)
	var matches []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), arg) && journalFileExists(filepath.Join(callsDir, e.Name(), "events.jsonl")) {
			matches = append(matches, e.Name())
		}
	}
	switch len(matches) {
	case 1:
		return filepath.Join(callsDir, matches[0], "events.jsonl"), nil
	case 0:
		return "", fmt.Errorf("no call %q in %s (%s)", arg, callsDir, dataDirSource(cfg))
	}
	return "", fmt.Errorf("%q could be any of %d calls: %s", arg, len(matches), strings.Join(matches[:min(len(matches), 5)], ", "))
}

// latestJournal is the journal of the call that started last (by its call.start, else
// the file's modification time).
func latestJournal(command, callsDir string, cfg *config.Config) (string, error) {
	entries, err := os.ReadDir(callsDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var best string
	var bestAt time.Time
	for _, e := range entries {
		j := filepath.Join(callsDir, e.Name(), "events.jsonl")
		if !e.IsDir() || !journalFileExists(j) {
			continue
		}
		if at := journalStart(j); best == "" || at.After(bestAt) {
			best, bestAt = j, at
		}
	}
	if best == "" {
		return "", fmt.Errorf("no calls in %s (%s): every call writes its journal there. Set HANDSET_DATA_DIR, or data_dir in handset.yaml, to the data folder `handset serve` uses, or name a journal: handset %s PATH/events.jsonl",
			callsDir, dataDirSource(cfg), command)
	}
	return best, nil
}

// journalStart reads when a call started from its first line, falling back to mtime.
func journalStart(path string) time.Time {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadBytes('\n')
	var e obs.Event
	if json.Unmarshal(line, &e) == nil && e.Type == obs.CallStart && !e.TS.IsZero() {
		return e.TS
	}
	if fi, err := f.Stat(); err == nil {
		return fi.ModTime()
	}
	return time.Time{}
}

// dataDirSource says where the data folder setting came from.
func dataDirSource(cfg *config.Config) string {
	o, ok := cfg.Origin("HANDSET_DATA_DIR")
	if !ok || o.Kind == config.FromDefault {
		return "HANDSET_DATA_DIR is not set: the default is " + cfg.DataDir
	}
	return "HANDSET_DATA_DIR is " + cfg.DataDir + ", from the " + o.String()
}

// pathInWorkDir resolves a relative path against the command's working folder.
func pathInWorkDir(env Env, p string) string {
	if filepath.IsAbs(p) || env.WorkDir == "" {
		return p
	}
	return filepath.Join(env.WorkDir, p)
}

func journalFileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

func journalDirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func printJSONTo(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// statusMarks are the status symbols, coloured on a terminal unless NO_COLOR is set.
type statusMarks struct{ color bool }

func newStatusMarks(env Env) statusMarks {
	for _, kv := range env.Environ {
		if k, v, _ := strings.Cut(kv, "="); (k == "NO_COLOR" && v != "") || (k == "TERM" && v == "dumb") {
			return statusMarks{}
		}
	}
	f, ok := env.Stdout.(*os.File)
	if !ok {
		return statusMarks{}
	}
	fi, err := f.Stat()
	return statusMarks{color: err == nil && fi.Mode()&os.ModeCharDevice != 0}
}

// of returns the symbol for a status: ✓ ok, ! warn, ✗ failed, - not reached.
func (m statusMarks) of(status string) string {
	sym, code := "-", "2" // dim
	switch status {
	case obs.StatusOK:
		sym, code = "✓", "32"
	case obs.StatusWarn:
		sym, code = "!", "33"
	case obs.StatusFailed:
		sym, code = "✗", "31"
	}
	if !m.color {
		return sym
	}
	return "\x1b[" + code + "m" + sym + "\x1b[0m"
}

// printTrace prints the stage table, the turn table and the call-wide warnings.
func printTrace(w io.Writer, t obs.CallTrace, m statusMarks) {
	printCallHeader(w, t)
	printSignalling(w, t.Signalling)
	fmt.Fprintln(w)
	for _, s := range t.Stages {
		detail := s.Detail
		if s.Status == obs.StatusNotReached {
			detail = "not reached: " + detail
		}
		fmt.Fprintf(w, "  %s %-8s %s\n", m.of(s.Status), s.Stage, detail)
		if s.Problem != "" {
			fmt.Fprintf(w, "    %-8s %s\n", "", s.Problem)
		}
	}
	fmt.Fprintln(w)
	printTurns(w, t)
	for _, x := range t.Warnings {
		if x.Stage == "" { // the stages' own are under them above
			fmt.Fprintf(w, "\n%s %s\n  %s\n", m.of(obs.StatusWarn), x.Problem, x.Fix)
		}
	}
	for _, s := range t.Stages {
		if s.Status == obs.StatusWarn || s.Status == obs.StatusFailed {
			fmt.Fprintln(w, "\n`handset diagnose` names the fixes.")
			break
		}
	}
}

// printCallHeader prints who took part in the call, when, and how it ended.
func printCallHeader(w io.Writer, t obs.CallTrace) {
	id := t.CallID
	if id == "" {
		id = "(unknown id)"
	}
	fmt.Fprintf(w, "call %s: %s %s, agent %s, stt %s, tts %s\n", id,
		dashIfEmpty(t.Carrier), dashIfEmpty(t.Direction), dashIfEmpty(t.Agent), dashIfEmpty(t.STT), dashIfEmpty(t.TTS))
	end := "still running or cut short (no call.end)"
	switch {
	case t.Ended:
		end = "ended " + t.EndReason
	case t.Carrier == obs.BridgeCarrier:
		end = "an agent bridge session: its turns so far"
	}
	started := "unknown start"
	if !t.Start.IsZero() {
		started = "started " + t.Start.Local().Format("2006-01-02 15:04:05 MST")
	}
	fmt.Fprintf(w, "%s, lasted %.1f s, %s\n", started, float64(t.DurationMS)/1000, end)
	if t.Journal != "" {
		fmt.Fprintf(w, "journal %s\n", t.Journal)
	}
}

// printSignalling prints the call's signalling timeline, for carriers whose calls Handset
// sets up itself (a SIP trunk): each message with its direction, and the first RTP out.
func printSignalling(w io.Writer, lines []obs.SignalLine) {
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "\nsignalling (ms of call time; ← from the caller, → from Handset)")
	for _, l := range lines {
		arrow := "→"
		if l.Direction == "in" {
			arrow = "←"
		}
		reason := ""
		if l.Reason != "" {
			reason = " (" + l.Reason + ")"
		}
		fmt.Fprintf(w, "  %8d %s %s%s\n", l.MS, arrow, l.Name, reason)
	}
}

// printTurns prints the per-turn latency table and its summary rows.
func printTurns(w io.Writer, t obs.CallTrace) {
	if len(t.Turns) == 0 {
		fmt.Fprintln(w, "no caller turns")
		return
	}
	const row = "%-5s %-30s %9s %11s %9s %9s %9s %9s %13s\n"
	fmt.Fprintf(w, row, "turn", "caller", "endpoint", "agent ttft", "tts ttfb", "filler", "response", "overhead", "tokens in/out")
	for _, tr := range t.Turns {
		caller := tr.Caller
		switch {
		case tr.Error != "":
			caller = "✗ " + caller
		case tr.Interrupted:
			caller = "↯ " + caller
		}
		fmt.Fprintf(w, row, fmt.Sprint(tr.Turn), clipCaller(caller, 30),
			latencyCell(tr.EndpointMS), latencyCell(tr.AgentTTFTMS), latencyCell(tr.TTSTTFBMS),
			latencyCell(tr.FillerMS), latencyCell(tr.ResponseMS), latencyCell(tr.OverheadMS), tokensCell(tr))
	}
	l := t.Latency
	stats := []obs.Stat{l.EndpointMS, l.AgentTTFTMS, l.TTSTTFBMS, l.FillerMS, l.ResponseMS, l.OverheadMS}
	for _, name := range []string{"avg", "p50", "max"} {
		cells := make([]any, 0, 9)
		cells = append(cells, name, "")
		for _, s := range stats {
			v := map[string]float64{"avg": s.Avg, "p50": s.P50, "max": s.Max}[name]
			cells = append(cells, latencyCell(v))
		}
		fmt.Fprintf(w, row, append(cells, "")...)
	}
	if in, out, n := tokenTotals(t.Turns); n > 0 {
		fmt.Fprintf(w, "tokens: %d in, %d out over %d turn(s), as the runtime reported them\n", in, out, n)
	}
	if legend := turnsLegend(t.Turns); legend != "" {
		fmt.Fprintf(w, "(%s)\n", legend)
	}
}

// turnsLegend explains the marks the turn table uses.
func turnsLegend(turns []obs.TurnSummary) string {
	var failed, interrupted, missing, filler bool
	for _, t := range turns {
		failed = failed || t.Error != ""
		interrupted = interrupted || t.Interrupted
		missing = missing || min(t.EndpointMS, t.AgentTTFTMS, t.TTSTTFBMS, t.ResponseMS, t.OverheadMS) < 0
		filler = filler || t.FillerMS >= 0
	}
	var parts []string
	if filler {
		parts = append(parts, "filler: when the long-turn filler started; response: when the reply itself did")
	}
	if failed {
		parts = append(parts, "✗ the agent failed")
	}
	if interrupted {
		parts = append(parts, "↯ the caller interrupted")
	}
	if missing {
		parts = append(parts, "- not measured")
	}
	return strings.Join(parts, ", ")
}

// tokensCell shows a turn's tokens as the runtime reported them: "812/35", "-/35" when it
// counts only its output, "-" when it reported none.
func tokensCell(t obs.TurnSummary) string {
	if t.InputTokens == 0 && t.OutputTokens == 0 {
		return "-"
	}
	return countOrDash(t.InputTokens) + "/" + countOrDash(t.OutputTokens)
}

// tokenTotals sums the tokens of the turns that reported any, and counts those turns.
func tokenTotals(turns []obs.TurnSummary) (in, out, n int) {
	for _, t := range turns {
		if t.InputTokens > 0 || t.OutputTokens > 0 {
			in, out, n = in+t.InputTokens, out+t.OutputTokens, n+1
		}
	}
	return in, out, n
}

// latencyCell shows milliseconds, with a tenth below 10 ms.
func latencyCell(ms float64) string {
	switch {
	case ms < 0:
		return "-"
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// clipCaller shortens s to n runes, ending with an ellipsis when cut.
func clipCaller(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
