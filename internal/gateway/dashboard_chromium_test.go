package gateway

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/pagetest"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/testpeer"
	"github.com/handset-voice/handset/internal/voice"
)

const testViewerToken = "dashboard-test-viewer-token-9876543210"

// What the fake Deepgram hears in each call, utterance by utterance (each call starts at
// the top). Only call A gets past the first line: "menu" is in its transcript alone.
var dashboardScript = []string{
	"what are your opening hours",
	"tell me everything about the menu",
	"thanks, that is enough",
}

// menuReply is the long answer call A's caller cuts off after its first sentence.
const menuReply = "Our menu has three parts. First the starters: soups, salads and bread from our oven. " +
	"Then the mains: fish of the day, fresh pasta and a vegetable stew. Last the desserts, made each morning."

// dashboardReplies answers the menu question at length, anything else in a sentence.
func dashboardReplies(messages []fakeopenai.Message) string {
	said := messages[len(messages)-1].Content
	if strings.Contains(said, "menu") {
		return menuReply
	}
	return "You said: " + said + ". What else can I do for you?"
}

// TestDashboardAsAPersonUsesIt: the dashboard as an operator meets it, in Chromium. A
// recorded call with a barge-in has ended and another is live; the operator signs in
// through the form, finds the first call in the list and by a word it said, opens it (its
// waterfall agrees with the journal, the cut-off reply shows what the caller heard and what
// they did not, the recording plays), watches the live call answer a turn and end, and
// looks at the jobs and sessions. A viewer sees caller hashes, never the number. Every
// page is screenshot into test-artifacts/ and checked by axe-core.
func TestDashboardAsAPersonUsesIt(t *testing.T) {
	testpeer.Slow(t, "two phone calls, watched from Chromium")
	testpeer.Program(t, "chromium", testpeer.Chromium) // before the calls: skip early
	pagetest.AxeScript(t)
	cfg := fakesConfigAnswering(t, dashboardScript, dashboardReplies, "HANDSET_RECORD=true", "HANDSET_RECORD_NOTICE="+testNotice,
		"HANDSET_API_TOKEN="+testAPIToken, "HANDSET_DASHBOARD_TOKEN="+testViewerToken)
	gw, _ := serveGateway(t, cfg)
	base := "http://" + gw.Addr().String()
	st := gw.srv.st
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	callA, events := bargedInCall(ctx, t, gw)
	phoneB := dialTwilio(t, ctx, gw)
	t.Cleanup(func() { _ = phoneB.Hangup() }) // should the test end before B's own hang-up
	played(t, ctx, phoneB, "t0-end")
	idB := storedCall(ctx, t, st, phoneB).ID

	// Autoplay without a click, so the test can start the recording by script.
	browser, _ := pagetest.Start(t, pagetest.Options{FakeMedia: true, Width: 1200, Height: 900})
	signIn(t, browser, base, testAPIToken, "dashboard-login")
	checkCallList(t, browser, callA, idB)
	checkCallPage(ctx, t, browser, base, st, callA, events)
	watchLiveCall(ctx, t, browser, base, phoneB, idB)
	for _, page := range []string{"jobs", "sessions"} {
		if err := chromedp.Do(browser, chromedp.Navigate(base+"/dashboard/"+page), chromedp.WaitVisible("main h1")); err != nil {
			t.Fatalf("open the %s page: %v", page, err)
		}
		pagetest.CheckAccessibility(t, browser, "dashboard-"+page)
	}
	// Both calls came from the same number: one caller, remembered by hash.
	if hashes := evaluate[[]string](t, browser, `[...document.querySelectorAll("main table tbody tr td:first-child")].map(td => td.textContent.trim())`); !slices.Contains(hashes, callA.CallerHash) {
		t.Errorf("the sessions page lists %q, want the caller %s", hashes, callA.CallerHash)
	}

	// A viewer, in a browser context of their own (no admin cookie), sees hashes only.
	viewer, stopViewer := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer stopViewer()
	signIn(t, viewer, base, testViewerToken, "")
	rows := evaluate[[]listedCall](t, viewer, readCallList)
	if a, ok := findCall(rows, callA.ID); !ok || a.Cells[callerColumn] != callA.CallerHash {
		t.Errorf("the viewer's list shows call A as %+v, want its caller hash %s", a, callA.CallerHash)
	}
	pagetest.CheckAccessibility(t, viewer, "dashboard-calls-viewer")
	number := strings.TrimPrefix(twiliocaller.DefaultFrom, "+")
	if text := evaluate[string](t, viewer, `document.body.innerText`); strings.Contains(text, number) {
		t.Errorf("a viewer sees the caller's number on the call list")
	}
	if err := chromedp.Do(viewer, chromedp.Navigate(base+"/dashboard/calls/"+string(callA.ID)), chromedp.WaitVisible("main h1")); err != nil {
		t.Fatal(err)
	}
	if text := evaluate[string](t, viewer, `document.body.innerText`); strings.Contains(text, number) {
		t.Errorf("a viewer sees the caller's number on call A's page")
	}
}

