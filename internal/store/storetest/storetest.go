// Package storetest is the conformance suite every store.Store implementation passes:
// calls, transcripts, sessions, the carrier-call memory, and jobs with leases and
// compare-and-set transitions, including a concurrent claim test. store/sqlite and
// store/postgres run it from their own tests with Run.
//
// The suite never sleeps: the contract takes `now` for every lease decision, so the tests
// pass explicit times. Times are kept to the microsecond, so the suite uses times with
// microsecond precision and compares them with time.Time.Equal (any location).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Run runs the whole suite. open must return a new, empty store for each call: Run calls
// it once per subtest and closes the store when the subtest ends (Close must therefore
// tolerate a second call if open also registers one). Subtests do not run in parallel.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Calls/StartGet", testCallStartGet},
		{"Calls/Duplicate", testCallDuplicate},
		{"Calls/End", testCallEnd},
		{"Calls/NotFound", testCallNotFound},
		{"Calls/List", testCallList},
		{"Calls/ListDefaultLimit", testCallListDefaultLimit},
		{"Calls/TimePrecision", testCallTimePrecision},
		{"Transcripts/Order", testTranscriptOrder},
		{"Transcripts/Empty", testTranscriptEmpty},
		{"Sessions/Touch", testSessionTouch},
		{"Sessions/Key", testSessionKey},
		{"Sessions/NotFound", testSessionNotFound},
		{"Jobs/EnqueueDefaults", testJobEnqueueDefaults},
		{"Jobs/EnqueueExplicit", testJobEnqueueExplicit},
		{"Jobs/Dedupe", testJobDedupe},
		{"Jobs/NotFound", testJobNotFound},
		{"Jobs/ClaimRunAt", testJobClaimRunAt},
		{"Jobs/ClaimZeroRunAt", testJobClaimZeroRunAt},
		{"Jobs/ClaimOrder", testJobClaimOrder},
		{"Jobs/ClaimKinds", testJobClaimKinds},
		{"Jobs/ClaimLeased", testJobClaimLeased},
		{"Jobs/Heartbeat", testJobHeartbeat},
		{"Jobs/Complete", testJobComplete},
		{"Jobs/WrongOwner", testJobWrongOwner},
		{"Jobs/Reclaim", testJobReclaim},
		{"Jobs/ExpiredNotReclaimed", testJobExpiredNotReclaimed},
		{"Jobs/ReclaimCapped", testJobReclaimCapped},
		{"Jobs/FailRetry", testJobFailRetry},
		{"Jobs/FailFinal", testJobFailFinal},
		{"Jobs/FailAttemptsUsedUp", testJobFailAttemptsUsedUp},
		{"Jobs/List", testJobList},
		{"Jobs/ListDefaultLimit", testJobListDefaultLimit},
		{"Jobs/ConcurrentClaim", testJobConcurrentClaim},
		{"Calls/Update", testCallUpdate},
		{"Calls/FirstEndWins", testCallFirstEndWins},
		{"Transcripts/UnknownCall", testTranscriptUnknownCall},
		{"Jobs/Checkpoint", testJobCheckpoint},
		{"Jobs/Node", testJobNode},
		{"Jobs/Batch", testJobBatch},
		{"Jobs/Cancel", testJobCancel},
		{"Secrets/Shared", testSharedSecret},
		{"Nodes/Heartbeat", testNodeHeartbeat},
		{"Nodes/EndLostCalls", testEndLostCalls},
		{"Nodes/EndLostCallsOnce", testEndLostCallsOnce},
		{"Nodes/EndNodeCalls", testEndNodeCalls},
		{"CarrierCalls/Remember", testCarrierCallRemember},
		{"CarrierCalls/StreamOnce", testCarrierCallStreamOnce},
		{"CarrierCalls/Concurrent", testCarrierCallConcurrent},
		{"CarrierCalls/Prune", testCarrierCallPrune},
		{"CarrierLedger/Ranks", testCarrierLedgerRanks},
		{"CarrierLedger/Concurrent", testCarrierLedgerConcurrent},
		{"CarrierLedger/Refused", testCarrierLedgerRefused},
		{"CarrierLedger/Once", testCarrierOnce},
		{"CarrierLedger/Alias", testCarrierAlias},
		{"CarrierLedger/AliasMoves", testCarrierAliasMoves},
		{"CarrierLedger/Prune", testCarrierLedgerPrune},
		{"Calls/Summary", testCallSummary},
		{"Calls/Filters", testCallFilters},
		{"Calls/PagingTies", testCallPagingTies},
		{"Calls/ListLimitCapped", testCallListLimitCapped},
		{"Calls/Search", testCallSearch},
		{"Calls/SearchCommonWord", testCallSearchCommonWord},
		{"Sessions/List", testSessionsList},
		{"Jobs/Batches", testBatches},
		{"Jobs/Newest", testJobsNewest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// base is the suite's clock: microsecond precision, like the stores.
var base = time.Date(2031, 3, 14, 15, 9, 26, 535897000, time.UTC)

func at(d time.Duration) time.Time { return base.Add(d) }

var cmpOpts = []cmp.Option{cmpopts.EquateEmpty()} // time.Time compares with Equal

func ctxOf(t *testing.T) context.Context { return t.Context() }

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// ---- calls ----

func sampleCall(id string, started time.Time) store.Call {
	return store.Call{
		ID:         voice.CallID(id),
		Carrier:    "twilio",
		CarrierRef: "CA" + id,
		Direction:  voice.Inbound,
		From:       "+15551234567",
		To:         "+442071838750",
		CallerHash: "hash-a",
		Agent:      "hermes",
		Node:       "node-1",
		StartedAt:  started,
		Journal:    "/data/calls/" + id + "/events.jsonl",
	}
}

func testCallStartGet(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	c := sampleCall("c1", at(0))
	c.Direction = voice.Outbound
	c.From, c.To = "+1 (555) 000-1111 ext. 9", "sip:alice@example.com;transport=tls"
	must(t, "StartCall", s.StartCall(ctx, c))
	got, err := s.Call(ctx, "c1")
	must(t, "Call", err)
	if d := cmp.Diff(c, got, cmpOpts...); d != "" {
		t.Errorf("Call round trip (-want +got):\n%s", d)
	}
	if !got.EndedAt.IsZero() || got.Outcome != "" {
		t.Errorf("a running call has EndedAt %v, Outcome %q", got.EndedAt, got.Outcome)
	}
}

func testCallDuplicate(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	must(t, "StartCall", s.StartCall(ctx, sampleCall("c1", at(0))))
	other := sampleCall("c1", at(time.Minute))
	other.CallerHash = "hash-b"
	wantErr(t, "StartCall again", s.StartCall(ctx, other), store.ErrDuplicate)
	got, err := s.Call(ctx, "c1")
	must(t, "Call", err)
	if got.CallerHash != "hash-a" || !got.StartedAt.Equal(at(0)) {
		t.Errorf("the duplicate overwrote the call: %+v", got)
	}
}

func testCallEnd(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	c := sampleCall("c1", at(0))
	must(t, "StartCall", s.StartCall(ctx, c))
	must(t, "EndCall", s.EndCall(ctx, "c1", at(95*time.Second+123*time.Microsecond), "caller_hangup"))
	got, err := s.Call(ctx, "c1")
	must(t, "Call", err)
	c.EndedAt, c.Outcome = at(95*time.Second+123*time.Microsecond), "caller_hangup"
	if d := cmp.Diff(c, got, cmpOpts...); d != "" {
		t.Errorf("ended call (-want +got):\n%s", d)
	}
}

func testCallNotFound(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	_, err := s.Call(ctx, "nope")
	wantErr(t, "Call", err, store.ErrNotFound)
	wantErr(t, "EndCall", s.EndCall(ctx, "nope", at(0), "caller_hangup"), store.ErrNotFound)
}

func callIDs(cs []store.Call) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = string(c.ID)
	}
	return ids
}

