package carriertest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
)

// RunMemory checks that a carrier.Memory keeps the call ledger's rules (carrier.Progress
// Merge), finds a call by either of its names, and sees each name once, concurrent callers
// included. open returns an empty memory; every memory runs it, the gateway's store-backed
// one and Memory alike.
func RunMemory(t *testing.T, open func(t *testing.T) carrier.Memory) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, m carrier.Memory)
	}{
		{"Ranks", testMemoryRanks},
		{"Verdict", testMemoryVerdict},
		{"KeptOnceKnown", testMemoryKeptOnceKnown},
		{"ConcurrentProgress", testMemoryConcurrentProgress},
		{"Once", testMemoryOnce},
		{"Alias", testMemoryAlias},
		{"AliasJoins", testMemoryAliasJoins},
		{"AliasTaken", testMemoryAliasTaken},
		{"AliasConcurrent", testMemoryAliasConcurrent},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open(t)) })
	}
}

var memoryEpoch = time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)

func progressed(t *testing.T, m carrier.Memory, p carrier.Progress, after time.Duration) {
	t.Helper()
	if err := m.Progressed(t.Context(), p, memoryEpoch.Add(after)); err != nil {
		t.Fatalf("Progressed(%+v): %v", p, err)
	}
}

func progressOf(t *testing.T, m carrier.Memory, ref string) carrier.Progress {
	t.Helper()
	p, ok, err := m.Progress(t.Context(), ref)
	if err != nil || !ok {
		t.Fatalf("Progress(%s) = %+v, %v, %v; want the call's latest word", ref, p, ok, err)
	}
	return p
}

// testMemoryRanks: a later status replaces an earlier one, never the reverse, and the first
// final status stays.
func testMemoryRanks(t *testing.T, m carrier.Memory) {
	if p, ok, err := m.Progress(t.Context(), "unknown"); ok || err != nil {
		t.Fatalf("Progress of an unknown call = %+v, %v, %v; want none", p, ok, err)
	}
	steps := []struct {
		status, want carrier.Status
	}{
		{carrier.StatusRinging, carrier.StatusRinging},
		{carrier.StatusQueued, carrier.StatusRinging}, // late: earlier in a call's life
		{carrier.StatusInProgress, carrier.StatusInProgress},
		{carrier.StatusRinging, carrier.StatusInProgress},
		{"", carrier.StatusInProgress}, // a word without a status (a verdict alone)
		{carrier.StatusCompleted, carrier.StatusCompleted},
		{carrier.StatusInProgress, carrier.StatusCompleted}, // an ended call stays ended
		{carrier.StatusBusy, carrier.StatusCompleted},       // the first final word stays
	}
	for i, s := range steps {
		progressed(t, m, carrier.Progress{Ref: "v1", Status: s.status}, time.Duration(i)*time.Second)
		if got := progressOf(t, m, "v1"); got.Status != s.want || got.Ref != "v1" {
			t.Errorf("after %q (step %d): status %q ref %q, want %q", s.status, i, got.Status, got.Ref, s.want)
		}
	}
	if p := progressOf(t, m, "v1"); !p.Ended() {
		t.Errorf("%+v is not ended", p)
	}
	if _, ok, err := m.Progress(t.Context(), "v2"); ok || err != nil {
		t.Errorf("another call has a word: %v, %v", ok, err)
	}
	if err := m.Progressed(t.Context(), carrier.Progress{Status: carrier.StatusRinging}, memoryEpoch); err == nil {
		t.Error("Progressed accepted a word without a ref")
	}
}

// testMemoryVerdict: a machine's provisional verdict is refined by its greeting's end; a
// final verdict stays.
func testMemoryVerdict(t *testing.T, m carrier.Memory) {
	for i, s := range []struct {
		verdict, want carrier.AnsweredBy
	}{
		{"", ""},
		{carrier.AnsweredMachine, carrier.AnsweredMachine},
		{carrier.AnsweredBeep, carrier.AnsweredBeep},
		{carrier.AnsweredMachine, carrier.AnsweredBeep},
		{carrier.AnsweredHuman, carrier.AnsweredBeep},
		{"", carrier.AnsweredBeep},
	} {
		progressed(t, m, carrier.Progress{Ref: "v1", Status: carrier.StatusInProgress, AnsweredBy: s.verdict}, time.Duration(i)*time.Second)
		if got := progressOf(t, m, "v1").AnsweredBy; got != s.want {
			t.Errorf("after %q (step %d): verdict %q, want %q", s.verdict, i, got, s.want)
		}
	}
	progressed(t, m, carrier.Progress{Ref: "v2", AnsweredBy: carrier.AnsweredHuman}, 0)
	progressed(t, m, carrier.Progress{Ref: "v2", AnsweredBy: carrier.AnsweredSilence}, time.Second)
	if got := progressOf(t, m, "v2").AnsweredBy; got != carrier.AnsweredHuman {
		t.Errorf("a person's verdict became %q", got)
	}
}