// bargedInCall places call A and waits until it is stored as ended and summarised: the
// greeting, a turn answered, a long reply the caller talks over, and the turn that barge-in
// began, answered. It returns the call and its journal.
func bargedInCall(ctx context.Context, t *testing.T, gw *Gateway) (store.Call, []obs.Event) {
	t.Helper()
	st := gw.srv.st
	phone := dialTwilio(t, ctx, gw)
	played(t, ctx, phone, "t0-end")
	says(t, ctx, phone, 1200*time.Millisecond, 1)
	played(t, ctx, phone, "t1-end")
	says(t, ctx, phone, 1200*time.Millisecond, 2)
	played(t, ctx, phone, "t2-s1") // the long reply's first sentence: then the caller cuts in
	says(t, ctx, phone, 1000*time.Millisecond, 3)
	played(t, ctx, phone, "t3-end")
	id := storedCall(ctx, t, st, phone).ID
	hangUp(t, phone)

	var c store.Call
	waitUntil(t, "call A stored as ended with its summary", func() bool {
		c, _ = st.Call(ctx, id)
		return !c.EndedAt.IsZero() && c.Summary.Turns > 0
	})
	waitUntil(t, "call A's cut-off reply in the stored transcript", func() bool {
		_, ok := interruptedLine(ctx, st, id)
		return ok
	})
	events, err := obs.ReadFile(c.Journal)
	if err != nil {
		t.Fatal(err)
	}
	return c, events
}

// storedCall is the store's record of phone's call, found by its Twilio CallSid.
func storedCall(ctx context.Context, t *testing.T, st store.Store, phone *twiliocaller.Call) store.Call {
	t.Helper()
	var found store.Call
	waitUntil(t, "the call "+phone.CallSid()+" in the store", func() bool {
		calls, _ := st.Calls(ctx, store.ListCalls{})
		for _, c := range calls {
			if c.CarrierRef == phone.CallSid() {
				found = c
				return true
			}
		}
		return false
	})
	return found
}

// interruptedLine is the stored line of the reply the caller cut off: what they heard.
func interruptedLine(ctx context.Context, st store.Store, id voice.CallID) (store.TranscriptLine, bool) {
	lines, _ := st.Transcript(ctx, id)
	for _, l := range lines {
		if l.Interrupted {
			return l, true
		}
	}
	return store.TranscriptLine{}, false
}

// waitUntil waits until cond holds, for a generous while.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// signIn opens the dashboard, is sent to the sign-in form, types the token and submits
// it, as a person does; shot, when set, names the form's screenshot and axe-core check.
func signIn(t *testing.T, browser context.Context, base, token, shot string) {
	t.Helper()
	if err := chromedp.Do(browser, chromedp.Navigate(base+"/dashboard"), chromedp.WaitVisible("#token")); err != nil {
		t.Fatalf("open the dashboard: %v", err)
	}
	if shot != "" {
		pagetest.CheckAccessibility(t, browser, shot)
	}
	if _, err := chromedp.RunResponse(browser, chromedp.SendKeys("#token", token), chromedp.Click("form.login button[type=submit]")); err != nil {
		t.Fatalf("submit the sign-in form: %v", err)
	}
	if err := chromedp.Do(browser, chromedp.WaitVisible("table.calls")); err != nil {
		t.Fatalf("no call list after signing in: %v", err)
	}
}