func testCallList(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	// started out of order, two callers
	for i, off := range []int{3, 1, 4, 0, 2} {
		c := sampleCall(fmt.Sprintf("c%d", off), at(time.Duration(off)*time.Minute))
		if i%2 == 1 {
			c.CallerHash = "hash-b"
		}
		must(t, "StartCall", s.StartCall(ctx, c))
	}
	// c3, c4, c2 are hash-a; c1, c0 are hash-b
	cases := []struct {
		f    store.ListCalls
		want []string
	}{
		{store.ListCalls{}, []string{"c4", "c3", "c2", "c1", "c0"}},
		{store.ListCalls{Limit: 2}, []string{"c4", "c3"}},
		{store.ListCalls{CallerHash: "hash-a"}, []string{"c4", "c3", "c2"}},
		{store.ListCalls{CallerHash: "hash-b"}, []string{"c1", "c0"}},
		{store.ListCalls{CallerHash: "hash-z"}, nil},
		{store.ListCalls{Before: at(3 * time.Minute)}, []string{"c2", "c1", "c0"}},
		{store.ListCalls{Before: at(3*time.Minute + time.Microsecond)}, []string{"c3", "c2", "c1", "c0"}},
		{store.ListCalls{Before: at(3 * time.Minute), Limit: 1}, []string{"c2"}},
		{store.ListCalls{CallerHash: "hash-a", Before: at(3 * time.Minute)}, []string{"c2"}},
		{store.ListCalls{Before: at(0)}, nil},
	}
	for _, tc := range cases {
		got, err := s.Calls(ctx, tc.f)
		must(t, "Calls", err)
		if d := cmp.Diff(tc.want, callIDs(got), cmpOpts...); d != "" {
			t.Errorf("Calls(%+v) (-want +got):\n%s", tc.f, d)
		}
	}
	// listed calls are whole, raw numbers included
	got, err := s.Calls(ctx, store.ListCalls{Limit: 1})
	must(t, "Calls", err)
	want := sampleCall("c4", at(4*time.Minute))
	if len(got) != 1 || cmp.Diff(want, got[0], cmpOpts...) != "" {
		t.Errorf("Calls(limit 1) = %+v, want %+v", got, want)
	}
}