// testMemoryKeptOnceKnown: the call id, the duration and a decline are kept once said.
func testMemoryKeptOnceKnown(t *testing.T, m carrier.Memory) {
	progressed(t, m, carrier.Progress{Ref: "v1", Status: carrier.StatusQueued}, 0)
	progressed(t, m, carrier.Progress{Ref: "v1", CallID: "call-1", Status: carrier.StatusRinging}, time.Second)
	progressed(t, m, carrier.Progress{Ref: "v1", CallID: "call-2", Status: carrier.StatusInProgress, Declined: true}, 2*time.Second)
	progressed(t, m, carrier.Progress{Ref: "v1", Status: carrier.StatusCompleted, Duration: 42 * time.Second}, 3*time.Second)
	progressed(t, m, carrier.Progress{Ref: "v1", Status: carrier.StatusCompleted, Duration: 43 * time.Second}, 4*time.Second)
	want := carrier.Progress{CallID: "call-1", Ref: "v1", Status: carrier.StatusCompleted, Duration: 42 * time.Second, Declined: true}
	if got := progressOf(t, m, "v1"); got != want {
		t.Errorf("kept %+v, want %+v", got, want)
	}
}

// testMemoryConcurrentProgress: words arriving at once from several nodes add up as if in
// order: none is lost.
func testMemoryConcurrentProgress(t *testing.T, m carrier.Memory) {
	words := []carrier.Progress{
		{Ref: "v1", Status: carrier.StatusQueued, CallID: "call-1"},
		{Ref: "v1", Status: carrier.StatusRinging},
		{Ref: "v1", Status: carrier.StatusInProgress, AnsweredBy: carrier.AnsweredHuman},
		{Ref: "v1", Status: carrier.StatusCompleted, Duration: 9 * time.Second},
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(words))
	for i, p := range words {
		wg.Go(func() { errs <- m.Progressed(t.Context(), p, memoryEpoch.Add(time.Duration(i)*time.Second)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := carrier.Progress{CallID: "call-1", Ref: "v1", Status: carrier.StatusCompleted, AnsweredBy: carrier.AnsweredHuman, Duration: 9 * time.Second}
	if got := progressOf(t, m, "v1"); got != want {
		t.Errorf("kept %+v, want %+v", got, want)
	}
}

// testMemoryOnce: a name is first once, from any number of callers at once.
func testMemoryOnce(t *testing.T, m carrier.Memory) {
	ctx := t.Context()
	for i, s := range []struct {
		key   string
		first bool
	}{{"event-1", true}, {"event-1", false}, {"event-2", true}, {"event-1", false}} {
		if first, err := m.Once(ctx, s.key, memoryEpoch.Add(time.Duration(i)*time.Second)); err != nil || first != s.first {
			t.Errorf("Once(%s) step %d = %v, %v; want %v", s.key, i, first, err, s.first)
		}
	}
	if _, err := m.Once(ctx, "", memoryEpoch); err == nil {
		t.Error("Once accepted an empty key")
	}
	const n = 8
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		firsts int
	)
	for range n {
		wg.Go(func() {
			first, err := m.Once(ctx, "nonce", memoryEpoch)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
			}
			if first {
				firsts++
			}
		})
	}
	wg.Wait()
	if firsts != 1 {
		t.Errorf("%d of %d concurrent callers were first, want 1", firsts, n)
	}
}

// testMemoryAlias: after Alias, the ledger, the answer and the stream are found by either
// name, and repeating the alias, either way round, is harmless.
func testMemoryAlias(t *testing.T, m carrier.Memory) {
	ctx := t.Context()
	progressed(t, m, carrier.Progress{Ref: "call-a", CallID: "h1", Status: carrier.StatusRinging}, 0)
	if err := m.Alias(ctx, "call-a", "request-a"); err != nil {
		t.Fatalf("Alias: %v", err)
	}
	for _, again := range [][2]string{{"call-a", "request-a"}, {"request-a", "call-a"}, {"call-a", "call-a"}} {
		if err := m.Alias(ctx, again[0], again[1]); err != nil {
			t.Errorf("Alias(%s, %s) again: %v", again[0], again[1], err)
		}
	}
	if p := progressOf(t, m, "request-a"); p.Ref != "call-a" || p.CallID != "h1" || p.Status != carrier.StatusRinging {
		t.Errorf("by the alias: %+v, want call-a's word", p)
	}
	progressed(t, m, carrier.Progress{Ref: "request-a", Status: carrier.StatusInProgress}, time.Second)
	if p := progressOf(t, m, "call-a"); p.Status != carrier.StatusInProgress {
		t.Errorf("a word by the alias did not reach the call: %+v", p)
	}

	answer := carrier.Answer{Ref: "request-a", Body: []byte("<Response/>"), At: memoryEpoch}
	if _, first, err := m.Remember(ctx, answer); err != nil || !first {
		t.Fatalf("Remember by the alias: first %v, %v", first, err)
	}
	again := answer
	again.Ref, again.Body = "call-a", []byte("another")
	if kept, first, err := m.Remember(ctx, again); err != nil || first || string(kept.Body) != "<Response/>" {
		t.Errorf("Remember by the call's name = %q, first %v, %v; want the alias's answer", kept.Body, first, err)
	}
	if err := m.Streamed(ctx, "call-a", memoryEpoch); err != nil {
		t.Fatalf("Streamed: %v", err)
	}
	if err := m.Streamed(ctx, "request-a", memoryEpoch); !errors.Is(err, carrier.ErrStreamOpened) {
		t.Errorf("Streamed by the alias after the call's = %v, want ErrStreamOpened", err)
	}
	if err := m.Streamed(ctx, "request-b", memoryEpoch); !errors.Is(err, carrier.ErrCallUnknown) {
		t.Errorf("Streamed of an unknown name = %v, want ErrCallUnknown", err)
	}
}

// testMemoryAliasJoins: what was kept under the second name before Alias (a word from a
// callback that named the call by its request id) joins the call's.
func testMemoryAliasJoins(t *testing.T, m carrier.Memory) {
	ctx := t.Context()
	progressed(t, m, carrier.Progress{Ref: "request-a", CallID: "h1", Status: carrier.StatusQueued}, 0)
	progressed(t, m, carrier.Progress{Ref: "call-a", Status: carrier.StatusInProgress}, time.Second)
	if _, _, err := m.Remember(ctx, carrier.Answer{Ref: "request-a", Body: []byte("first"), At: memoryEpoch}); err != nil {
		t.Fatal(err)
	}
	if err := m.Alias(ctx, "call-a", "request-a"); err != nil {
		t.Fatalf("Alias: %v", err)
	}
	want := carrier.Progress{Ref: "call-a", CallID: "h1", Status: carrier.StatusInProgress}
	for _, name := range []string{"call-a", "request-a"} {
		if got := progressOf(t, m, name); got != want {
			t.Errorf("Progress(%s) = %+v, want %+v", name, got, want)
		}
	}
	if kept, first, err := m.Remember(ctx, carrier.Answer{Ref: "call-a", Body: []byte("second"), At: memoryEpoch}); err != nil || first || string(kept.Body) != "first" {
		t.Errorf("Remember(call-a) = %q, first %v, %v; want the answer kept under the alias", kept.Body, first, err)
	}
	// A third name of the same call, given by its alias, names the call.
	if err := m.Alias(ctx, "request-a", "leg-a"); err != nil {
		t.Fatal(err)
	}
	if got := progressOf(t, m, "leg-a"); got != want {
		t.Errorf("Progress(leg-a) = %+v, want %+v", got, want)
	}
}

// testMemoryAliasTaken: a name that is another call's cannot become this one's.
func testMemoryAliasTaken(t *testing.T, m carrier.Memory) {
	ctx := t.Context()
	if err := m.Alias(ctx, "call-a", "request-a"); err != nil {
		t.Fatal(err)
	}
	if err := m.Alias(ctx, "call-b", "request-a"); !errors.Is(err, carrier.ErrAliasTaken) {
		t.Errorf("Alias of another call's alias = %v, want ErrAliasTaken", err)
	}
	for _, ref := range []string{"call-c", "call-d"} {
		if _, _, err := m.Remember(ctx, carrier.Answer{Ref: ref, Body: []byte(ref), At: memoryEpoch}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Alias(ctx, "call-c", "call-d"); !errors.Is(err, carrier.ErrAliasTaken) {
		t.Errorf("Alias of two answered calls = %v, want ErrAliasTaken", err)
	}
	if err := m.Alias(ctx, "", "x"); err == nil {
		t.Error("Alias accepted an empty ref")
	}
}

// testMemoryAliasConcurrent: words about a call by either name while the names are being
// joined are all found under the call afterwards: none is left behind under the alias.
func testMemoryAliasConcurrent(t *testing.T, m carrier.Memory) {
	ctx := t.Context()
	const calls = 12
	var wg sync.WaitGroup
	errs := make(chan error, calls*4)
	for i := range calls {
		call, request := fmt.Sprintf("call-%d", i), fmt.Sprintf("request-%d", i)
		for _, step := range []func() error{
			func() error {
				return m.Progressed(ctx, carrier.Progress{Ref: request, CallID: "h", Status: carrier.StatusQueued}, memoryEpoch)
			},
			func() error {
				return m.Progressed(ctx, carrier.Progress{Ref: call, AnsweredBy: carrier.AnsweredHuman}, memoryEpoch)
			},
			func() error { return m.Alias(ctx, call, request) },
			func() error {
				return m.Progressed(ctx, carrier.Progress{Ref: request, Status: carrier.StatusCompleted, Duration: time.Second}, memoryEpoch)
			},
		} {
			wg.Go(func() { errs <- step() })
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range calls {
		want := carrier.Progress{CallID: "h", Ref: fmt.Sprintf("call-%d", i), Status: carrier.StatusCompleted,
			AnsweredBy: carrier.AnsweredHuman, Duration: time.Second}
		for _, name := range []string{want.Ref, fmt.Sprintf("request-%d", i)} {
			if got := progressOf(t, m, name); got != want {
				t.Errorf("Progress(%s) = %+v, want %+v", name, got, want)
			}
		}
	}
}