// listedCall is one row of the call list.
type listedCall struct {
	Href  string   `json:"href"`
	Live  bool     `json:"live"`
	Cells []string `json:"cells"`
}

// The call list's columns the test reads.
const (
	callerColumn  = 3
	turnsColumn   = 5
	outcomeColumn = 6
)

const readCallList = `[...document.querySelectorAll("table.calls tbody tr")].map(tr => ({
  href: tr.querySelector("a").getAttribute("href"),
  live: tr.classList.contains("live"),
  cells: [...tr.cells].map(td => td.textContent.trim()),
}))`

func findCall(rows []listedCall, id voice.CallID) (listedCall, bool) {
	for _, r := range rows {
		if r.Href == "/dashboard/calls/"+string(id) {
			return r, true
		}
	}
	return listedCall{}, false
}

// checkCallList: both calls are listed, A ended with its turns and B live, and a word of
// A's transcript narrows the list to A.
func checkCallList(t *testing.T, browser context.Context, callA store.Call, idB voice.CallID) {
	t.Helper()
	rows := evaluate[[]listedCall](t, browser, readCallList)
	a, okA := findCall(rows, callA.ID)
	b, okB := findCall(rows, idB)
	if !okA || !okB || len(rows) != 2 {
		t.Fatalf("the call list %+v, want calls %s and %s", rows, callA.ID, idB)
	}
	wantTurns := fmt.Sprintf("%d (%d cut off)", callA.Summary.Turns, callA.Summary.Interrupted)
	if a.Live || a.Cells[turnsColumn] != wantTurns || a.Cells[outcomeColumn] != callA.Outcome || a.Cells[callerColumn] != callA.From {
		t.Errorf("call A listed as %+v, want ended, turns %q, outcome %s, caller %s", a, wantTurns, callA.Outcome, callA.From)
	}
	if !b.Live || b.Cells[outcomeColumn] != "live" {
		t.Errorf("call B listed as %+v, want it marked live", b)
	}
	pagetest.CheckAccessibility(t, browser, "dashboard-calls")

	if _, err := chromedp.RunResponse(browser, chromedp.SendKeys("#q", "menu"), chromedp.Click("form.filters button[type=submit]")); err != nil {
		t.Fatalf("filter the calls: %v", err)
	}
	rows = evaluate[[]listedCall](t, browser, readCallList)
	if _, ok := findCall(rows, callA.ID); !ok || len(rows) != 1 {
		t.Errorf("calls whose transcript says \"menu\": %+v, want call A alone", rows)
	}
}

// callPageView is what the test reads off a finished call's page.
type callPageView struct {
	Turns []struct {
		Head string `json:"head"`
		Bars []struct {
			Kind  string `json:"kind"`
			Title string `json:"title"`
		} `json:"bars"`
	} `json:"turns"`
	CutOff []struct {
		Heard   string `json:"heard"`
		Unheard string `json:"unheard"`
	} `json:"cutOff"`
	Verdict    string   `json:"verdict"`
	Player     bool     `json:"player"`
	Marks      []string `json:"marks"`
	HeardShade int      `json:"heardShade"`
}

