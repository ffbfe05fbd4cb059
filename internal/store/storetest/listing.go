package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// What the dashboard lists by: call summaries, every call filter alone and combined,
// keyset pages across calls started at the same instant, transcript search, sessions
// paging, batches and jobs newest first.

func testCallSummary(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	must(t, "StartCall", s.StartCall(ctx, sampleCall("c1", at(0))))
	got, err := s.Call(ctx, "c1")
	must(t, "Call", err)
	if got.Summary != (store.CallSummary{}) {
		t.Errorf("a new call has summary %+v", got.Summary)
	}
	want := store.CallSummary{Turns: 7, Interrupted: 2, Stage: "agent", Problem: "the agent answered 2 of 7 turns with an error"}
	must(t, "SummarizeCall", s.SummarizeCall(ctx, "c1", want))
	got, err = s.Call(ctx, "c1")
	must(t, "Call", err)
	if got.Summary != want {
		t.Errorf("Call().Summary = %+v, want %+v", got.Summary, want)
	}
	listed, err := s.Calls(ctx, store.ListCalls{})
	must(t, "Calls", err)
	if len(listed) != 1 || listed[0].Summary != want {
		t.Errorf("Calls() = %+v, want the summary %+v", listed, want)
	}
	must(t, "SummarizeCall again", s.SummarizeCall(ctx, "c1", store.CallSummary{Turns: 8}))
	if got, _ = s.Call(ctx, "c1"); got.Summary != (store.CallSummary{Turns: 8}) {
		t.Errorf("a second summary did not replace the first: %+v", got.Summary)
	}
	wantErr(t, "SummarizeCall unknown", s.SummarizeCall(ctx, "nope", want), store.ErrNotFound)
}

// filterFixture is a dozen calls across carriers, outcomes, callers and broken stages,
// several started at the same instant.
func filterFixture(t *testing.T, s store.Store) []store.Call {
	ctx := ctxOf(t)
	carriers := []string{"twilio", "browser", "telnyx"}
	outcomes := []string{"caller_hangup", "agent_hangup", ""}
	var calls []store.Call
	for i := range 12 {
		c := sampleCall(fmt.Sprintf("c%02d", i), at(time.Duration(i/3)*time.Minute)) // three per minute
		c.Carrier = carriers[i%3]
		c.CallerHash = []string{"hash-a", "hash-b"}[i%2]
		c.Outcome = outcomes[(i/2)%3]
		if c.Outcome != "" {
			c.EndedAt = c.StartedAt.Add(time.Minute)
		}
		if i%4 == 1 {
			c.Summary = store.CallSummary{Turns: 3, Stage: "stt", Problem: "no words heard"}
		}
		must(t, "StartCall", s.StartCall(ctx, c))
		calls = append(calls, c)
	}
	return calls
}

// expect is what Calls must return for f (Text aside): the reference filter, newest first.
func expect(calls []store.Call, f store.ListCalls) []string {
	var out []store.Call
	for _, c := range calls {
		switch {
		case f.CallerHash != "" && c.CallerHash != f.CallerHash,
			!f.Before.IsZero() && f.BeforeID == "" && !c.StartedAt.Before(f.Before),
			!f.Before.IsZero() && f.BeforeID != "" && !(c.StartedAt.Before(f.Before) || c.StartedAt.Equal(f.Before) && c.ID < f.BeforeID),
			!f.Since.IsZero() && c.StartedAt.Before(f.Since),
			f.Outcome != "" && c.Outcome != f.Outcome,
			f.Carrier != "" && c.Carrier != f.Carrier,
			f.Live && !c.EndedAt.IsZero(),
			f.Broken && c.Summary.Stage == "":
			continue
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b store.Call) int {
		if d := b.StartedAt.Compare(a.StartedAt); d != 0 {
			return d
		}
		return strings.Compare(string(b.ID), string(a.ID))
	})
	ids := callIDs(out)
	if n := store.ListLimit(f.Limit, 50); len(ids) > n {
		ids = ids[:n]
	}
	return ids
}

