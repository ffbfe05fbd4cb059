package dashboard

import (
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

const hostile = `<script>alert("x")</script>'"&`

func TestCallsFiltersReachTheSource(t *testing.T) {
	h := newHarness(t, someCalls())
	c := h.signIn(t, adminToken)
	q := url.Values{"since": {"2026-05-01"}, "until": {"2026-05-05"}, "outcome": {"caller_hangup"}, "carrier": {"twilio"},
		"q": {"opening hours"}, "live": {"1"}, "broken": {"1"}}
	resp, body := h.get(t, c, "/dashboard?"+q.Encode())
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s\n%s", resp.Status, body)
	}
	got := h.src.lastCalls
	want := store.ListCalls{Since: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), Before: time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC),
		Outcome: "caller_hangup", Carrier: "twilio", Text: "opening hours", Live: true, Broken: true, Limit: callsPerPage + 1}
	if got != want {
		t.Errorf("filter\n got %+v\nwant %+v", got, want)
	}
	// The form shows the filter back.
	for _, s := range []string{`value="2026-05-01"`, `value="2026-05-05"`, `value="opening hours"`, `id="live" name="live" type="checkbox" value="1" checked`} {
		if !strings.Contains(body, s) {
			t.Errorf("the form lacks %s", s)
		}
	}
	for _, bad := range []string{"since=yesterday", "until=2026-13-01", "before=noon", "q=" + strings.Repeat("a", 300)} {
		if resp, _ := h.get(t, c, "/dashboard?"+bad); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s", bad, resp.Status)
		}
	}
}

var olderLink = regexp.MustCompile(`href="(/dashboard\?[^"]+)" rel="next"`)
var callLink = regexp.MustCompile(`href="/dashboard/calls/([^"]+)"`)

func TestCallsPaging(t *testing.T) {
	src := &fakeSource{}
	at := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	for i := range 2*callsPerPage + 7 {
		// Pairs start at the same instant: the keyset's id decides between them.
		src.calls = append(src.calls, store.Call{ID: voice.CallID(fmt.Sprintf("c_%03d", i)), Carrier: "twilio", Direction: voice.Inbound,
			StartedAt: at.Add(time.Duration(i/2) * time.Minute), EndedAt: at.Add(time.Hour), Outcome: "caller_hangup"})
	}
	h := newHarness(t, src)
	c := h.signIn(t, viewerToken)
	seen := map[string]bool{}
	path, pages := "/dashboard?outcome=caller_hangup", 0
	for path != "" {
		pages++
		_, body := h.get(t, c, path)
		for _, m := range callLink.FindAllStringSubmatch(body, -1) {
			if seen[m[1]] {
				t.Fatalf("call %s on two pages", m[1])
			}
			seen[m[1]] = true
		}
		path = ""
		if m := olderLink.FindStringSubmatch(body); m != nil {
			path = html.UnescapeString(m[1])
			if !strings.Contains(path, "outcome=caller_hangup") || !strings.Contains(path, "before_id=") {
				t.Fatalf("the older link drops the filter or the keyset: %s", path)
			}
		}
	}
	if len(seen) != len(src.calls) || pages != 3 {
		t.Errorf("%d pages showed %d of %d calls", pages, len(seen), len(src.calls))
	}
}

// hostileSource holds hostile text wherever a page shows store text.
func hostileSource(journal string) *fakeSource {
	at := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	id := voice.CallID("c_bad")
	return &fakeSource{
		calls: []store.Call{{ID: id, Carrier: hostile, Direction: voice.Inbound, From: hostile, CallerHash: hostile, Agent: hostile,
			Node: hostile, StartedAt: at, EndedAt: at.Add(time.Minute), Outcome: hostile, Journal: journal,
			Summary: store.CallSummary{Turns: 1, Stage: "agent", Problem: hostile}}},
		lines:    map[voice.CallID][]store.TranscriptLine{id: {{CallID: id, Turn: 1, Role: voice.RoleUser, Text: hostile, At: at.Add(time.Second)}}},
		sessions: []store.Session{{CallerHash: hostile, SessionKey: hostile, FirstSeen: at, LastSeen: at, Calls: 2, LastCall: id}},
		jobs:     []store.Job{{ID: 7, Kind: "transfer", State: store.JobFailed, Payload: []byte(`{"to":"` + strings.ReplaceAll(hostile, `"`, `\"`) + `"}`), Error: hostile, Batch: hostile}},
		batches:  []store.Batch{{Name: hostile, Pending: 1, Completed: 3}},
	}
}

