package pagetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/handset-voice/handset/internal/testpeer"
)

// WCAGTags are the axe-core rule tags Audit runs: WCAG 2.0 and 2.1, levels A and AA.
var WCAGTags = []string{"wcag2a", "wcag2aa", "wcag21a", "wcag21aa"}

// An Audit is what axe-core found in one page.
type Audit struct {
	AxeVersion string      `json:"version"`
	URL        string      `json:"url"`
	Violations []Violation `json:"violations"`
	// Undecided are the rules axe-core could not settle by itself (text over an image,
	// say): a person decides them, looking at the screenshot.
	Undecided []Violation `json:"incomplete"`
}

// A Violation is one axe-core rule the page breaks, and where.
type Violation struct {
	ID      string `json:"id"`     // the rule: "image-alt", "color-contrast", ...
	Impact  string `json:"impact"` // "critical", "serious", "moderate" or "minor"
	Help    string `json:"help"`   // the rule in a sentence
	HelpURL string `json:"helpUrl"`
	Nodes   []Node `json:"nodes"`
}

// A Node is one element that breaks the rule.
type Node struct {
	Target         []Selector `json:"target"`         // the element, as CSS selectors
	FailureSummary string     `json:"failureSummary"` // what to fix, in axe-core's words
	HTML           string     `json:"html"`           // the element's opening tag
}

// A Selector finds an element: a CSS selector, or for an element inside shadow DOM the
// selectors from the document down through each shadow root, joined by " >>> ". axe-core
// writes the first as a string and the second as a list of strings.
type Selector string

// UnmarshalJSON reads either form axe-core writes.
func (s *Selector) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		*s = Selector(one)
		return nil
	}
	var path []string
	if err := json.Unmarshal(data, &path); err != nil {
		return fmt.Errorf("axe-core selector is neither a string nor a list of strings: %s", data)
	}
	*s = Selector(strings.Join(path, " >>> "))
	return nil
}

// Blocking reports whether a test must fail for v: its impact is serious or critical, or
// one this package does not know (so a new level cannot slip through).
func (v Violation) Blocking() bool {
	switch v.Impact {
	case "moderate", "minor":
		return false
	}
	return true
}

// String is v for a person: the rule, its impact and help, then each element and what to
// fix there.
func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s\n  %s", v.ID, v.Impact, v.Help, v.HelpURL)
	for _, n := range v.Nodes {
		targets := make([]string, len(n.Target))
		for i, s := range n.Target {
			targets[i] = string(s)
		}
		fmt.Fprintf(&b, "\n  at %s: %s", strings.Join(targets, ", "), n.HTML)
		for _, line := range strings.Split(strings.TrimSpace(n.FailureSummary), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				fmt.Fprintf(&b, "\n    %s", line)
			}
		}
	}
	return b.String()
}

// Split parts violations into those that fail a test (Blocking) and the rest.
func Split(violations []Violation) (blocking, other []Violation) {
	for _, v := range violations {
		if v.Blocking() {
			blocking = append(blocking, v)
		} else {
			other = append(other, v)
		}
	}
	return blocking, other
}

// runAxe runs axe-core over the document with the WCAG tags and keeps what Audit reads.
// It returns JSON text: the results hold DOM nodes, which do not travel by value.
const runAxe = `(async () => {
  const r = await axe.run(document, {runOnly: {type: "tag", values: %s}, resultTypes: ["violations", "incomplete"]});
  const keep = v => ({
    id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
    nodes: v.nodes.map(n => ({target: n.target, failureSummary: n.failureSummary, html: n.html})),
  });
  return JSON.stringify({version: axe.version, url: r.url, violations: r.violations.map(keep), incomplete: r.incomplete.map(keep)});
})()`

// RunAxe runs axe-core (the text of axe.min.js) in the page ctx shows and returns what it
// found. The script goes in through the DevTools protocol's Runtime.evaluate, which a
// page's Content-Security-Policy does not govern, so pages that allow only their own
// scripts are checked as they are served.
func RunAxe(ctx context.Context, axeScript string) (Audit, error) {
	// Once per document: a page checked twice keeps the axe it was given.
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof axe === "object"`))
	if err != nil {
		return Audit{}, fmt.Errorf("look for axe-core in the page: %w", err)
	}
	if !loaded {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](axeScript)); err != nil {
			return Audit{}, fmt.Errorf("load axe-core into the page: %w", err)
		}
	}
	tags, err := json.Marshal(WCAGTags)
	if err != nil {
		return Audit{}, err
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(runAxe, tags), chromedp.EvalAwaitPromise))
	if err != nil {
		return Audit{}, fmt.Errorf("run axe-core: %w", err)
	}
	return decodeAudit(raw)
}

func decodeAudit(raw string) (Audit, error) {
	var a Audit
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		return Audit{}, fmt.Errorf("read axe-core's results: %w", err)
	}
	return a, nil
}

// CheckAccessibility saves a screenshot of the page ctx shows as name.png and runs
// axe-core in it: each serious or critical violation is printed and fails t; moderate and
// minor ones are logged, as are the checks axe-core left undecided. Without axe-core in .cache/axe the test ends as
// testpeer.Missing says.
func CheckAccessibility(t testing.TB, ctx context.Context, name string) Audit {
	t.Helper()
	script := AxeScript(t)
	Screenshot(t, ctx, name+".png")
	audit, err := RunAxe(ctx, script)
	if err != nil {
		t.Fatalf("axe-core on %s: %v", name, err)
	}
	blocking, other := Split(audit.Violations)
	for _, v := range other {
		t.Logf("axe-core %s on %s (%s), not failing the test: %s", audit.AxeVersion, name, audit.URL, v)
	}
	for _, v := range audit.Undecided {
		t.Logf("axe-core %s on %s (%s) could not decide, for a person to look at: %s", audit.AxeVersion, name, audit.URL, v)
	}
	for _, v := range blocking {
		t.Errorf("axe-core %s on %s (%s): %s", audit.AxeVersion, name, audit.URL, v)
	}
	if len(audit.Violations) == 0 {
		t.Logf("axe-core %s on %s (%s): no violation of %s", audit.AxeVersion, name, audit.URL, strings.Join(WCAGTags, ", "))
	}
	return audit
}

// AxeFile is where scripts/axe.sh puts axe-core, from the top of the repository.
const AxeFile = ".cache/axe/axe.min.js"

var axeText struct {
	once sync.Once
	text string
	err  error
}

// AxeScript is the text of axe.min.js from .cache/axe (read once per test binary);
// missing, the test ends as testpeer.Missing says.
func AxeScript(t testing.TB) string {
	t.Helper()
	root, err := testpeer.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := testpeer.File(t, filepath.Join(root, AxeFile), testpeer.AxeCore)
	axeText.once.Do(func() {
		data, err := os.ReadFile(path)
		axeText.text, axeText.err = string(data), err
	})
	if axeText.err != nil {
		t.Fatal(axeText.err)
	}
	return axeText.text
}
