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
	"github.com/handset-voice/handset/internal/gateway"
	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/store"
)

// callFlags are `handset call`'s flags.
type callFlags struct {
	message, from, onMachine string
	attempts                 int
	list, batch              string
	wait                     bool
	timeout                  time.Duration
	asJSON                   bool
	// account names the placing carrier's account settings, for the hint of a call nobody
	// picks up: "TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN".
	account string
}

// unclaimedHint is how long a queued call may sit unclaimed before --wait says why.
const unclaimedHint = 20 * time.Second

func runCall(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("call", env)
	var f callFlags
	fs.StringVar(&f.message, "message", "", "what to say when the call is answered (default HANDSET_FIRST_MESSAGE)")
	fs.StringVar(&f.from, "from", "", "the number to call from (default HANDSET_PHONE_NUMBER)")
	fs.StringVar(&f.onMachine, "on-machine", "", "when a machine answers: hangup, message or talk (default HANDSET_MACHINE_DETECTION)")
	fs.IntVar(&f.attempts, "attempts", 3, "calls to make before giving up on a busy or unanswered number")
	fs.StringVar(&f.list, "list", "", "dialer mode: a `file` with one number a line (optionally `,message`)")
	fs.StringVar(&f.batch, "batch", "", "name of the list's batch (default the file's name): running the same batch again never calls a number twice")
	fs.BoolVar(&f.wait, "wait", false, "follow the call (or the list) until it is done; exit 1 if any failed")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Minute, "with --wait: give up following after this long")
	fs.BoolVar(&f.asJSON, "json", false, "print the job(s) as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: handset call NUMBER [--message TEXT] [--wait]\n       handset call --list FILE [--batch NAME] [--wait]")
		fmt.Fprintln(fs.Output(), "\nQueues outbound calls as jobs; every `handset serve` node sharing the store places them,")
		fmt.Fprintln(fs.Output(), "within HANDSET_OUTBOUND_CONCURRENCY, HANDSET_OUTBOUND_RATE and outside HANDSET_QUIET_HOURS.")
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case f.list == "" && fs.NArg() != 1:
		return &usageError{msg: "call takes one NUMBER (or --list FILE)", hint: "handset call +14155550100 --wait"}
	case f.list != "" && fs.NArg() != 0:
		return &usageError{msg: "give either a NUMBER or --list FILE, not both"}
	case f.attempts < 1 || f.attempts > 10:
		return &usageError{msg: fmt.Sprintf("--attempts %d: from 1 to 10", f.attempts)}
	}
	cfg, err := loadConfig(env, g, nil)
	if err != nil {
		return err
	}
	warnSettings(newLogger(env.Stderr, cfg), cfg)
	if err := cfg.Validate(config.ValidateOptions{}); err != nil {
		return err
	}
	f.account = "a carrier's account settings"
	if c, ok := registry.ChosenCarrier(cfg); ok {
		f.account = c.AccountSettings
	}
	st, err := gateway.OpenStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	var queued []store.Job
	if f.list != "" {
		queued, err = queueList(ctx, env, st, f)
	} else {
		var j store.Job
		j, err = jobs.QueueCall(ctx, st, jobs.CallJob{To: fs.Arg(0), From: f.from, FirstMessage: f.message, OnMachine: f.onMachine},
			jobs.QueueOptions{MaxAttempts: f.attempts})
		queued = append(queued, j)
	}
	if errors.Is(err, jobs.ErrBadRequest) {
		return &usageError{msg: strings.TrimPrefix(err.Error(), jobs.ErrBadRequest.Error()+": ")}
	}
	if err != nil {
		return err
	}
	if !f.wait {
		return printQueued(env.Stdout, queued, f)
	}
	if !f.asJSON {
		printQueued(env.Stdout, queued, f)
	}
	return followJobs(ctx, env, st, queued, f)
}

func printQueued(w io.Writer, queued []store.Job, f callFlags) error {
	if f.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"jobs": jobsJSON(queued)})
	}
	if f.list == "" {
		fmt.Fprintf(w, "queued call job %d to %s\n", queued[0].ID, payloadTo(queued[0]))
		return nil
	}
	fmt.Fprintf(w, "queued %d calls in batch %q (jobs %d…%d)\n", len(queued), queued[0].Batch, queued[0].ID, queued[len(queued)-1].ID)
	return nil
}

func jobsJSON(js []store.Job) []map[string]any {
	out := make([]map[string]any, len(js))
	for i, j := range js {
		m := map[string]any{"id": j.ID, "state": j.State, "attempts": j.Attempts, "to": payloadTo(j)}
		if j.Batch != "" {
			m["batch"] = j.Batch
		}
		if json.Valid(j.Result) {
			m["result"] = json.RawMessage(j.Result)
		}
		if j.Error != "" {
			m["error"] = j.Error
		}
		out[i] = m
	}
	return out
}

func payloadTo(j store.Job) string {
	var p jobs.CallJob
	_ = json.Unmarshal(j.Payload, &p)
	return p.To
}

// listEntry is one line of a dialer list.
type listEntry struct {
	line        int
	to, message string
}

