package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/testpeer"
)

// TestLivePagesUpdateInABrowser: in Chromium, under the pages' own Content-Security-Policy
// and referrer policy, a person signs in, the live list and a live call's page follow the
// call's events as they come, and signing out ends the session.
func TestLivePagesUpdateInABrowser(t *testing.T) {
	testpeer.Slow(t, "starts Chromium")
	chromium := testpeer.Program(t, "chromium", testpeer.Chromium)
	src := someCalls()
	src.calls = append(src.calls, store.Call{ID: "c_live", Direction: "inbound", StartedAt: time.Now()})
	live := NewLive()
	tee := live.Observe("c_live")
	events := readEvents(t, "healthy.jsonl")
	tee(events[0])
	d := New(Options{Source: src, AdminToken: adminToken, Live: live})
	mux := http.NewServeMux()
	d.Register(mux)
	// The browser signs in through the form as a person would.
	srv := httptest.NewServer(mux)
	defer srv.Close()
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.Flag("disable-dev-shm-usage", true))...)
	defer stopAlloc()
	listTab, stopBrowser := chromedp.NewContext(alloc)
	defer stopBrowser()
	listTab, stopTimeout := context.WithTimeout(listTab, 90*time.Second)
	defer stopTimeout()
	if err := chromedp.Do(listTab, chromedp.Navigate(srv.URL+"/dashboard/live"), chromedp.WaitVisible("#token"),
		chromedp.SendKeys("#token", adminToken), chromedp.Submit("#token"), chromedp.WaitVisible("#live-calls")); err != nil {
		t.Fatal(err)
	}
	callTab, stopTab := chromedp.NewContext(listTab)
	defer stopTab()
	if err := chromedp.Do(callTab, chromedp.Navigate(srv.URL+"/dashboard/calls/c_live"), chromedp.WaitVisible("#live-lines")); err != nil {
		t.Fatal(err)
	}
	// Both pages follow the call before it goes on.
	waitFor(t, func() bool { live.mu.Lock(); defer live.mu.Unlock(); return live.subs == 2 })
	turn2 := 0
	for i, e := range events {
		if e.Type == obs.TurnCommit && e.Turn == 2 {
			turn2 = i
		}
	}
	for _, e := range events[1 : turn2+1] {
		tee(e)
	}
	state, err := chromedp.Run(listTab, chromedp.Poll[string](
		`(document.querySelector('tr[data-call="c_live"] .state') || {}).textContent === "thinking" && "thinking"`))
	if err != nil || state != "thinking" {
		t.Fatalf("the live list's state: %q, %v", state, err)
	}
	for _, e := range events[turn2+1:] {
		tee(e)
	}
	text, err := chromedp.Run(callTab, chromedp.Poll[string](
		`document.getElementById("live-state").textContent === "ended" && document.getElementById("live-lines").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	for _, said := range []string{"hello there, what are your opening hours", "You said: and <b>on</b> sundays.", "The call ended: caller_hangup"} {
		if !strings.Contains(text, said) {
			t.Errorf("the call's page lacks %q: %s", said, text)
		}
	}
	if _, err := chromedp.Run(listTab, chromedp.Poll[bool](`!document.querySelector('tr[data-call="c_live"]')`)); err != nil {
		t.Errorf("the ended call stays on the live list: %v", err)
	}
	// Signing out works from the browser too, and ends the session.
	if err := chromedp.Do(listTab, chromedp.Click(".signout button"), chromedp.WaitVisible("#token"),
		chromedp.Navigate(srv.URL+"/dashboard/live"), chromedp.WaitVisible("#token")); err != nil {
		t.Errorf("signing out: %v", err)
	}
}

// waitFor waits until cond holds, checking often, for at most a generous while.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("gave up waiting")
		}
	}
}
