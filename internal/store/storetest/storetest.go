// Package storetest is the conformance suite every store.Store implementation passes:
// calls, transcripts, sessions, and jobs with leases and compare-and-set transitions,
// including a concurrent claim test. store/sqlite and store/postgres run it from their
// own tests with Run.
//
// The suite never sleeps: the contract takes `now` for every lease decision, so the tests
// pass explicit times. Times are kept to the microsecond, so the suite uses times with
// microsecond precision and compares them with time.Time.Equal (any location).
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// ---- jobs ----

func enqueue(t *testing.T, s store.Store, j store.NewJob) store.Job {
	t.Helper()
	got, err := s.Enqueue(ctxOf(t), j)
	must(t, "Enqueue", err)
	return got
}

func getJob(t *testing.T, s store.Store, id int64) store.Job {
	t.Helper()
	j, err := s.Job(ctxOf(t), id)
	must(t, "Job", err)
	return j
}

func claim(t *testing.T, s store.Store, owner string, kinds []string, lease time.Duration, now time.Time) (store.Job, bool) {
	t.Helper()
	j, ok, err := s.Claim(ctxOf(t), owner, kinds, lease, now)
	must(t, "Claim", err)
	return j, ok
}

func mustClaim(t *testing.T, s store.Store, owner string, lease time.Duration, now time.Time) store.Job {
	t.Helper()
	j, ok := claim(t, s, owner, nil, lease, now)
	if !ok {
		t.Fatalf("Claim(%s, now %v): nothing due", owner, now)
	}
	return j
}

func noClaim(t *testing.T, s store.Store, owner string, kinds []string, now time.Time) {
	t.Helper()
	if j, ok := claim(t, s, owner, kinds, time.Minute, now); ok {
		t.Fatalf("Claim(%s, %v, now %v) = job %d (%s), want none due", owner, kinds, now, j.ID, j.State)
	}
}

func testJobEnqueueDefaults(t *testing.T, s store.Store) {
	j := enqueue(t, s, store.NewJob{Kind: "outbound_call", Payload: []byte(`{"to":"+15550001111"}`), RunAt: at(0)})
	if j.ID == 0 {
		t.Error("Enqueue returned id 0")
	}
	if j.Kind != "outbound_call" || !bytes.Equal(j.Payload, []byte(`{"to":"+15550001111"}`)) {
		t.Errorf("kind/payload = %q %s", j.Kind, j.Payload)
	}
	if j.State != store.JobPending || j.MaxAttempts != 3 || j.Attempts != 0 || j.Version <= 0 {
		t.Errorf("new job = state %q max %d attempts %d version %d, want pending, 3, 0, >0", j.State, j.MaxAttempts, j.Attempts, j.Version)
	}
	if !j.RunAt.Equal(at(0)) || j.LeaseOwner != "" || !j.LeaseUntil.IsZero() || len(j.Result) != 0 || j.Error != "" || j.DedupeKey != "" {
		t.Errorf("new job = %+v", j)
	}
	if j.CreatedAt.IsZero() || j.UpdatedAt.IsZero() {
		t.Errorf("new job without CreatedAt/UpdatedAt: %+v", j)
	}
	if d := cmp.Diff(j, getJob(t, s, j.ID), cmpOpts...); d != "" {
		t.Errorf("Job differs from what Enqueue returned (-enqueue +job):\n%s", d)
	}
}

func testJobEnqueueExplicit(t *testing.T, s store.Store) {
	j := enqueue(t, s, store.NewJob{Kind: "deliver", Payload: []byte(`{}`), RunAt: at(time.Hour), MaxAttempts: 7, DedupeKey: "d-1"})
	if j.MaxAttempts != 7 || j.DedupeKey != "d-1" || !j.RunAt.Equal(at(time.Hour)) {
		t.Errorf("job = %+v", j)
	}
	j2 := enqueue(t, s, store.NewJob{Kind: "deliver", RunAt: at(0)})
	if j2.ID == j.ID {
		t.Errorf("two jobs share id %d", j.ID)
	}
}