func testCallFilters(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	calls := filterFixture(t, s)
	// A few by hand, so the reference filter is checked too.
	byHand := []struct {
		f    store.ListCalls
		want []string
	}{
		{store.ListCalls{Carrier: "browser", Outcome: "caller_hangup"}, []string{"c07", "c01"}},
		{store.ListCalls{Live: true}, []string{"c11", "c10", "c05", "c04"}},
		{store.ListCalls{Broken: true, CallerHash: "hash-b"}, []string{"c09", "c05", "c01"}},
		{store.ListCalls{Before: at(time.Minute), BeforeID: "c04"}, []string{"c03", "c02", "c01", "c00"}},
	}
	for _, tc := range byHand {
		if d := cmp.Diff(tc.want, expect(calls, tc.f), cmpOpts...); d != "" {
			t.Fatalf("the reference filter is wrong for %+v (-want +got):\n%s", tc.f, d)
		}
	}
	var filters []store.ListCalls
	for _, hash := range []string{"", "hash-a"} {
		for _, since := range []time.Time{{}, at(time.Minute)} {
			for _, outcome := range []string{"", "caller_hangup", "agent_hangup"} {
				for _, carrier := range []string{"", "twilio", "browser"} {
					for _, flags := range []int{0, 1, 2, 3} {
						filters = append(filters, store.ListCalls{CallerHash: hash, Since: since, Outcome: outcome,
							Carrier: carrier, Live: flags&1 != 0, Broken: flags&2 != 0})
					}
				}
			}
		}
	}
	filters = append(filters,
		store.ListCalls{Before: at(2 * time.Minute)},
		store.ListCalls{Before: at(2 * time.Minute), BeforeID: "c07"},
		store.ListCalls{Before: at(2 * time.Minute), BeforeID: "c07", Carrier: "twilio"},
		store.ListCalls{Before: at(3 * time.Minute), Since: at(time.Minute), Limit: 2},
		store.ListCalls{Outcome: "no_such_outcome"},
		store.ListCalls{Carrier: "no_such_carrier", Live: true},
	)
	for _, f := range filters {
		got, err := s.Calls(ctx, f)
		must(t, "Calls", err)
		if d := cmp.Diff(expect(calls, f), callIDs(got), cmpOpts...); d != "" {
			t.Errorf("Calls(%+v) (-want +got):\n%s", f, d)
		}
	}
}

// testCallPagingTies pages through calls many of which started at the same instant: every
// call comes exactly once, in order.
func testCallPagingTies(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	var calls []store.Call
	for i := range 23 {
		c := sampleCall(fmt.Sprintf("c%02d", i), at(time.Duration(i/5)*time.Second)) // five per instant
		c.Carrier = []string{"twilio", "browser"}[i%2]
		must(t, "StartCall", s.StartCall(ctx, c))
		calls = append(calls, c)
	}
	for _, base := range []store.ListCalls{{Limit: 3}, {Limit: 4, Carrier: "browser"}, {Limit: 1, Since: at(time.Second)}} {
		var seen []string
		f := base
		for range 30 {
			page, err := s.Calls(ctx, f)
			must(t, "Calls", err)
			if len(page) > f.Limit {
				t.Fatalf("Calls(%+v) returned %d calls", f, len(page))
			}
			seen = append(seen, callIDs(page)...)
			if len(page) < f.Limit {
				break
			}
			last := page[len(page)-1]
			f.Before, f.BeforeID = last.StartedAt, last.ID
		}
		all := base
		all.Limit = store.MaxListCalls
		if d := cmp.Diff(expect(calls, all), seen, cmpOpts...); d != "" {
			t.Errorf("paging %+v by keyset (-want +got):\n%s", base, d)
		}
	}
}