func testCallListDefaultLimit(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	for i := range 60 {
		must(t, "StartCall", s.StartCall(ctx, sampleCall(fmt.Sprintf("c%02d", i), at(time.Duration(i)*time.Second))))
	}
	got, err := s.Calls(ctx, store.ListCalls{})
	must(t, "Calls", err)
	if len(got) != 50 {
		t.Fatalf("Calls() returned %d calls, want the default limit of 50", len(got))
	}
	if got[0].ID != "c59" || got[49].ID != "c10" {
		t.Errorf("Calls() = %s … %s, want c59 … c10", got[0].ID, got[49].ID)
	}
}

func testCallTimePrecision(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	times := []time.Time{
		time.Date(2031, 1, 2, 3, 4, 5, 1000, time.UTC),           // one microsecond
		time.Date(2031, 1, 2, 3, 4, 5, 999999000, time.UTC),      // just under a second
		time.Date(2031, 6, 30, 23, 59, 59, 123456000, zone),      // not UTC
		time.Date(1999, 12, 31, 23, 59, 59, 500000000, time.UTC), // last century
	}
	for i, tm := range times {
		id := voice.CallID(fmt.Sprintf("t%d", i))
		c := sampleCall(string(id), tm)
		must(t, "StartCall", s.StartCall(ctx, c))
		must(t, "EndCall", s.EndCall(ctx, id, tm.Add(time.Microsecond), "done"))
		got, err := s.Call(ctx, id)
		must(t, "Call", err)
		if !got.StartedAt.Equal(tm) || !got.EndedAt.Equal(tm.Add(time.Microsecond)) {
			t.Errorf("times round trip: started %v ended %v, want %v and 1µs later", got.StartedAt, got.EndedAt, tm)
		}
	}
}

// ---- transcripts ----

func testTranscriptOrder(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	must(t, "StartCall", s.StartCall(ctx, sampleCall("c1", at(0))))
	must(t, "StartCall", s.StartCall(ctx, sampleCall("c2", at(0))))
	l := func(turn int, role voice.Role, text string, d time.Duration, interrupted bool) store.TranscriptLine {
		return store.TranscriptLine{CallID: "c1", Turn: turn, Role: role, Text: text, At: at(d), Interrupted: interrupted}
	}
	want := []store.TranscriptLine{
		l(1, voice.RoleUser, "hello", 1*time.Second, false),
		l(1, voice.RoleAssistant, "hi, how can I", 2*time.Second, true),
		l(2, voice.RoleUser, "book a table for two at seven", 3*time.Second, false),
		l(2, voice.RoleAssistant, "done: seven o'clock, «two» people", 4*time.Second+1500*time.Microsecond, false),
		l(3, voice.RoleUser, "thanks", 3500*time.Millisecond, false), // a later turn with an earlier time
	}
	// appended out of order, in two batches, with another call's line in between
	must(t, "AppendTranscript", s.AppendTranscript(ctx, []store.TranscriptLine{want[3], want[0], want[4]}))
	must(t, "AppendTranscript", s.AppendTranscript(ctx, []store.TranscriptLine{
		{CallID: "c2", Turn: 1, Role: voice.RoleUser, Text: "other call", At: at(0)},
	}))
	must(t, "AppendTranscript", s.AppendTranscript(ctx, []store.TranscriptLine{want[2], want[1]}))
	got, err := s.Transcript(ctx, "c1")
	must(t, "Transcript", err)
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Errorf("Transcript (-want +got):\n%s", d)
	}
	got2, err := s.Transcript(ctx, "c2")
	must(t, "Transcript", err)
	if len(got2) != 1 || got2[0].Text != "other call" {
		t.Errorf("Transcript(c2) = %+v", got2)
	}
}