func testJobDedupe(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	first := enqueue(t, s, store.NewJob{Kind: "handoff", RunAt: at(0), DedupeKey: "call-c1-handoff"})
	_, err := s.Enqueue(ctx, store.NewJob{Kind: "handoff", RunAt: at(time.Minute), DedupeKey: "call-c1-handoff"})
	wantErr(t, "Enqueue(same dedupe key)", err, store.ErrDuplicate)
	// still a duplicate once the first one is done
	got := mustClaim(t, s, "w1", time.Minute, at(0))
	must(t, "Complete", s.Complete(ctx, got.ID, "w1", []byte(`{}`), at(time.Second)))
	_, err = s.Enqueue(ctx, store.NewJob{Kind: "handoff", RunAt: at(time.Minute), DedupeKey: "call-c1-handoff"})
	wantErr(t, "Enqueue(same dedupe key, first completed)", err, store.ErrDuplicate)
	// jobs without a key never collide
	enqueue(t, s, store.NewJob{Kind: "handoff", RunAt: at(0)})
	enqueue(t, s, store.NewJob{Kind: "handoff", RunAt: at(0)})
	jobs, err := s.Jobs(ctx, store.ListJobs{})
	must(t, "Jobs", err)
	if len(jobs) != 3 || jobs[0].ID != first.ID {
		t.Errorf("Jobs after dedupe = %d jobs", len(jobs))
	}
}

func testJobNotFound(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	_, err := s.Job(ctx, 424242)
	wantErr(t, "Job", err, store.ErrNotFound)
	// a transition on a job that does not exist is an error: not found, or not ours
	for name, err := range map[string]error{
		"Heartbeat": s.Heartbeat(ctx, 424242, "w1", time.Minute, at(0)),
		"Complete":  s.Complete(ctx, 424242, "w1", nil, at(0)),
		"Fail":      s.Fail(ctx, 424242, "w1", "boom", time.Time{}, at(0)),
	} {
		if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s(unknown job) = %v, want ErrNotFound or ErrLeaseLost", name, err)
		}
	}
}

func testJobClaimRunAt(t *testing.T, s store.Store) {
	j := enqueue(t, s, store.NewJob{Kind: "outbound_call", Payload: []byte(`{"n":1}`), RunAt: at(time.Minute)})
	noClaim(t, s, "w1", nil, at(0))
	noClaim(t, s, "w1", nil, at(time.Minute-time.Microsecond))
	got := mustClaim(t, s, "w1", 30*time.Second, at(time.Minute)) // RunAt has come
	if got.ID != j.ID || got.State != store.JobRunning || got.LeaseOwner != "w1" || got.Attempts != 1 {
		t.Errorf("claimed = %+v", got)
	}
	if !got.LeaseUntil.Equal(at(time.Minute + 30*time.Second)) {
		t.Errorf("LeaseUntil = %v, want now+lease %v", got.LeaseUntil, at(time.Minute+30*time.Second))
	}
	if got.Version <= j.Version {
		t.Errorf("Version %d not bumped past %d", got.Version, j.Version)
	}
	if !bytes.Equal(got.Payload, j.Payload) || got.Kind != j.Kind || got.MaxAttempts != 3 {
		t.Errorf("claimed job lost its fields: %+v", got)
	}
	if d := cmp.Diff(got, getJob(t, s, j.ID), cmpOpts...); d != "" {
		t.Errorf("Job differs from what Claim returned (-claim +job):\n%s", d)
	}
	noClaim(t, s, "w2", nil, at(time.Minute)) // nothing else is due
}

func testJobClaimZeroRunAt(t *testing.T, s store.Store) {
	j := enqueue(t, s, store.NewJob{Kind: "deliver"}) // no RunAt: due at once
	got, ok := claim(t, s, "w1", nil, time.Minute, time.Now().Add(time.Second))
	if !ok || got.ID != j.ID {
		t.Errorf("a job without RunAt was not due: ok %v, job %+v", ok, got)
	}
}