func testCallListLimitCapped(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	var c []store.Call
	for i := range store.MaxListCalls + 5 {
		c = append(c, sampleCall(fmt.Sprintf("c%04d", i), at(time.Duration(i)*time.Millisecond)))
	}
	for _, call := range c {
		must(t, "StartCall", s.StartCall(ctx, call))
	}
	got, err := s.Calls(ctx, store.ListCalls{Limit: 1 << 30})
	must(t, "Calls", err)
	if len(got) != store.MaxListCalls {
		t.Errorf("Calls(Limit 1<<30) returned %d calls, want at most %d", len(got), store.MaxListCalls)
	}
}

// searchFixture is calls whose transcripts the search tests look in.
func searchFixture(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	lines := map[string][]string{
		"c1": {"Hello, how can I help?", "I would like a Refund for my order"},
		"c2": {"Sure, a refund is on its way"},
		"c3": {"Ordering pizza tonight"},
		"c4": {"Un café crème, s'il vous plaît"},
		"c5": {"the foo is near"},
		"c6": {"foobar nearby", "foo alone"},
		"c7": {"hello there", "general kenobi"},
		"c8": {`He typed "foo* NEAR(- literally`},
		"c9": {manyWords("pa", 100)},
	}
	for i := 1; i <= 9; i++ {
		id := fmt.Sprintf("c%d", i)
		c := sampleCall(id, at(time.Duration(i)*time.Minute))
		c.Carrier = []string{"twilio", "browser"}[i%2]
		must(t, "StartCall", s.StartCall(ctx, c))
		var tl []store.TranscriptLine
		for turn, text := range lines[id] {
			tl = append(tl, store.TranscriptLine{CallID: voice.CallID(id), Turn: turn + 1, Role: voice.RoleUser, Text: text, At: at(time.Duration(i)*time.Minute + time.Second)})
		}
		must(t, "AppendTranscript", s.AppendTranscript(ctx, tl))
	}
}

// manyWords is a line of n words that start with prefix.
func manyWords(prefix string, n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return strings.Join(words, " ")
}

func testCallSearch(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	searchFixture(t, s)
	all := []string{"c9", "c8", "c7", "c6", "c5", "c4", "c3", "c2", "c1"}
	cases := []struct {
		f    store.ListCalls
		want []string
	}{
		{store.ListCalls{Text: "refund"}, []string{"c2", "c1"}},
		{store.ListCalls{Text: "REFUND order"}, []string{"c1"}},       // every word, in one line
		{store.ListCalls{Text: "order refund"}, []string{"c1"}},       // in any order
		{store.ListCalls{Text: "ord"}, []string{"c3", "c1"}},          // the last word a prefix
		{store.ListCalls{Text: "ord pizza"}, nil},                     // only the last word is
		{store.ListCalls{Text: "cafe CREME"}, []string{"c4"}},         // accents and case aside
		{store.ListCalls{Text: "Café"}, []string{"c4"}},               // …both ways
		{store.ListCalls{Text: "un caf"}, []string{"c4"}},             // a prefix of a folded word
		{store.ListCalls{Text: "crè"}, []string{"c4"}},                // a prefix with an accent
		{store.ListCalls{Text: "pa"}, []string{"c9"}},                 // a prefix of many words
		{store.ListCalls{Text: "hello kenobi"}, nil},                  // two lines of one call are not one line
		{store.ListCalls{Text: `"foo* NEAR(-`}, []string{"c8", "c5"}}, // query syntax is plain words
		{store.ListCalls{Text: "-refund"}, []string{"c2", "c1"}},      // not NOT
		{store.ListCalls{Text: "refund OR pizza"}, nil},               // not OR
		{store.ListCalls{Text: "refund", Carrier: "twilio"}, []string{"c2"}},
		{store.ListCalls{Text: "refund", Before: at(2 * time.Minute)}, []string{"c1"}},
		{store.ListCalls{Text: "hello", Limit: 1}, []string{"c7"}},
		{store.ListCalls{Text: "pa", Carrier: "browser"}, []string{"c9"}},
		{store.ListCalls{Text: "pa", Carrier: "twilio"}, nil},
		{store.ListCalls{Text: "nowhere"}, nil},
		{store.ListCalls{Text: ""}, all},
		{store.ListCalls{Text: ` !? "" *:- `}, all}, // no word: no filter
		{store.ListCalls{Text: strings.Repeat("refund ", 10_000)}, []string{"c2", "c1"}},
	}
	for _, tc := range cases {
		got, err := s.Calls(ctx, tc.f)
		if err != nil {
			t.Errorf("Calls(Text %q): %v", voice.Clip(tc.f.Text, 40), err)
			continue
		}
		if d := cmp.Diff(tc.want, callIDs(got), cmpOpts...); d != "" {
			t.Errorf("Calls(Text %q, …) (-want +got):\n%s", voice.Clip(tc.f.Text, 40), d)
		}
	}
}