// queueList reads a dialer list, checks every line before queueing any, and queues each
// number once per batch (a number already queued in the batch is skipped, so running the
// command again after a crash or an edit only adds what is new).
func queueList(ctx context.Context, env Env, st store.Store, f callFlags) ([]store.Job, error) {
	path := f.list
	if !filepath.IsAbs(path) {
		path = filepath.Join(env.WorkDir, path)
	}
	entries, err := readList(path)
	if err != nil {
		return nil, err
	}
	batch := f.batch
	if batch == "" {
		batch = strings.TrimSuffix(filepath.Base(f.list), filepath.Ext(f.list))
	}
	var queued []store.Job
	skipped := 0
	for _, e := range entries {
		msg := e.message
		if msg == "" {
			msg = f.message
		}
		j, err := jobs.QueueCall(ctx, st, jobs.CallJob{To: e.to, From: f.from, FirstMessage: msg, OnMachine: f.onMachine},
			jobs.QueueOptions{MaxAttempts: f.attempts, Batch: batch, DedupeKey: "batch:" + batch + ":" + e.to})
		if errors.Is(err, store.ErrDuplicate) {
			skipped++
			continue
		}
		if err != nil {
			return queued, fmt.Errorf("%s line %d: %w", f.list, e.line, err)
		}
		queued = append(queued, j)
	}
	if skipped > 0 && !f.asJSON {
		fmt.Fprintf(env.Stdout, "%d numbers were already queued in batch %q and were skipped\n", skipped, batch)
	}
	if len(queued) == 0 {
		// Nothing new: follow the batch as it stands.
		queued, err = st.Jobs(ctx, store.ListJobs{Batch: batch, Limit: 100000})
		if err != nil {
			return nil, err
		}
		if len(queued) == 0 {
			return nil, &usageError{msg: f.list + " has no numbers"}
		}
	}
	return queued, nil
}

// readList parses the list, reporting every bad line at once.
func readList(path string) ([]listEntry, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, &usageError{msg: "--list: " + err.Error()}
	}
	defer file.Close()
	var entries []listEntry
	var bad []string
	seen := map[string]int{}
	sc := bufio.NewScanner(file)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		number, message, _ := strings.Cut(line, ",")
		e := listEntry{line: n, message: strings.TrimSpace(message)}
		j, err := jobs.QueueCallCheck(jobs.CallJob{To: strings.TrimSpace(number), FirstMessage: e.message})
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %s", n, strings.TrimPrefix(err.Error(), jobs.ErrBadRequest.Error()+": ")))
			continue
		}
		e.to = j.To
		if first, dup := seen[e.to]; dup {
			bad = append(bad, fmt.Sprintf("line %d: %s is also on line %d", n, e.to, first))
			continue
		}
		seen[e.to] = n
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--list %s: %w", path, err)
	}
	if len(bad) > 0 {
		return nil, &usageError{msg: fmt.Sprintf("%s has %d bad lines (nothing was queued):\n  %s", path, len(bad), strings.Join(bad, "\n  ")),
			hint: "one number a line in E.164 form (+14155550100), optionally followed by a comma and the message"}
	}
	return entries, nil
}

// followJobs waits for every job to finish, printing progress; error when any failed.
func followJobs(ctx context.Context, env Env, st store.Store, queued []store.Job, f callFlags) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	started := time.Now()
	hinted := false
	last := ""
	for {
		current := make([]store.Job, 0, len(queued))
		counts := map[store.JobState]int{}
		for _, q := range queued {
			j, err := st.Job(ctx, q.ID)
			if err != nil {
				return err
			}
			counts[j.State]++
			current = append(current, j)
		}
		done := counts[store.JobCompleted] + counts[store.JobFailed]
		line := fmt.Sprintf("%d/%d done (%d completed, %d failed), %d calling, %d waiting",
			done, len(current), counts[store.JobCompleted], counts[store.JobFailed], counts[store.JobRunning], counts[store.JobPending])
		if line != last && !f.asJSON {
			fmt.Fprintln(env.Stdout, line)
			last = line
		}
		if done == len(current) {
			return reportFollowed(env, current, f)
		}
		if !hinted && counts[store.JobRunning] == 0 && done == 0 && time.Since(started) > unclaimedHint {
			hinted = true
			fmt.Fprintln(env.Stderr, "hint: no node has picked the call up yet: is `handset serve` running with this store "+
				"(HANDSET_DATA_DIR or HANDSET_DATABASE_URL), with "+f.account+", HANDSET_PHONE_NUMBER and HANDSET_PUBLIC_URL set? "+
				"Quiet hours (HANDSET_QUIET_HOURS) also hold calls back.")
		}
		select {
		case <-ctx.Done():
			if !f.asJSON {
				fmt.Fprintln(env.Stderr, "stopped following; the calls go on: `handset call` jobs are in the store")
			}
			return fmt.Errorf("gave up waiting after %v: %w", f.timeout, errReported)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// reportFollowed prints each job's end.
func reportFollowed(env Env, js []store.Job, f callFlags) error {
	failed := 0
	for _, j := range js {
		if j.State == store.JobFailed {
			failed++
		}
	}
	if f.asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"jobs": jobsJSON(js)}); err != nil {
			return err
		}
	} else {
		for _, j := range js {
			if len(js) > 20 && j.State == store.JobCompleted {
				continue // a long list: only the failures
			}
			var r jobs.CallResult
			_ = json.Unmarshal(j.Result, &r)
			switch j.State {
			case store.JobCompleted:
				fmt.Fprintf(env.Stdout, "job %d %s: %s (call %s, %ds)\n", j.ID, payloadTo(j), r.Outcome, r.CallID, r.Seconds)
			default:
				fmt.Fprintf(env.Stdout, "job %d %s: failed after %d attempts: %s\n", j.ID, payloadTo(j), j.Attempts, j.Error)
			}
		}
	}
	if failed > 0 {
		return errReported
	}
	return nil
}