func testJobClaimOrder(t *testing.T, s store.Store) {
	late := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(2 * time.Minute)})
	early := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(time.Minute)})
	notYet := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(time.Hour)})
	now := at(10 * time.Minute)
	if got := mustClaim(t, s, "w1", 24*time.Hour, now); got.ID != early.ID {
		t.Errorf("first claim = job %d, want the earliest due %d", got.ID, early.ID)
	}
	if got := mustClaim(t, s, "w1", 24*time.Hour, now); got.ID != late.ID {
		t.Errorf("second claim = job %d, want %d", got.ID, late.ID)
	}
	noClaim(t, s, "w1", nil, now)
	if got := mustClaim(t, s, "w1", time.Minute, at(time.Hour)); got.ID != notYet.ID {
		t.Errorf("third claim = job %d, want %d", got.ID, notYet.ID)
	}
}

func testJobClaimKinds(t *testing.T, s store.Store) {
	call := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0)})
	xfer := enqueue(t, s, store.NewJob{Kind: "transfer", RunAt: at(time.Second)})
	deliver := enqueue(t, s, store.NewJob{Kind: "deliver", RunAt: at(2 * time.Second)})
	now := at(time.Minute)
	noClaim(t, s, "w1", []string{"handoff"}, now)
	got, ok := claim(t, s, "w1", []string{"transfer"}, time.Minute, now)
	if !ok || got.ID != xfer.ID {
		t.Errorf("Claim(transfer) = %v %+v, want job %d", ok, got, xfer.ID)
	}
	got, ok = claim(t, s, "w1", []string{"deliver", "handoff"}, time.Minute, now)
	if !ok || got.ID != deliver.ID {
		t.Errorf("Claim(deliver, handoff) = %v %+v, want job %d", ok, got, deliver.ID)
	}
	noClaim(t, s, "w1", []string{"transfer", "deliver"}, now)
	got, ok = claim(t, s, "w1", nil, time.Minute, now) // all kinds
	if !ok || got.ID != call.ID {
		t.Errorf("Claim(all) = %v %+v, want job %d", ok, got, call.ID)
	}
	got, ok = claim(t, s, "w1", []string{}, time.Minute, now)
	if ok {
		t.Errorf("Claim(empty kinds) found job %d after all were claimed", got.ID)
	}
}

func testJobClaimLeased(t *testing.T, s store.Store) {
	enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	mustClaim(t, s, "w1", time.Minute, at(0))
	noClaim(t, s, "w2", nil, at(30*time.Second))
	noClaim(t, s, "w1", nil, at(59*time.Second))
}

func testJobHeartbeat(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	c := mustClaim(t, s, "w1", time.Minute, at(0))
	must(t, "Heartbeat", s.Heartbeat(ctx, j.ID, "w1", 2*time.Minute, at(50*time.Second)))
	hb := getJob(t, s, j.ID)
	if !hb.LeaseUntil.Equal(at(170*time.Second)) || hb.State != store.JobRunning || hb.LeaseOwner != "w1" || hb.Attempts != 1 {
		t.Errorf("after heartbeat = %+v, want lease until %v", hb, at(170*time.Second))
	}
	if hb.Version < c.Version {
		t.Errorf("Heartbeat moved Version back: %d after %d", hb.Version, c.Version)
	}
	// the old lease would have expired by now; the extended one has not
	noClaim(t, s, "w2", nil, at(90*time.Second))
	wantErr(t, "Heartbeat(wrong owner)", s.Heartbeat(ctx, j.ID, "w2", time.Minute, at(100*time.Second)), store.ErrLeaseLost)
	if got := getJob(t, s, j.ID); !got.LeaseUntil.Equal(at(170*time.Second)) || got.LeaseOwner != "w1" {
		t.Errorf("a wrong owner's heartbeat changed the lease: %+v", got)
	}
	must(t, "Complete", s.Complete(ctx, j.ID, "w1", nil, at(110*time.Second)))
	wantErr(t, "Heartbeat(completed)", s.Heartbeat(ctx, j.ID, "w1", time.Minute, at(120*time.Second)), store.ErrLeaseLost)
}