// testCallSearchCommonWord searches for a word on more lines than a store may look at one
// by one, so the search takes its other path, with the same answers.
func testCallSearchCommonWord(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	var lines []store.TranscriptLine
	var want []string
	for i := range 60 {
		id := fmt.Sprintf("c%02d", i)
		must(t, "StartCall", s.StartCall(ctx, sampleCall(id, at(time.Duration(i/2)*time.Second))))
		word := "hello"
		if i%3 == 0 {
			word = "goodbye"
		} else {
			want = append(want, id)
		}
		for turn := range 60 { // 40 calls × 60 lines: more than either store looks at one by one
			lines = append(lines, store.TranscriptLine{CallID: voice.CallID(id), Turn: turn, Role: voice.RoleAssistant,
				Text: fmt.Sprintf("%s number %d", word, turn), At: at(time.Duration(i) * time.Second)})
		}
	}
	must(t, "AppendTranscript", s.AppendTranscript(ctx, lines))
	slices.Reverse(want)
	var seen []string
	f := store.ListCalls{Text: "Hello numb", Limit: 7}
	for range 20 {
		page, err := s.Calls(ctx, f)
		must(t, "Calls", err)
		seen = append(seen, callIDs(page)...)
		if len(page) < f.Limit {
			break
		}
		f.Before, f.BeforeID = page[len(page)-1].StartedAt, page[len(page)-1].ID
	}
	if d := cmp.Diff(want, seen, cmpOpts...); d != "" {
		t.Errorf("paging a common word's calls (-want +got):\n%s", d)
	}
}

func hashes(ss []store.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.CallerHash
	}
	return out
}

func testSessionsList(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	// h0…h6: two pairs seen at the same instant; h3 seen again last
	seen := []time.Duration{0, time.Minute, time.Minute, 2 * time.Minute, 3 * time.Minute, 3 * time.Minute, 4 * time.Minute}
	for i, d := range seen {
		_, err := s.TouchSession(ctx, fmt.Sprintf("h%d", i), "k", voice.CallID(fmt.Sprintf("c%d", i)), at(d))
		must(t, "TouchSession", err)
	}
	_, err := s.TouchSession(ctx, "h3", "", "c9", at(5*time.Minute))
	must(t, "TouchSession", err)
	want := []string{"h3", "h6", "h5", "h4", "h2", "h1", "h0"}
	var got []string
	f := store.ListSessions{Limit: 2}
	for range 10 {
		page, err := s.Sessions(ctx, f)
		must(t, "Sessions", err)
		got = append(got, hashes(page)...)
		if len(page) < f.Limit {
			break
		}
		f.Before, f.BeforeHash = page[len(page)-1].LastSeen, page[len(page)-1].CallerHash
	}
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Errorf("sessions by keyset pages (-want +got):\n%s", d)
	}
	page, err := s.Sessions(ctx, store.ListSessions{Before: at(3 * time.Minute)})
	must(t, "Sessions", err)
	if d := cmp.Diff([]string{"h2", "h1", "h0"}, hashes(page), cmpOpts...); d != "" {
		t.Errorf("Sessions(Before 3m) (-want +got):\n%s", d)
	}
	top, err := s.Sessions(ctx, store.ListSessions{Limit: 1})
	must(t, "Sessions", err)
	if len(top) != 1 || top[0].CallerHash != "h3" || top[0].Calls != 2 || top[0].LastCall != "c9" || !top[0].LastSeen.Equal(at(5*time.Minute)) {
		t.Errorf("Sessions(Limit 1) = %+v, want h3 seen twice, last at 5m in c9", top)
	}
}