func TestPagesEscapeHostileText(t *testing.T) {
	h := newHarness(t, hostileSource(filepath.Join("testdata", "hostile.jsonl")))
	writeJournal(t, "testdata/hostile.jsonl", hostileJournal())
	for _, token := range []string{adminToken, viewerToken} {
		c := h.signIn(t, token)
		for _, path := range []string{"/dashboard", "/dashboard/calls/c_bad", "/dashboard/jobs", "/dashboard/sessions", "/dashboard/live"} {
			resp, body := h.get(t, c, path)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %s\n%s", path, resp.Status, body)
			}
			if strings.Contains(body, "<script>alert") || strings.Contains(body, `"x")`) {
				t.Errorf("%s shows hostile text unescaped", path)
			}
			if path != "/dashboard/live" && !strings.Contains(body, "&lt;script&gt;alert(") {
				t.Errorf("%s does not show the hostile text at all", path)
			}
			if strings.Count(body, "<script") != 1 { // the page's own script tag only
				t.Errorf("%s has %d script tags", path, strings.Count(body, "<script"))
			}
		}
	}
}

// hostileJournal is a short call whose every text is hostile.
func hostileJournal() []obs.Event {
	t0 := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	at := func(ms int64, e obs.Event) obs.Event {
		e.TS, e.MS = t0.Add(time.Duration(ms)*time.Millisecond), ms
		return e
	}
	return []obs.Event{
		at(0, obs.Event{Type: obs.CallStart, Carrier: hostile, CallerHash: hostile, Agent: hostile}),
		at(500, obs.Event{Type: obs.VADSpeechEnd}),
		at(600, obs.Event{Type: obs.STTFinal, Text: hostile}),
		at(600, obs.Event{Type: obs.TurnCommit, Turn: 1, Text: hostile}),
		at(600, obs.Event{Type: obs.AgentRequest, Turn: 1}),
		at(900, obs.Event{Type: obs.AgentError, Turn: 1, Kind: hostile, Message: hostile}),
		at(950, obs.Event{Type: obs.TTSRequest, Turn: 1, Text: hostile}),
		at(990, obs.Event{Type: obs.DTMF, Digit: hostile}),
		at(1000, obs.Event{Type: obs.TransferFailed, Name: hostile, Message: hostile}),
		at(2000, obs.Event{Type: obs.CallEnd, Reason: hostile}),
	}
}

func writeJournal(t *testing.T, path string, events []obs.Event) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(path) })
	j := obs.NewWriter(f, events[0].TS)
	for _, e := range events {
		j.Record(e.TS, e)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCallPageTellsHeardFromUnheard(t *testing.T) {
	journal := filepath.Join("testdata", "bargein.jsonl")
	src := &fakeSource{calls: []store.Call{{ID: "c_b", Carrier: "twilio", Direction: voice.Inbound, From: "+15550102000",
		CallerHash: "ch_alice", StartedAt: time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC), EndedAt: time.Date(2026, 5, 5, 10, 0, 12, 0, time.UTC),
		Outcome: "caller_hangup", Journal: journal}}}
	h := newHarness(t, src)
	c := h.signIn(t, viewerToken)
	resp, body := h.get(t, c, "/dashboard/calls/c_b")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s\n%s", resp.Status, body)
	}
	heard := `<span class="heard">You said: hello there, what are your opening hours.</span>`
	unheard := `We open at nine and close at &lt;b&gt;&#34;five&#34;&lt;/b&gt;.</del>`
	if !strings.Contains(body, heard) || !strings.Contains(body, unheard) {
		t.Errorf("the cut-off reply is not split into heard and unheard parts")
	}
	for _, s := range []string{"One moment &lt;script&gt;", "The caller pressed 5", "taken for the agent&#39;s echo", "The call ended: caller_hangup",
		"Diagnosis", "<details>", "barge_in.pending", "caller_hangup"} {
		if !strings.Contains(body, s) {
			t.Errorf("the call page lacks %q", s)
		}
	}
	if strings.Contains(body, "5550102000") {
		t.Errorf("a viewer sees the caller's number")
	}
	// The waterfall carries every turn's figures, as obs computes them.
	events, err := obs.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	svg := body[strings.Index(body, `<svg class="waterfall"`):]
	svg = svg[:strings.Index(svg, "</svg>")]
	for _, turn := range obs.Turns(events) {
		for name, v := range map[string]float64{"endpoint": turn.EndpointMS, "agent": turn.AgentTTFTMS, "tts": turn.TTSTTFBMS,
			"response": turn.ResponseMS, "filler": turn.FillerMS} {
			if v < 0 {
				continue
			}
			if !strings.Contains(svg, ">"+formatMS(v)+"</text>") {
				t.Errorf("turn %d: the chart lacks its %s figure %s", turn.Turn, name, formatMS(v))
			}
		}
	}
	if !strings.Contains(svg, "<title id=\"wf-title\">") || !strings.Contains(svg, "<desc") || !strings.Contains(svg, "wf-filler") {
		t.Errorf("the chart lacks its title, description or the filler's bar")
	}
	if !strings.Contains(body, `<th scope="row">1 (cut off)</th>`) {
		t.Errorf("the turns table does not mark the cut-off turn")
	}
}