func testJobComplete(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	c := mustClaim(t, s, "w1", time.Minute, at(0))
	must(t, "Complete", s.Complete(ctx, j.ID, "w1", []byte(`{"ok":true}`), at(10*time.Second)))
	got := getJob(t, s, j.ID)
	if got.State != store.JobCompleted || !bytes.Equal(got.Result, []byte(`{"ok":true}`)) || got.Attempts != 1 || got.Error != "" {
		t.Errorf("completed job = %+v", got)
	}
	if got.Version <= c.Version {
		t.Errorf("Complete did not bump Version: %d after %d", got.Version, c.Version)
	}
	if !got.UpdatedAt.Equal(at(10 * time.Second)) {
		t.Errorf("UpdatedAt = %v, want the completion time %v", got.UpdatedAt, at(10*time.Second))
	}
	// finished: no second completion, no failure, never claimed again
	wantErr(t, "Complete again", s.Complete(ctx, j.ID, "w1", []byte(`{"ok":false}`), at(11*time.Second)), store.ErrLeaseLost)
	wantErr(t, "Fail after Complete", s.Fail(ctx, j.ID, "w1", "boom", at(time.Hour), at(11*time.Second)), store.ErrLeaseLost)
	noClaim(t, s, "w2", nil, at(24*time.Hour))
	if again := getJob(t, s, j.ID); again.State != store.JobCompleted || !bytes.Equal(again.Result, []byte(`{"ok":true}`)) || again.Version != got.Version {
		t.Errorf("a refused transition changed the job: %+v", again)
	}
}

func testJobWrongOwner(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	// pending: nobody owns it
	wantErr(t, "Complete(pending)", s.Complete(ctx, j.ID, "w1", nil, at(0)), store.ErrLeaseLost)
	wantErr(t, "Fail(pending)", s.Fail(ctx, j.ID, "w1", "boom", time.Time{}, at(0)), store.ErrLeaseLost)
	wantErr(t, "Heartbeat(pending)", s.Heartbeat(ctx, j.ID, "w1", time.Minute, at(0)), store.ErrLeaseLost)
	c := mustClaim(t, s, "w1", time.Minute, at(0))
	wantErr(t, "Complete(wrong owner)", s.Complete(ctx, j.ID, "w2", []byte(`{}`), at(time.Second)), store.ErrLeaseLost)
	wantErr(t, "Fail(wrong owner)", s.Fail(ctx, j.ID, "w2", "boom", time.Time{}, at(time.Second)), store.ErrLeaseLost)
	got := getJob(t, s, j.ID)
	if got.State != store.JobRunning || got.LeaseOwner != "w1" || got.Version != c.Version {
		t.Errorf("a wrong owner changed the job: %+v", got)
	}
	must(t, "Complete", s.Complete(ctx, j.ID, "w1", []byte(`{}`), at(2*time.Second)))
}

