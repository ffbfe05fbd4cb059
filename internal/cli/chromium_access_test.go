//go:build embedded

package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/handset-voice/handset/internal/pagetest"
	"github.com/handset-voice/handset/internal/sim/browsercaller"
)

// TestDemoInChromiumWithToken: `handset demo` with HANDSET_BROWSER_TOKEN, in a real
// Chromium. Without the access link the page is refused; the link leaves the browser on the
// clean URL with its access cookie, and its socket (same origin, the cookie) is let in; a
// call refused for HANDSET_BROWSER_MAX_CALLS shows why on the page.
func TestDemoInChromiumWithToken(t *testing.T) {
	const token = "demo-access-0123456789abcdef"
	saved := demoProbes
	demoProbes = []runtimeProbe{{runtime: "hermes", label: "Hermes Agent", url: "http://127.0.0.1:9"}}
	defer func() { demoProbes = saved }()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	ready, exited := make(chan string, 1), make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"demo", "--listen", "127.0.0.1:0"}, Env{
			Stdout: logs, Stderr: logs, WorkDir: t.TempDir(),
			Environ: []string{"HANDSET_DATA_DIR=" + t.TempDir(), "HANDSET_ENGINES_DIR=" + repoEngines(t), "HANDSET_SPHINX_DECODERS=1",
				"HANDSET_BROWSER_TOKEN=" + token, "HANDSET_BROWSER_MAX_CALLS=1"},
			Ready: func(addr string) { ready <- addr },
		})
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-exited:
		cancel()
		t.Fatalf("demo exited with %d:\n%s", code, logs.String())
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("demo did not start")
	}
	defer func() {
		cancel()
		if code := <-exited; code != 0 {
			t.Errorf("demo exited with %d:\n%s", code, logs.String())
		}
	}()
	base := "http://" + addr
	if out := logs.String(); !strings.Contains(out, "Open "+base+"/?token=<your HANDSET_BROWSER_TOKEN> once") || strings.Contains(out, token) {
		t.Errorf("the demo did not say to open the access link, or showed the token:\n%s", out)
	}

	bctx, stopBrowser := pagetest.Start(t, pagetest.Options{FakeMedia: true})
	defer stopBrowser() // before the demo stops
	failed := func(format string, args ...any) {
		t.Helper()
		pagetest.Screenshot(t, bctx, "demo-chromium-token-failed.png")
		t.Fatalf(format+"\n%s", append(args, logs.String())...)
	}

	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/")); err != nil {
		failed("open the page: %v", err)
	}
	text, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		failed("read the page: %v", err)
	}
	if !strings.Contains(text, "needs its access link") {
		failed("the page without access showed %q", text)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(base+"/?token="+token), chromedp.WaitVisible("#call")); err != nil {
		failed("open the access link: %v", err)
	}
	where, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.pathname + location.search`))
	if err != nil {
		failed("read the location: %v", err)
	}
	if where != "/" {
		failed("after the access link the browser is at %q, want the clean URL /", where)
	}

	// Another browser holds the one browser call allowed.
	jar := browsercaller.NewJar()
	if err := browsercaller.Login(bctx, base, jar, token); err != nil {
		t.Fatal(err)
	}
	other, err := browsercaller.Dial(bctx, base, jar)
	if err != nil {
		t.Fatal(err)
	}
	var view pageView
	read := func() {
		raw, err := chromedp.Run(bctx, chromedp.Evaluate[string](readPage))
		if err != nil {
			failed("read the page: %v", err)
		}
		if err := json.Unmarshal([]byte(raw), &view); err != nil {
			t.Fatal(err)
		}
	}
	// waitFor reads the page until cond holds; the deadline is bctx's.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for read(); !cond(); read() {
			select {
			case <-bctx.Done():
				failed("the page never showed %s: %+v", what, view)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	if err := chromedp.Do(bctx, chromedp.Click("#call")); err != nil {
		failed("click Call: %v", err)
	}
	waitFor("the refusal", func() bool { return view.State == "ended" && view.Notice != "" })
	if want := "Handset could not take the call: too many browser calls at once (the limit is 1): try again later"; view.Notice != want {
		failed("the refused call's notice is %q, want %q", view.Notice, want)
	}
	// The refusal's notice is part of the page a person reads.
	pagetest.CheckAccessibility(t, bctx, "demo-chromium-refused")

	// Once the other call ends, its place is the page's (the place comes back as the call's
	// handler returns: a refusal meanwhile is tried again).
	_ = other.Hangup()
	<-other.Done()
	for admitted := false; !admitted; {
		// The last refusal's notice goes first, so only this attempt's outcome is read.
		if _, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.getElementById("notice").textContent = ""`)); err != nil {
			failed("clear the notice: %v", err)
		}
		if err := chromedp.Do(bctx, chromedp.Click("#call")); err != nil {
			failed("click Call: %v", err)
		}
		waitFor("the call admitted or refused", func() bool {
			return view.State == "listening" || view.State == "speaking" || (view.State == "ended" && view.Notice != "")
		})
		admitted = view.State != "ended"
		if !admitted && !strings.Contains(view.Notice, "at once") {
			failed("the call was refused: %+v", view)
		}
	}
	pagetest.Screenshot(t, bctx, "demo-chromium-token.png")
	if err := chromedp.Do(bctx, chromedp.Click("#hangup")); err != nil {
		t.Fatal(err)
	}
}