// TestCallPageJudgesOnlyEndedCalls: a running call's page gives no diagnosis nor stage
// statuses (a caller who has not spoken yet would read as a broken VAD); once the call has
// ended, the same journal is judged.
func TestCallPageJudgesOnlyEndedCalls(t *testing.T) {
	healthy, err := os.ReadFile(filepath.Join("testdata", "healthy.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(healthy), "\n")
	journal := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(journal, []byte(lines[0]+lines[1]), 0o600); err != nil { // call.start, media.first_in
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	src := &fakeSource{calls: []store.Call{{ID: "c_now", Direction: voice.Inbound, StartedAt: at, Journal: journal}}}
	h := newHarness(t, src)
	c := h.signIn(t, adminToken)
	_, running := h.get(t, c, "/dashboard/calls/c_now")
	src.calls[0].EndedAt, src.calls[0].Outcome = at.Add(5*time.Second), "caller_hangup"
	_, ended := h.get(t, c, "/dashboard/calls/c_now")
	for _, judged := range []string{`id="verdict-h"`, `id="stages-h"`} {
		if strings.Contains(running, judged) {
			t.Errorf("the running call's page has %s", judged)
		}
		if !strings.Contains(ended, judged) {
			t.Errorf("the ended call's page lacks %s", judged)
		}
	}
	if !strings.Contains(running, `id="diagnosis-later"`) || strings.Contains(ended, `id="diagnosis-later"`) {
		t.Errorf("only the running call's page should say its diagnosis comes when it ends")
	}
}

func TestCallPageFallsBackToTheStoredTranscript(t *testing.T) {
	at := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	src := &fakeSource{calls: []store.Call{{ID: "c_far", Direction: voice.Inbound, StartedAt: at, EndedAt: at.Add(time.Minute),
		Journal: filepath.Join(t.TempDir(), "elsewhere.jsonl")}},
		lines: map[voice.CallID][]store.TranscriptLine{"c_far": {
			{Turn: 1, Role: voice.RoleUser, Text: "are you open", At: at.Add(3 * time.Second)},
			{Turn: 1, Role: voice.RoleAssistant, Text: "We are", At: at.Add(4 * time.Second), Interrupted: true}}}}
	h := newHarness(t, src)
	_, body := h.get(t, h.signIn(t, adminToken), "/dashboard/calls/c_far")
	for _, s := range []string{"not on this node", "are you open", `<span class="heard">We are</span>`, "0:03.0"} {
		if !strings.Contains(body, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	if resp, _ := h.get(t, h.signIn(t, adminToken), "/dashboard/calls/c_none"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown call: %s", resp.Status)
	}
	if resp, _ := h.get(t, h.signIn(t, adminToken), "/dashboard/calls/"+url.PathEscape("c\"x")); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a call id no call has: %s", resp.Status)
	}
	h.src.err = errors.New("database is down")
	if resp, body := h.get(t, h.signIn(t, adminToken), "/dashboard"); resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(body, "database is down") {
		t.Errorf("a failing store: %s", resp.Status)
	}
}

// fakeRecordings serves one recording, of call c_b.
type fakeRecordings struct{ wav []byte }

type readSeekCloser struct{ *strings.Reader }

func (readSeekCloser) Close() error { return nil }

func (f fakeRecordings) Open(c store.Call) (io.ReadSeekCloser, time.Time, error) {
	if c.ID != "c_b" {
		return nil, time.Time{}, fmt.Errorf("recording of %s: %w", c.ID, os.ErrNotExist)
	}
	return readSeekCloser{strings.NewReader(string(f.wav))}, time.Date(2026, 5, 5, 10, 0, 12, 0, time.UTC), nil
}

func (f fakeRecordings) Waveform(c store.Call, buckets int) (Waveform, error) {
	if c.ID != "c_b" {
		return Waveform{}, fmt.Errorf("recording of %s: %w", c.ID, os.ErrNotExist)
	}
	w := Waveform{Duration: 12 * time.Second, Caller: make([]float32, buckets), Agent: make([]float32, buckets)}
	for i := range buckets {
		w.Caller[i], w.Agent[i] = float32(i%10)/10, float32(i%7)/7
	}
	return w, nil
}

func TestRecordingPlayerAndRanges(t *testing.T) {
	wav := "RIFF" + strings.Repeat("\x01\x02", 5000)
	src := &fakeSource{calls: []store.Call{
		{ID: "c_b", Direction: voice.Inbound, StartedAt: time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC), Journal: filepath.Join("testdata", "bargein.jsonl")},
		{ID: "c_plain", Direction: voice.Inbound, StartedAt: time.Date(2026, 5, 5, 9, 0, 0, 0, time.UTC)}}}
	h := newHarness(t, src, func(o *Options) { o.Recordings = fakeRecordings{wav: []byte(wav)} })
	c := h.signIn(t, viewerToken)
	_, body := h.get(t, c, "/dashboard/calls/c_b")
	for _, s := range []string{`<audio id="player" controls`, `src="/dashboard/calls/c_b/recording"`, `<svg class="wave"`,
		`data-seek-ms="4800"`, `class="wave-heard"`, `data-seek-ms="3100"`, "the caller barged in after hearing"} {
		if !strings.Contains(body, s) {
			t.Errorf("the player lacks %q", s)
		}
	}
	if _, body := h.get(t, c, "/dashboard/calls/c_plain"); strings.Contains(body, "<audio") {
		t.Errorf("a call without a recording shows a player")
	}
	resp, got := h.get(t, c, "/dashboard/calls/c_b/recording", "Range", "bytes=4-9")
	if resp.StatusCode != http.StatusPartialContent || got != wav[4:10] || resp.Header.Get("Content-Type") != "audio/wav" ||
		resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 4-9/%d", len(wav)) {
		t.Errorf("a range of the recording: %s %q %v", resp.Status, got, resp.Header)
	}
	if resp, got := h.get(t, c, "/dashboard/calls/c_b/recording"); resp.StatusCode != http.StatusOK || got != wav {
		t.Errorf("the whole recording: %s, %d bytes", resp.Status, len(got))
	}
	if resp, _ := h.get(t, c, "/dashboard/calls/c_plain/recording"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("no recording: %s", resp.Status)
	}
	if resp, _ := h.get(t, browser(t), "/dashboard/calls/c_b/recording", "Accept", "audio/*"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the recording without signing in: %s", resp.Status)
	}
}

func TestJobsPageRedactsNumbersForViewers(t *testing.T) {
	at := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	src := &fakeSource{batches: []store.Batch{{Name: "spring-list", Pending: 2, Running: 1, Completed: 5, Failed: 2, First: at, Last: at.Add(time.Hour)}}}
	for i := 1; i <= jobsPerPage+5; i++ {
		kind := "transfer"
		payload := `{"call_id":"c_in","to":"sip:desk@example.com"}`
		errMsg := ""
		if i%2 == 0 {
			kind, payload, errMsg = "outbound_call", `{"to":"+15550104000","deliver":true}`, "the carrier says +15550104000 is unreachable"
		}
		src.jobs = append(src.jobs, store.Job{ID: int64(i), Kind: kind, State: store.JobFailed, Payload: []byte(payload), Error: errMsg,
			Attempts: 3, MaxAttempts: 3, RunAt: at, CreatedAt: at, UpdatedAt: at})
	}
	h := newHarness(t, src)
	_, body := h.get(t, h.signIn(t, viewerToken), "/dashboard/jobs")
	if strings.Contains(body, "5550104000") || !strings.Contains(body, "caller "+fakeHash("+15550104000")+" is unreachable") ||
		!strings.Contains(body, fakeHash("+15550104000")) || !strings.Contains(body, "(delivery)") {
		t.Errorf("a viewer's jobs page does not replace the number with its caller hash")
	}
	if !strings.Contains(body, "sip:desk@example.com") {
		t.Errorf("transfer targets are not shown")
	}
	if !strings.Contains(body, `<progress max="10" value="7">70%</progress>`) || !strings.Contains(body, "spring-list") {
		t.Errorf("the batch's progress is missing")
	}
	if got := h.src.lastJobs; !got.Newest || got.Limit != jobsPerPage+1 || got.Before != 0 {
		t.Errorf("jobs asked with %+v", got)
	}
	m := regexp.MustCompile(`href="(/dashboard/jobs\?[^"]+)" rel="next"`).FindStringSubmatch(body)
	if m == nil || html.UnescapeString(m[1]) != "/dashboard/jobs?before=6" {
		t.Fatalf("older jobs link: %v", m)
	}
	_, admin := h.get(t, h.signIn(t, adminToken), "/dashboard/jobs?kind=outbound_call&before=6")
	if got := h.src.lastJobs; got.Kind != "outbound_call" || got.Before != 6 || !got.Newest {
		t.Errorf("jobs asked with %+v", got)
	}
	if !strings.Contains(admin, "5550104000") || strings.Contains(admin, "sip:desk") {
		t.Errorf("the admin's filtered page: numbers or kinds wrong")
	}
	if resp, _ := h.get(t, h.signIn(t, adminToken), "/dashboard/jobs?kind=everything"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown kind: %s", resp.Status)
	}
}

func TestSessionsPaging(t *testing.T) {
	src := &fakeSource{}
	at := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	for i := range sessionsPerPage + 3 {
		src.sessions = append(src.sessions, store.Session{CallerHash: fmt.Sprintf("ch_%03d", i), SessionKey: fmt.Sprintf("handset:ch_%03d", i),
			FirstSeen: at, LastSeen: at.Add(time.Duration(i/3) * time.Minute), Calls: i + 1, LastCall: voice.CallID(fmt.Sprintf("c_%03d", i))})
	}
	h := newHarness(t, src)
	c := h.signIn(t, viewerToken)
	_, body := h.get(t, c, "/dashboard/sessions")
	m := regexp.MustCompile(`href="(/dashboard/sessions\?[^"]+)" rel="next"`).FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, `href="/dashboard/calls/c_052"`) {
		t.Fatalf("first page: older link %v", m)
	}
	_, body = h.get(t, c, html.UnescapeString(m[1]))
	if got := h.src.lastSessions; got.Before.IsZero() || got.BeforeHash == "" {
		t.Errorf("the older page asked %+v", got)
	}
	if n := strings.Count(body, "<tr><td class=\"mono\">"); n != 3 || strings.Contains(body, "rel=\"next\"") {
		t.Errorf("the last page shows %d sessions", n)
	}
}

// TestListsCountInWords: a list's caption says "1 call", not "1 calls".
func TestListsCountInWords(t *testing.T) {
	src := someCalls()
	src.sessions = []store.Session{{CallerHash: "ch_alice", Calls: 1}}
	h := newHarness(t, src)
	c := h.signIn(t, adminToken)
	for path, want := range map[string]string{
		"/dashboard":          "3 calls, newest first",
		"/dashboard/sessions": "1 caller, most recently seen first",
	} {
		if _, body := h.get(t, c, path); !strings.Contains(body, want) {
			t.Errorf("%s lacks %q", path, want)
		}
	}
	src.calls = src.calls[:1]
	if _, body := h.get(t, c, "/dashboard"); !strings.Contains(body, "1 call, newest first") {
		t.Errorf("one call is not counted as one call")
	}
}