// testJobReclaim is the compare-and-set: w1's node stalls past its lease, w2 reclaims the
// job and finishes it, and w1 waking up can change nothing.
func testJobReclaim(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "outbound_call", Payload: []byte(`{"to":"+1"}`), RunAt: at(0)})
	first := mustClaim(t, s, "w1", 30*time.Second, at(0))
	noClaim(t, s, "w2", nil, at(29*time.Second))
	second := mustClaim(t, s, "w2", 30*time.Second, at(31*time.Second)) // w1's lease expired: reclaimed
	if second.ID != j.ID || second.LeaseOwner != "w2" || second.Attempts != 2 || second.State != store.JobRunning {
		t.Fatalf("reclaimed = %+v, want job %d owned by w2 on attempt 2", second, j.ID)
	}
	if !second.LeaseUntil.Equal(at(61*time.Second)) || second.Version <= first.Version {
		t.Errorf("reclaimed lease until %v version %d (first %d)", second.LeaseUntil, second.Version, first.Version)
	}
	// the stale owner can do nothing while w2 holds it …
	wantErr(t, "Heartbeat(stale owner)", s.Heartbeat(ctx, j.ID, "w1", time.Minute, at(32*time.Second)), store.ErrLeaseLost)
	wantErr(t, "Fail(stale owner)", s.Fail(ctx, j.ID, "w1", "timeout", at(time.Hour), at(32*time.Second)), store.ErrLeaseLost)
	wantErr(t, "Complete(stale owner)", s.Complete(ctx, j.ID, "w1", []byte(`"stale"`), at(33*time.Second)), store.ErrLeaseLost)
	if got := getJob(t, s, j.ID); got.LeaseOwner != "w2" || got.State != store.JobRunning || got.Version != second.Version {
		t.Errorf("the stale owner changed the job: %+v", got)
	}
	// … and after w2 finished: the winner's result stands
	must(t, "Complete(w2)", s.Complete(ctx, j.ID, "w2", []byte(`"winner"`), at(40*time.Second)))
	wantErr(t, "Complete(stale owner, after)", s.Complete(ctx, j.ID, "w1", []byte(`"stale"`), at(41*time.Second)), store.ErrLeaseLost)
	wantErr(t, "Fail(stale owner, after)", s.Fail(ctx, j.ID, "w1", "timeout", time.Time{}, at(41*time.Second)), store.ErrLeaseLost)
	got := getJob(t, s, j.ID)
	if got.State != store.JobCompleted || !bytes.Equal(got.Result, []byte(`"winner"`)) || got.Error != "" || got.Attempts != 2 {
		t.Errorf("after the race = %+v, want completed with w2's result", got)
	}
}

// testJobExpiredNotReclaimed: a lease that ran out is still its owner's until another
// owner reclaims the job (ErrLeaseLost: "expired and reclaimed, or finished").
func testJobExpiredNotReclaimed(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	mustClaim(t, s, "w1", 10*time.Second, at(0))
	must(t, "Complete(late)", s.Complete(ctx, j.ID, "w1", []byte(`1`), at(time.Minute)))
	if got := getJob(t, s, j.ID); got.State != store.JobCompleted {
		t.Errorf("late completion = %+v", got)
	}
}

// testJobReclaimCapped: a job whose node dies on every attempt is failed when its last
// lease expires, not reclaimed a MaxAttempts+1st time.
func testJobReclaimCapped(t *testing.T, s store.Store) {
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0), MaxAttempts: 2})
	mustClaim(t, s, "dead-1", time.Second, at(0))
	mustClaim(t, s, "dead-2", time.Second, at(2*time.Second)) // reclaimed: attempt 2
	noClaim(t, s, "w3", nil, at(4*time.Second))
	got := getJob(t, s, j.ID)
	if got.State != store.JobFailed || got.Attempts != 2 || !strings.Contains(got.Error, "lease expired") || !strings.Contains(got.Error, "dead-2") {
		t.Errorf("after the last lease expired = %+v, want failed after 2 attempts naming dead-2", got)
	}
}

func testJobFailRetry(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(0)})
	c := mustClaim(t, s, "w1", time.Minute, at(0))
	retryAt := at(10*time.Second + store.Backoff(1))
	must(t, "Fail", s.Fail(ctx, j.ID, "w1", "busy", retryAt, at(10*time.Second)))
	got := getJob(t, s, j.ID)
	if got.State != store.JobPending || got.Error != "busy" || got.Attempts != 1 || !got.RunAt.Equal(retryAt) {
		t.Errorf("after a retryable failure = %+v, want pending until %v with error busy", got, retryAt)
	}
	if got.Version <= c.Version {
		t.Errorf("Fail did not bump Version")
	}
	wantErr(t, "Complete(after Fail)", s.Complete(ctx, j.ID, "w1", nil, at(11*time.Second)), store.ErrLeaseLost)
	noClaim(t, s, "w1", nil, retryAt.Add(-time.Microsecond))
	again := mustClaim(t, s, "w2", time.Minute, retryAt)
	if again.ID != j.ID || again.Attempts != 2 || again.LeaseOwner != "w2" {
		t.Errorf("retry claim = %+v", again)
	}
	must(t, "Complete", s.Complete(ctx, j.ID, "w2", []byte(`{"sid":"CA1"}`), retryAt.Add(time.Second)))
	if got := getJob(t, s, j.ID); got.State != store.JobCompleted || !bytes.Equal(got.Result, []byte(`{"sid":"CA1"}`)) {
		t.Errorf("completed after retry = %+v", got)
	}
}

