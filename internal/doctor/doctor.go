// Package doctor runs preflight checks and prints their results: the generic part of
// `handset doctor`. A Check is a named probe of one thing (a key, a server, a file); Run
// runs them all at once, each bounded by its own timeout, and Print shows the results
// grouped by section, every problem followed by its one-line fix.
//
// The concrete checks live with the command (internal/cli), which knows how Handset is
// configured and wired; this package knows nothing about Handset's settings.
package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Status is the outcome of one check.
type Status string

// The outcomes, from best to worst; Skip means the check did not run.
const (
	OK   Status = "ok"   // all good
	Warn Status = "warn" // works, but something deserves attention; not a blocker
	Fail Status = "fail" // a blocker: calls will not work until it is fixed
	Skip Status = "skip" // not applicable, or not run (--no-network)
)

// Result is what one check found.
type Result struct {
	Section string `json:"section"` // groups results: "agent", "stt", "carrier", …
	Name    string `json:"name"`    // what was checked, short: "reachable", "key", "voice"
	Status  Status `json:"status"`
	Detail  string `json:"detail,omitempty"` // what was found, one line
	Fix     string `json:"fix,omitempty"`    // for warn and fail: what to do, one line
	// Took is how long the check ran (JSON: took_ms, whole milliseconds).
	Took time.Duration `json:"-"`
}

// resultJSON is Result on the wire: Took as whole milliseconds.
type resultJSON struct {
	Section string `json:"section"`
	Name    string `json:"name"`
	Status  Status `json:"status"`
	Detail  string `json:"detail,omitempty"`
	Fix     string `json:"fix,omitempty"`
	TookMS  int64  `json:"took_ms"`
}

// MarshalJSON writes the result with snake_case keys and took_ms.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{r.Section, r.Name, r.Status, r.Detail, r.Fix, r.Took.Milliseconds()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Result{Section: j.Section, Name: j.Name, Status: j.Status, Detail: j.Detail, Fix: j.Fix,
		Took: time.Duration(j.TookMS) * time.Millisecond}
	return nil
}

// Check is one probe. Run must return when ctx ends (Run gives up waiting on it then).
// The Result's Section and Name default to the Check's.
type Check struct {
	Section, Name string
	// Network marks a check that talks to another machine or a running service; under
	// Options.NoNetwork it is skipped.
	Network bool
	Run     func(ctx context.Context) Result
}

// DefaultTimeout bounds each check when Options.Timeout is zero.
const DefaultTimeout = 5 * time.Second

// Options tune Run.
type Options struct {
	// Timeout bounds each check on its own (they all run at once). Default DefaultTimeout.
	Timeout time.Duration
	// NoNetwork skips every check marked Network.
	NoNetwork bool
}

// Run runs every check in parallel, each under its own timeout, and returns their results
// in the checks' order. A check that outlives its timeout is a Fail saying so; one that
// panics is a Fail naming the panic; network checks are Skip under NoNetwork. Run returns
// once every check has either finished or run out of time, so it takes at most about one
// Timeout however many checks there are.
func Run(ctx context.Context, checks []Check, opts Options) []Result {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	results := make([]Result, len(checks))
	done := make(chan struct{}, len(checks))
	for i, c := range checks {
		go func() {
			results[i] = runOne(ctx, c, opts.NoNetwork, timeout)
			done <- struct{}{}
		}()
	}
	for range checks {
		<-done
	}
	return results
}