func testTranscriptEmpty(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	must(t, "StartCall", s.StartCall(ctx, sampleCall("c1", at(0))))
	must(t, "AppendTranscript(nil)", s.AppendTranscript(ctx, nil))
	got, err := s.Transcript(ctx, "c1")
	must(t, "Transcript", err)
	if len(got) != 0 {
		t.Errorf("Transcript of a silent call = %+v", got)
	}
}

// ---- sessions ----

func testSessionTouch(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	got, err := s.TouchSession(ctx, "hash-a", "key-1", "c1", at(0))
	must(t, "TouchSession", err)
	want := store.Session{CallerHash: "hash-a", SessionKey: "key-1", FirstSeen: at(0), LastSeen: at(0), Calls: 1, LastCall: "c1"}
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Errorf("first touch (-want +got):\n%s", d)
	}
	got, err = s.TouchSession(ctx, "hash-a", "key-1", "c2", at(time.Hour))
	must(t, "TouchSession", err)
	want = store.Session{CallerHash: "hash-a", SessionKey: "key-1", FirstSeen: at(0), LastSeen: at(time.Hour), Calls: 2, LastCall: "c2"}
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Errorf("second touch (-want +got):\n%s", d)
	}
	stored, err := s.Session(ctx, "hash-a")
	must(t, "Session", err)
	if d := cmp.Diff(want, stored, cmpOpts...); d != "" {
		t.Errorf("Session (-want +got):\n%s", d)
	}
	// another caller is its own session
	other, err := s.TouchSession(ctx, "hash-b", "", "c3", at(2*time.Hour))
	must(t, "TouchSession", err)
	if other.Calls != 1 || other.SessionKey != "" || !other.FirstSeen.Equal(at(2*time.Hour)) {
		t.Errorf("second caller's session = %+v", other)
	}
	stored, err = s.Session(ctx, "hash-a")
	must(t, "Session", err)
	if stored.Calls != 2 {
		t.Errorf("touching hash-b changed hash-a: %+v", stored)
	}
}

func testSessionKey(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	steps := []struct {
		key, want string
	}{
		{"", ""},           // created without a key
		{"key-1", "key-1"}, // the first key it is given
		{"", "key-1"},      // kept on empty
		{"key-1", "key-1"}, // same key
		{"key-2", "key-2"}, // a new key wins
		{"", "key-2"},
	}
	for i, st := range steps {
		got, err := s.TouchSession(ctx, "hash-a", st.key, voice.CallID(fmt.Sprintf("c%d", i)), at(time.Duration(i)*time.Minute))
		must(t, "TouchSession", err)
		if got.SessionKey != st.want || got.Calls != i+1 {
			t.Errorf("step %d (key %q): session = %+v, want key %q and %d calls", i, st.key, got, st.want, i+1)
		}
	}
	byKey, err := s.SessionByKey(ctx, "key-2")
	must(t, "SessionByKey", err)
	want := store.Session{CallerHash: "hash-a", SessionKey: "key-2", FirstSeen: at(0), LastSeen: at(5 * time.Minute), Calls: 6, LastCall: "c5"}
	if d := cmp.Diff(want, byKey, cmpOpts...); d != "" {
		t.Errorf("SessionByKey (-want +got):\n%s", d)
	}
	_, err = s.SessionByKey(ctx, "key-1")
	wantErr(t, "SessionByKey(replaced key)", err, store.ErrNotFound)
}

func testSessionNotFound(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	_, err := s.Session(ctx, "nobody")
	wantErr(t, "Session", err, store.ErrNotFound)
	_, err = s.SessionByKey(ctx, "no-key")
	wantErr(t, "SessionByKey", err, store.ErrNotFound)
	_, err = s.TouchSession(ctx, "hash-a", "", "c1", at(0))
	must(t, "TouchSession", err)
	_, err = s.SessionByKey(ctx, "")
	wantErr(t, "SessionByKey(\"\")", err, store.ErrNotFound)
}