func testJobFailFinal(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	mustClaim(t, s, "w1", time.Minute, at(0))
	must(t, "Fail", s.Fail(ctx, j.ID, "w1", "invalid number", time.Time{}, at(time.Second))) // no retry
	got := getJob(t, s, j.ID)
	if got.State != store.JobFailed || got.Error != "invalid number" || got.Attempts != 1 {
		t.Errorf("after a final failure = %+v", got)
	}
	noClaim(t, s, "w1", nil, at(24*time.Hour))
	wantErr(t, "Fail again", s.Fail(ctx, j.ID, "w1", "again", time.Time{}, at(2*time.Second)), store.ErrLeaseLost)
	wantErr(t, "Complete(failed)", s.Complete(ctx, j.ID, "w1", nil, at(2*time.Second)), store.ErrLeaseLost)
	if again := getJob(t, s, j.ID); again.State != store.JobFailed || again.Error != "invalid number" {
		t.Errorf("a refused transition changed the failed job: %+v", again)
	}
}

func testJobFailAttemptsUsedUp(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	j := enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0), MaxAttempts: 2})
	mustClaim(t, s, "w1", time.Minute, at(0))
	must(t, "Fail 1", s.Fail(ctx, j.ID, "w1", "e1", at(time.Minute), at(time.Second)))
	if got := getJob(t, s, j.ID); got.State != store.JobPending {
		t.Fatalf("after attempt 1 of 2 = %+v, want pending", got)
	}
	c := mustClaim(t, s, "w1", time.Minute, at(time.Minute))
	if c.Attempts != 2 {
		t.Errorf("attempts = %d, want 2", c.Attempts)
	}
	must(t, "Fail 2", s.Fail(ctx, j.ID, "w1", "e2", at(time.Hour), at(61*time.Second))) // retryAt, but no attempts left
	got := getJob(t, s, j.ID)
	if got.State != store.JobFailed || got.Error != "e2" || got.Attempts != 2 {
		t.Errorf("after the last attempt = %+v, want failed with e2", got)
	}
	noClaim(t, s, "w1", nil, at(2*time.Hour))
}