const readCallPage = `(() => {
  const text = el => el ? el.textContent.trim() : "";
  // What a sighted reader sees: the screen reader's own words left out.
  const seen = el => { const c = el.cloneNode(true); c.querySelectorAll(".visually-hidden").forEach(h => h.remove()); return c.textContent.trim(); };
  return {
    turns: [...document.querySelectorAll("svg.waterfall g.wf-turn")].map(g => ({
      head: text(g.querySelector(".wf-head")),
      bars: [...g.querySelectorAll("g.wf-bar")].map(b => ({kind: [...b.classList].find(c => c !== "wf-bar"), title: text(b.querySelector("title"))})),
    })),
    cutOff: [...document.querySelectorAll("li.line-agent")].filter(li => li.querySelector(".heard")).map(li => ({
      heard: text(li.querySelector(".heard")),
      unheard: li.querySelector(".unheard") ? seen(li.querySelector(".unheard")) : "",
    })),
    verdict: text(document.querySelector("section.verdict")),
    player: !!document.getElementById("player"),
    marks: [...document.querySelectorAll("#wave .wave-mark")].map(m => [...m.classList].find(c => c.startsWith("mark-"))),
    heardShade: document.querySelectorAll("#wave .wave-heard").length,
  };
})()`

// barFigure reads a waterfall bar's tooltip: "Turn 2, agent first token: 312 ms".
var barFigure = regexp.MustCompile(`^Turn (\d+), [^:]+: ([0-9.]+) ms$`)

// checkCallPage: call A's page draws the journal's figures, splits the cut-off reply into
// what the store says was heard and the rest, gives the verdict, and plays the recording.
func checkCallPage(ctx context.Context, t *testing.T, browser context.Context, base string, st store.Store, callA store.Call, events []obs.Event) {
	t.Helper()
	if err := chromedp.Do(browser, chromedp.Navigate(base+"/dashboard/calls/"+string(callA.ID)), chromedp.WaitVisible("svg.waterfall")); err != nil {
		t.Fatalf("open call A's page: %v", err)
	}
	view := evaluate[callPageView](t, browser, readCallPage)

	turns := obs.Turns(events)
	if len(turns) != 3 || !turns[1].Interrupted {
		t.Fatalf("call A's journal has turns %+v, want three, the second cut off", turns)
	}
	if len(view.Turns) != len(turns) {
		t.Fatalf("the waterfall draws %d turns, the journal has %d", len(view.Turns), len(turns))
	}
	journalFigure := map[string]func(obs.TurnSummary) float64{
		"wf-endpoint": func(s obs.TurnSummary) float64 { return s.EndpointMS },
		"wf-agent":    func(s obs.TurnSummary) float64 { return s.AgentTTFTMS },
		"wf-tts":      func(s obs.TurnSummary) float64 { return s.TTSTTFBMS },
		"wf-response": func(s obs.TurnSummary) float64 { return s.ResponseMS },
		"wf-filler":   func(s obs.TurnSummary) float64 { return s.FillerMS },
	}
	for i, turn := range turns {
		drawn := view.Turns[i]
		if !strings.HasPrefix(drawn.Head, fmt.Sprintf("Turn %d: ", turn.Turn)) {
			t.Errorf("waterfall group %d is headed %q, want turn %d", i, drawn.Head, turn.Turn)
		}
		kinds := map[string]bool{}
		for _, bar := range drawn.Bars {
			kinds[bar.Kind] = true
			m := barFigure.FindStringSubmatch(bar.Title)
			pick, known := journalFigure[bar.Kind]
			if m == nil || !known || m[1] != strconv.Itoa(turn.Turn) {
				t.Errorf("turn %d: a bar %s titled %q", turn.Turn, bar.Kind, bar.Title)
				continue
			}
			// The page rounds to a tenth of a millisecond below 100 ms, to a millisecond above.
			tolerance := 0.05
			if pick(turn) >= 100 {
				tolerance = 0.5
			}
			if shown, _ := strconv.ParseFloat(m[2], 64); math.Abs(shown-pick(turn)) > tolerance+1e-9 {
				t.Errorf("turn %d: the page shows %s %s, the journal says %.2f ms", turn.Turn, bar.Kind, m[2], pick(turn))
			}
		}
		for _, kind := range []string{"wf-endpoint", "wf-agent", "wf-tts", "wf-response"} {
			if !kinds[kind] && journalFigure[kind](turn) >= 0 {
				t.Errorf("turn %d: no %s bar, though the journal measured it", turn.Turn, kind)
			}
		}
	}

	heard, _ := interruptedLine(ctx, st, callA.ID)
	if len(view.CutOff) != 1 {
		t.Fatalf("the page shows %d cut-off replies, want 1: %+v", len(view.CutOff), view.CutOff)
	}
	if cut := view.CutOff[0]; cut.Heard != strings.TrimSpace(heard.Text) || cut.Heard == "" || cut.Unheard == "" || cut.Heard+" "+cut.Unheard != menuReply {
		t.Errorf("the cut-off reply shows heard %q and unheard %q; the store says the caller heard %q of %q", cut.Heard, cut.Unheard, heard.Text, menuReply)
	}
	if verdict := obs.Diagnose(events); !strings.Contains(view.Verdict, verdict.Problem) {
		t.Errorf("the page's diagnosis %q lacks the verdict %q", view.Verdict, verdict.Problem)
	}

	// The waveform marks each caller turn, each reply and the barge-in, and shades what
	// the caller heard of the cut-off reply.
	count := func(class string) (n int) {
		for _, m := range view.Marks {
			if m == class {
				n++
			}
		}
		return n
	}
	commits, barges := 0, 0
	for _, e := range events {
		commits += btoi(e.Type == obs.TurnCommit)
		barges += btoi(e.Type == obs.BargeIn)
	}
	if !view.Player || count("mark-turn") != commits || count("mark-barge") != barges || barges != 1 ||
		count("mark-reply") < len(turns) || view.HeardShade != 1 {
		t.Errorf("recording: player %v, marks %q, %d heard parts shaded; the journal has %d commits, %d barge-ins, %d turns",
			view.Player, view.Marks, view.HeardShade, commits, barges, len(turns))
	}
	pagetest.CheckAccessibility(t, browser, "dashboard-call")

	// Played: the audio advances without a media error, and the playhead follows it.
	if failed := evaluate[string](t, browser, `document.getElementById("player").play().then(() => "", e => String(e))`, chromedp.EvalAwaitPromise); failed != "" {
		t.Fatalf("the recording would not play: %s", failed)
	}
	playing, err := chromedp.Run(browser, chromedp.Poll[string](`(() => {
  const a = document.getElementById("player");
  if (a.error) return "media error " + a.error.code + ": " + a.error.message;
  return a.currentTime > 0.5 && Number(document.getElementById("playhead").getAttribute("x1")) > 0 && "playing";
})()`))
	if err != nil || playing != "playing" {
		t.Errorf("the recording did not play past 0.5 s with its playhead moving: %q %v", playing, err)
	}
}

