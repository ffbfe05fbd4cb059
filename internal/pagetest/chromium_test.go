package pagetest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// strictCSP allows the page only its own scripts: no inline script, no eval.
const strictCSP = "default-src 'self'; script-src 'self'"

// A page in two versions: broken has an image without alternative text and a field
// without a label, both critical to axe-core; clean fixes both. Each carries an inline
// script the CSP must block and a script of its own it must allow.
const pageTemplate = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>pagetest</title><script src="/own.js" defer></script></head>
<body>
<main>
  <h1>A page to check</h1>
  %s
  <script>document.documentElement.dataset.inline = "ran";</script>
</main>
</body>
</html>`

const (
	brokenBody = `<img src="/dot.png"><input type="text">`
	cleanBody  = `<img src="/dot.png" alt="a blue dot"><label>Name <input type="text"></label>`
)

// pageServer serves both versions under the strict CSP.
func pageServer(t *testing.T) *httptest.Server {
	t.Helper()
	var dot bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for i := range 64 {
		img.Set(i%8, i/8, color.RGBA{0, 0, 200, 255})
	}
	if err := png.Encode(&dot, img); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, pageTemplate, body)
		}
	}
	mux.Handle("/broken", page(brokenBody))
	mux.Handle("/clean", page(cleanBody))
	mux.HandleFunc("/own.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `document.documentElement.dataset.own = "ran";`)
	})
	mux.HandleFunc("/dot.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write(dot.Bytes())
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", strictCSP)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// open loads the page at url and waits until its own script has run; it checks that the
// CSP is in force, so what axe-core does next happens under it.
func open(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(`html[data-own="ran"]`))
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	inline, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.inline || "blocked"`))
	if err != nil {
		t.Fatal(err)
	}
	if inline != "blocked" {
		t.Fatalf("%s: the inline script ran: the CSP is not in force", url)
	}
}

// recorder stands in for t in CheckAccessibility, keeping what it reports.
type recorder struct {
	testing.TB
	errors, logs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// TestAxeFindsWhatABrokenPageBreaks runs axe-core in Chromium, injected into pages whose
// CSP allows no injected script: it finds the broken page's two critical violations, and
// the clean page passes.
func TestAxeFindsWhatABrokenPageBreaks(t *testing.T) {
	script := AxeScript(t)
	ctx, _ := Start(t, Options{})
	srv := pageServer(t)
	artifacts := t.TempDir()
	t.Setenv(ArtifactsEnv, artifacts)

	open(t, ctx, srv.URL+"/broken")
	audit, err := RunAxe(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(audit.AxeVersion, "4.") || audit.URL != srv.URL+"/broken" {
		t.Errorf("axe-core %q on %q", audit.AxeVersion, audit.URL)
	}
	found := map[string]Violation{}
	for _, v := range audit.Violations {
		found[v.ID] = v
	}
	for id, element := range map[string]string{"image-alt": "img", "label": "input"} {
		v, ok := found[id]
		if !ok {
			t.Errorf("axe-core missed %s: %+v", id, audit.Violations)
			continue
		}
		if !v.Blocking() || len(v.Nodes) != 1 || !strings.Contains(string(v.Nodes[0].Target[0]), element) || v.Nodes[0].FailureSummary == "" {
			t.Errorf("%s: %s", id, v)
		}
	}
	// A second run in the same document reuses the axe-core it has, and agrees.
	again, err := RunAxe(ctx, script)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Violations) != len(audit.Violations) {
		t.Errorf("second run found %d violations, the first %d", len(again.Violations), len(audit.Violations))
	}

	// CheckAccessibility fails the test once for each, and leaves a screenshot.
	rec := &recorder{TB: t}
	CheckAccessibility(rec, ctx, "pagetest-broken")
	t.Logf("CheckAccessibility on the broken page reported:\n%s", strings.Join(rec.errors, "\n"))
	if len(rec.errors) != 2 || !slices.ContainsFunc(rec.errors, func(e string) bool { return strings.Contains(e, "image-alt (critical)") }) ||
		!slices.ContainsFunc(rec.errors, func(e string) bool { return strings.Contains(e, "label (critical)") }) {
		t.Errorf("CheckAccessibility on the broken page reported:\n%s", strings.Join(rec.errors, "\n"))
	}
	shot, err := os.ReadFile(filepath.Join(artifacts, "pagetest-broken.png"))
	if err != nil || !bytes.HasPrefix(shot, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("no PNG screenshot of the broken page (%v)", err)
	}

	open(t, ctx, srv.URL+"/clean")
	rec = &recorder{TB: t}
	clean := CheckAccessibility(rec, ctx, "pagetest-clean")
	if len(clean.Violations) != 0 || len(rec.errors) != 0 {
		t.Errorf("the clean page failed: %+v\n%s", clean.Violations, strings.Join(rec.errors, "\n"))
	}
}