func jobIDs(js []store.Job) []int64 {
	ids := make([]int64, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	return ids
}

func testJobList(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	a := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(3 * time.Minute)})
	b := enqueue(t, s, store.NewJob{Kind: "deliver", RunAt: at(0)})
	c := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(time.Minute)})
	d := enqueue(t, s, store.NewJob{Kind: "outbound_call", RunAt: at(2 * time.Minute)})
	// b completed, c running, a and d pending
	mustClaim(t, s, "w1", time.Hour, at(0))
	must(t, "Complete", s.Complete(ctx, b.ID, "w1", nil, at(time.Second)))
	if got := mustClaim(t, s, "w1", time.Hour, at(time.Minute)); got.ID != c.ID {
		t.Fatalf("claimed %d, want %d", got.ID, c.ID)
	}
	cases := []struct {
		f    store.ListJobs
		want []int64
	}{
		{store.ListJobs{}, []int64{a.ID, b.ID, c.ID, d.ID}}, // oldest first
		{store.ListJobs{Limit: 2}, []int64{a.ID, b.ID}},
		{store.ListJobs{State: store.JobPending}, []int64{a.ID, d.ID}},
		{store.ListJobs{State: store.JobRunning}, []int64{c.ID}},
		{store.ListJobs{State: store.JobCompleted}, []int64{b.ID}},
		{store.ListJobs{State: store.JobFailed}, nil},
		{store.ListJobs{Kind: "outbound_call"}, []int64{a.ID, c.ID, d.ID}},
		{store.ListJobs{Kind: "outbound_call", State: store.JobPending, Limit: 1}, []int64{a.ID}},
		{store.ListJobs{Kind: "handoff"}, nil},
	}
	for _, tc := range cases {
		got, err := s.Jobs(ctx, tc.f)
		must(t, "Jobs", err)
		if d := cmp.Diff(tc.want, jobIDs(got), cmpOpts...); d != "" {
			t.Errorf("Jobs(%+v) (-want +got):\n%s", tc.f, d)
		}
	}
	// listed jobs are whole
	got, err := s.Jobs(ctx, store.ListJobs{State: store.JobRunning})
	must(t, "Jobs", err)
	if d := cmp.Diff(getJob(t, s, c.ID), got[0], cmpOpts...); d != "" {
		t.Errorf("listed job differs from Job (-job +listed):\n%s", d)
	}
}

func testJobListDefaultLimit(t *testing.T, s store.Store) {
	for range 110 {
		enqueue(t, s, store.NewJob{Kind: "k", RunAt: at(0)})
	}
	got, err := s.Jobs(ctxOf(t), store.ListJobs{})
	must(t, "Jobs", err)
	if len(got) != 100 {
		t.Errorf("Jobs() returned %d jobs, want the default limit of 100", len(got))
	}
}

// testJobConcurrentClaim: 8 workers claim and complete 200 jobs at the same instant with
// a long lease: every job is claimed once and completed once.
func testJobConcurrentClaim(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	const jobs, workers = 200, 8
	want := map[int64]bool{}
	for i := range jobs {
		j := enqueue(t, s, store.NewJob{Kind: "k", Payload: fmt.Appendf(nil, `{"i":%d}`, i), RunAt: at(time.Duration(i) * time.Microsecond)})
		want[j.ID] = true
	}
	now := at(time.Second)
	var (
		mu      sync.Mutex
		claimed = map[int64]string{}
		errs    []error
		wg      sync.WaitGroup
	)
	for w := range workers {
		owner := fmt.Sprintf("worker-%d", w)
		wg.Go(func() {
			for {
				j, ok, err := s.Claim(ctx, owner, nil, time.Hour, now)
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: Claim: %w", owner, err))
					mu.Unlock()
					return
				}
				if !ok {
					return
				}
				mu.Lock()
				if prev, dup := claimed[j.ID]; dup {
					errs = append(errs, fmt.Errorf("job %d claimed by %s while leased to %s", j.ID, owner, prev))
				}
				claimed[j.ID] = owner
				mu.Unlock()
				if err := s.Complete(ctx, j.ID, owner, j.Payload, now); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: Complete(%d): %w", owner, j.ID, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(claimed) != jobs {
		t.Errorf("%d jobs claimed, want %d", len(claimed), jobs)
	}
	all, err := s.Jobs(ctx, store.ListJobs{State: store.JobCompleted, Limit: 1000})
	must(t, "Jobs", err)
	if len(all) != jobs {
		t.Errorf("%d jobs completed, want %d", len(all), jobs)
	}
	for _, j := range all {
		if !want[j.ID] || j.Attempts != 1 || j.LeaseOwner != "" && j.LeaseOwner != claimed[j.ID] || !bytes.Equal(j.Result, j.Payload) {
			t.Errorf("job %d: attempts %d owner %q (claimed by %q) result %s payload %s", j.ID, j.Attempts, j.LeaseOwner, claimed[j.ID], j.Result, j.Payload)
		}
	}
	noClaim(t, s, "late", nil, at(24*time.Hour))
}