// liveStates records, in the page, each state the element shows, in order.
const liveStates = `(() => {
  const el = document.querySelector(%q);
  window.seenStates = [el.textContent.trim()];
  new MutationObserver(() => {
    const s = el.textContent.trim();
    if (window.seenStates[window.seenStates.length - 1] !== s) window.seenStates.push(s);
  }).observe(el, {childList: true, characterData: true, subtree: true});
  return true;
})()`

// watchLiveCall: with call B's page and the live list open, B's caller speaks; both pages
// show the words, then the reply, and the turn's states as they pass; B hangs up and both
// show it gone.
func watchLiveCall(ctx context.Context, t *testing.T, callTab context.Context, base string, phoneB *twiliocaller.Call, idB voice.CallID) {
	t.Helper()
	if err := chromedp.Do(callTab, chromedp.Navigate(base+"/dashboard/calls/"+string(idB)), chromedp.WaitVisible("#live-lines")); err != nil {
		t.Fatalf("open call B's page: %v", err)
	}
	listTab, stopList := chromedp.NewContext(callTab)
	defer stopList()
	row := fmt.Sprintf(`tr[data-call=%q]`, idB)
	if err := chromedp.Do(listTab, chromedp.Navigate(base+"/dashboard/live"), chromedp.WaitVisible(row)); err != nil {
		t.Fatalf("open the live list: %v", err)
	}
	// Judged now, a call whose caller has not spoken yet would read as broken.
	if judged := evaluate[bool](t, callTab, `!!document.querySelector("section.verdict") || !document.getElementById("diagnosis-later")`); judged {
		t.Errorf("call B's page diagnoses the call while it runs")
	}
	said := dashboardScript[0]
	if text := evaluate[string](t, callTab, `document.body.textContent`); strings.Contains(text, said) {
		t.Fatalf("call B's page shows %q before the caller said it", said)
	}
	evaluate[bool](t, callTab, fmt.Sprintf(liveStates, "#live-state"))
	evaluate[bool](t, listTab, fmt.Sprintf(liveStates, row+" .state"))

	says(t, ctx, phoneB, 1200*time.Millisecond, 4)
	// The call's page: the caller's words, then the reply, and the turn back to listening.
	type liveLine struct{ Who, Text string }
	type livePage struct {
		Lines  []liveLine
		States []string
	}
	page, err := chromedp.Run(callTab, chromedp.Poll[livePage](fmt.Sprintf(`(() => {
  const lines = [...document.querySelectorAll("#live-lines li")].map(li => ({Who: li.querySelector(".who").textContent, Text: li.querySelector(".text").textContent}));
  const caller = lines.findIndex(l => l.Who === "Caller" && l.Text.includes(%q));
  const reply = lines.findIndex((l, i) => i > caller && l.Who === "Agent" && l.Text !== "");
  return caller >= 0 && reply > caller && document.getElementById("live-state").textContent === "listening" && {Lines: lines, States: window.seenStates};
})()`, said), onATimer))
	if err != nil {
		t.Fatalf("call B's page never showed the caller's words, the reply, and the turn over: %v\n%s", err, evaluate[string](t, callTab, `document.getElementById("live-call").innerText`))
	}
	if !inOrder(page.States, "caller speaking", "thinking", "speaking", "listening") {
		t.Errorf("call B's page showed the states %q, want the caller speaking, thinking, speaking, listening", page.States)
	}
	pagetest.CheckAccessibility(t, callTab, "dashboard-live-call")

	// The live list: the same turn, in B's row.
	type liveRow struct {
		Caller, Agent string
		States        []string
	}
	got, err := chromedp.Run(listTab, chromedp.Poll[liveRow](fmt.Sprintf(`(() => {
  const tr = document.querySelector(%q);
  const r = {Caller: tr.querySelector(".said-caller").textContent, Agent: tr.querySelector(".said-agent").textContent, States: window.seenStates};
  return r.Agent !== "" && tr.querySelector(".state").textContent === "listening" && r;
})()`, row), onATimer))
	if err != nil || got.Caller != said || !inOrder(got.States, "thinking", "speaking", "listening") {
		t.Errorf("the live list's row for call B: %+v (%v), want %q said, a reply, and the states passing", got, err, said)
	}
	pagetest.CheckAccessibility(t, listTab, "dashboard-live")

	hangUp(t, phoneB)
	if _, err := chromedp.Run(callTab, chromedp.Poll[bool](`document.getElementById("live-state").textContent === "ended"`, onATimer)); err != nil {
		t.Errorf("call B's page does not show the call ended: %v", err)
	}
	if _, err := chromedp.Run(listTab, chromedp.Poll[bool](fmt.Sprintf(`!document.querySelector(%q) && !document.getElementById("live-empty").hidden`, row), onATimer)); err != nil {
		t.Errorf("call B stays on the live list after it ended: %v", err)
	}
}

// onATimer polls the live pages on a timer: of the two tabs open at once one is not in
// front, and a hidden page may get no animation frames, which chromedp polls on by default.
var onATimer = chromedp.WithPollingInterval(50 * time.Millisecond)

// inOrder reports whether want appear in seen in this order, others between them.
func inOrder(seen []string, want ...string) bool {
	for _, s := range seen {
		if len(want) > 0 && s == want[0] {
			want = want[1:]
		}
	}
	return len(want) == 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// evaluate runs expression in the page and decodes its value, failing t if it cannot.
func evaluate[T any](t *testing.T, browser context.Context, expression string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	v, err := chromedp.Run(browser, chromedp.Evaluate[T](expression, opts...))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	return v
}