// runOne runs c under its timeout and fills in what the check left out.
func runOne(parent context.Context, c Check, noNetwork bool, timeout time.Duration) Result {
	base := Result{Section: c.Section, Name: c.Name}
	switch {
	case c.Network && noNetwork:
		base.Status, base.Detail = Skip, "not checked: --no-network"
		return base
	case c.Run == nil:
		base.Status, base.Detail = Skip, "nothing to check"
		return base
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	start := time.Now()
	got := make(chan Result, 1) // buffered: a late check finishes without anyone waiting
	go func() {
		defer func() {
			if p := recover(); p != nil {
				got <- Result{Status: Fail, Detail: fmt.Sprintf("the check crashed: %v", p),
					Fix: "this is a bug in handset doctor: please report it with this output"}
			}
		}()
		got <- c.Run(ctx)
	}()
	var r Result
	select {
	case r = <-got:
	case <-ctx.Done():
		// Prefer a result that arrived together with the deadline.
		select {
		case r = <-got:
		default:
			r = Result{Status: Fail}
			if parent.Err() != nil {
				r.Detail, r.Fix = "interrupted before it finished", "run handset doctor again"
			} else {
				r.Detail = fmt.Sprintf("timed out after %s with no answer", seconds(timeout))
				r.Fix = "check that it is running and reachable from this machine, or allow more time with --timeout"
			}
		}
	}
	if r.Status == Fail && parent.Err() == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) &&
		!strings.HasPrefix(r.Detail, "timed out after") {
		// The check gave up with the deadline and said so in its own words: it timed out,
		// and more time is what may help.
		r.Detail = fmt.Sprintf("timed out after %s with no answer (%s)", seconds(timeout), r.Detail)
		r.Fix = "check that it is running and reachable from this machine, or allow more time with --timeout"
	}
	r.Took = time.Since(start)
	if r.Section == "" {
		r.Section = c.Section
	}
	if r.Name == "" {
		r.Name = c.Name
	}
	if r.Status == "" {
		r.Status = OK
	}
	return r
}

// seconds renders d for people: "5s", "1.5s", "250ms".
func seconds(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// Counts tallies results by status.
type Counts struct {
	OK   int `json:"ok"`
	Warn int `json:"warn"`
	Fail int `json:"fail"`
	Skip int `json:"skip"`
}

// Count tallies results.
func Count(results []Result) Counts {
	var c Counts
	for _, r := range results {
		switch r.Status {
		case OK:
			c.OK++
		case Warn:
			c.Warn++
		case Fail:
			c.Fail++
		default:
			c.Skip++
		}
	}
	return c
}

// Failed reports whether any result is a Fail.
func Failed(results []Result) bool { return Count(results).Fail > 0 }

// String is the summary line: "12 ok, 1 warning, 2 failed, 3 skipped".
func (c Counts) String() string {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return one
		}
		return many
	}
	return fmt.Sprintf("%d ok, %d %s, %d failed, %d skipped",
		c.OK, c.Warn, plural(c.Warn, "warning", "warnings"), c.Fail, c.Skip)
}

// Markers per status, and their ANSI colours.
var (
	markers = map[Status]string{OK: "✓", Warn: "!", Fail: "✗", Skip: "-"}
	colors  = map[Status]string{OK: "\x1b[32m", Warn: "\x1b[33m", Fail: "\x1b[31m", Skip: "\x1b[2m"}
)

const reset = "\x1b[0m"

// slowShown: a check that took at least this long shows its time.
const slowShown = 500 * time.Millisecond

// Print writes the results grouped by section (sections in order of first appearance,
// results in their order within it), one line a result with its marker (✓ ok, ! warn,
// ✗ fail, - skip), then for a warn or fail its fix on the next line after "fix:", and a
// summary line at the end. color adds ANSI colours to the markers and the summary.
func Print(w io.Writer, results []Result, color bool) {
	var order []string
	bySection := map[string][]Result{}
	for _, r := range results {
		if _, seen := bySection[r.Section]; !seen {
			order = append(order, r.Section)
		}
		bySection[r.Section] = append(bySection[r.Section], r)
	}
	paint := func(s Status, text string) string {
		if !color {
			return text
		}
		return colors[s] + text + reset
	}
	for i, sec := range order {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, sec)
		for _, r := range bySection[sec] {
			mark := markers[r.Status]
			if mark == "" {
				mark = "?"
			}
			line := "  " + paint(r.Status, mark) + " " + r.Name
			if r.Detail != "" {
				line += ": " + oneLine(r.Detail)
			}
			if r.Took >= slowShown {
				line += " (" + seconds(r.Took) + ")"
			}
			fmt.Fprintln(w, line)
			if r.Fix != "" && (r.Status == Fail || r.Status == Warn) {
				fmt.Fprintln(w, "      fix: "+oneLine(r.Fix))
			}
		}
	}
	c := Count(results)
	summary := c.String()
	switch {
	case c.Fail > 0:
		summary = paint(Fail, summary)
	case c.Warn > 0:
		summary = paint(Warn, summary)
	default:
		summary = paint(OK, summary)
	}
	if len(order) > 0 {
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, summary)
}

// oneLine folds line breaks so every detail and fix stays on its line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}