func testBatches(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	none, err := s.Batches(ctx, 0)
	must(t, "Batches", err)
	if len(none) != 0 {
		t.Fatalf("Batches of no jobs = %+v", none)
	}
	var spring, summer []store.Job
	for range 4 {
		spring = append(spring, enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0), Batch: "spring"}))
	}
	for range 2 {
		summer = append(summer, enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0), Batch: "summer"}))
	}
	enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0)}) // in no batch
	// spring: one completed at 1m, one failed at 3m, one running, one pending;
	// summer: one completed at 2m, one pending.
	finish := func(owner string, at time.Time, ok bool) {
		t.Helper()
		j := mustClaim(t, s, owner, time.Hour, at)
		if ok {
			must(t, "Complete", s.Complete(ctx, j.ID, owner, nil, at))
		} else {
			must(t, "Fail", s.Fail(ctx, j.ID, owner, "no answer", time.Time{}, at))
		}
	}
	finish("w", at(time.Minute), true)                              // spring[0]
	finish("w", at(3*time.Minute), false)                           // spring[1]
	mustClaim(t, s, "w", time.Hour, at(0))                          // spring[2] runs
	must(t, "Cancel", s.Cancel(ctx, spring[3].ID, "no one", at(0))) // failed, so summer[0] is claimed next
	_ = mustClaim                                                   // spring[3] failed by Cancel; summer next
	finish("w", at(2*time.Minute), true)                            // summer[0]

	got, err := s.Batches(ctx, 0)
	must(t, "Batches", err)
	span := func(js []store.Job) (first, last time.Time) {
		for i, j := range js {
			j = getJob(t, s, j.ID)
			if i == 0 || j.CreatedAt.Before(first) {
				first = j.CreatedAt
			}
			if j.UpdatedAt.After(last) {
				last = j.UpdatedAt
			}
		}
		return first, last
	}
	sf, sl := span(spring)
	uf, ul := span(summer)
	want := []store.Batch{
		{Name: "spring", Running: 1, Completed: 1, Failed: 2, First: sf, Last: sl},
		{Name: "summer", Pending: 1, Completed: 1, First: uf, Last: ul},
	}
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Errorf("Batches (-want +got):\n%s", d)
	}
	one, err := s.Batches(ctx, 1)
	must(t, "Batches", err)
	if len(one) != 1 || one[0].Name != "spring" {
		t.Errorf("Batches(1) = %+v, want spring, the most recently active", one)
	}
}

func testJobsNewest(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	var ids []int64
	for i := range 5 {
		ids = append(ids, enqueue(t, s, store.NewJob{Kind: []string{"deliver", "outbound_call"}[i%2], RunAt: at(0)}).ID)
	}
	newest := slices.Clone(ids)
	slices.Reverse(newest)
	cases := []struct {
		f    store.ListJobs
		want []int64
	}{
		{store.ListJobs{}, ids},
		{store.ListJobs{Newest: true}, newest},
		{store.ListJobs{Newest: true, Limit: 2}, newest[:2]},
		{store.ListJobs{Newest: true, Before: ids[3], Limit: 2}, []int64{ids[2], ids[1]}},
		{store.ListJobs{Newest: true, Before: ids[0]}, nil},
		{store.ListJobs{Newest: true, Kind: "deliver"}, []int64{ids[4], ids[2], ids[0]}},
		{store.ListJobs{After: ids[1], Before: ids[4]}, []int64{ids[2], ids[3]}},
	}
	for _, tc := range cases {
		got, err := s.Jobs(ctx, tc.f)
		must(t, "Jobs", err)
		if d := cmp.Diff(tc.want, jobIDs(got), cmpOpts...); d != "" {
			t.Errorf("Jobs(%+v) (-want +got):\n%s", tc.f, d)
		}
	}
}
