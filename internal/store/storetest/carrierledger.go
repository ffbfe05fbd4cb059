package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/store"
)

// The call ledger: what a carrier's webhooks said of a call, merged by rank, found by any
// of its names; and names seen once. Ranks here are the caller's numbers (the gateway
// derives them from carrier statuses: queued 1, ringing 2, answered 3, ended 4).

func word(ref, status string, rank int, after time.Duration) store.CarrierProgress {
	return store.CarrierProgress{Carrier: "telnyx", Ref: ref, Status: status, StatusRank: rank, At: at(after)}
}

func record(t *testing.T, s store.Store, p store.CarrierProgress) store.CarrierProgress {
	t.Helper()
	kept, err := s.RecordCarrierProgress(ctxOf(t), p)
	must(t, "RecordCarrierProgress", err)
	return kept
}

func testCarrierLedgerRanks(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	wantErr(t, "CarrierProgress of an unknown call", errOf(s.CarrierProgress(ctx, "telnyx", "v1")), store.ErrNotFound)

	record(t, s, word("v1", "ringing", 2, 0))
	record(t, s, word("v1", "queued", 1, time.Second)) // late: an earlier rank never overwrites
	first := word("v1", "in-progress", 3, 2*time.Second)
	first.CallID, first.AnsweredBy, first.VerdictRank = "call-1", "machine_start", 1
	record(t, s, first)
	refined := word("v1", "", 0, 3*time.Second)
	refined.AnsweredBy, refined.VerdictRank, refined.CallID = "machine_end_beep", 2, "call-2"
	record(t, s, refined)
	ended := word("v1", "completed", 4, 4*time.Second)
	ended.Duration, ended.Declined = 42*time.Second, true
	record(t, s, ended)
	late := word("v1", "busy", 4, 3500*time.Millisecond) // the first final word stays
	late.AnsweredBy, late.VerdictRank, late.Duration = "human", 2, 43*time.Second
	kept := record(t, s, late)

	want := store.CarrierProgress{Carrier: "telnyx", Ref: "v1", CallID: "call-1", Status: "completed", StatusRank: 4,
		AnsweredBy: "machine_end_beep", VerdictRank: 2, Duration: 42 * time.Second, Declined: true, At: at(4 * time.Second)}
	if d := cmp.Diff(want, kept, cmpOpts...); d != "" {
		t.Errorf("kept after the last word (-want +got):\n%s", d)
	}
	got, err := s.CarrierProgress(ctx, "telnyx", "v1")
	must(t, "CarrierProgress", err)
	if d := cmp.Diff(want, got, cmpOpts...); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	wantErr(t, "the same ref at another carrier", errOf(s.CarrierProgress(ctx, "plivo", "v1")), store.ErrNotFound)
}

// testCarrierLedgerConcurrent: words recorded at once from several nodes lose nothing.
func testCarrierLedgerConcurrent(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	words := []store.CarrierProgress{word("v1", "queued", 1, 0), word("v1", "ringing", 2, time.Second),
		word("v1", "in-progress", 3, 2*time.Second), word("v1", "no-answer", 4, 3*time.Second)}
	words[0].CallID = "call-1"
	words[2].AnsweredBy, words[2].VerdictRank = "human", 2
	var wg sync.WaitGroup
	errs := make(chan error, len(words))
	for _, p := range words {
		wg.Go(func() {
			_, err := s.RecordCarrierProgress(ctx, p)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, "RecordCarrierProgress", err)
	}
	got, err := s.CarrierProgress(ctx, "telnyx", "v1")
	must(t, "CarrierProgress", err)
	if got.Status != "no-answer" || got.CallID != "call-1" || got.AnsweredBy != "human" || !got.At.Equal(at(3*time.Second)) {
		t.Errorf("after concurrent words: %+v", got)
	}
}

func testCarrierLedgerRefused(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	for name, bad := range map[string]store.CarrierProgress{
		"no carrier":    {Ref: "v1", At: at(0)},
		"no ref":        {Carrier: "telnyx", At: at(0)},
		"no time":       {Carrier: "telnyx", Ref: "v1"},
		"negative rank": {Carrier: "telnyx", Ref: "v1", StatusRank: -1, At: at(0)},
	} {
		if _, err := s.RecordCarrierProgress(ctx, bad); err == nil {
			t.Errorf("%s: RecordCarrierProgress accepted %+v", name, bad)
		}
	}
	if _, err := s.CarrierOnce(ctx, "telnyx", "", at(0)); err == nil {
		t.Error("CarrierOnce accepted an empty key")
	}
	if err := s.AliasCarrierCall(ctx, "telnyx", "v1", "", at(0)); err == nil {
		t.Error("AliasCarrierCall accepted an empty alias")
	}
}

// testCarrierOnce: a name is first once per carrier, of any number of callers at once.
func testCarrierOnce(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	for i, c := range []struct {
		carrier, key string
		first        bool
	}{{"telnyx", "e1", true}, {"telnyx", "e1", false}, {"telnyx", "e2", true}, {"plivo", "e1", true}} {
		if first, err := s.CarrierOnce(ctx, c.carrier, c.key, at(time.Duration(i)*time.Second)); err != nil || first != c.first {
			t.Errorf("CarrierOnce(%s, %s) step %d = %v, %v; want %v", c.carrier, c.key, i, first, err, c.first)
		}
	}
	const n = 8
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		firsts int
		errs   []error
	)
	for range n {
		wg.Go(func() {
			first, err := s.CarrierOnce(ctx, "telnyx", "nonce", at(0))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if first {
				firsts++
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if firsts != 1 {
		t.Errorf("%d of %d concurrent callers were first, want 1", firsts, n)
	}
}

// testCarrierAlias: a call is found by either name, for its answer, its stream and its
// ledger entry; a name is one call's only.
func testCarrierAlias(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	record(t, s, word("call-a", "ringing", 2, 0))
	must(t, "AliasCarrierCall", s.AliasCarrierCall(ctx, "telnyx", "call-a", "req-a", at(0)))
	must(t, "AliasCarrierCall again", s.AliasCarrierCall(ctx, "telnyx", "call-a", "req-a", at(time.Second)))
	must(t, "AliasCarrierCall the other way", s.AliasCarrierCall(ctx, "telnyx", "req-a", "call-a", at(time.Second)))

	if kept := record(t, s, word("req-a", "in-progress", 3, time.Second)); kept.Ref != "call-a" || kept.Status != "in-progress" {
		t.Errorf("a word by the alias kept %+v, want call-a's entry", kept)
	}
	if got, err := s.CarrierProgress(ctx, "telnyx", "req-a"); err != nil || got.Ref != "call-a" || got.Status != "in-progress" {
		t.Errorf("CarrierProgress by the alias = %+v, %v", got, err)
	}

	c := store.CarrierCall{Carrier: "telnyx", Ref: "req-a", Answer: []byte("answer"), CreatedAt: at(0)}
	kept, first, err := s.RememberCarrierCall(ctx, c)
	if err != nil || !first || kept.Ref != "call-a" {
		t.Errorf("RememberCarrierCall by the alias = %+v, first %v, %v; want kept as call-a's", kept, first, err)
	}
	c.Ref, c.Answer = "call-a", []byte("another")
	if kept, first, err := s.RememberCarrierCall(ctx, c); err != nil || first || string(kept.Answer) != "answer" {
		t.Errorf("RememberCarrierCall by the name = %q, first %v, %v; want the alias's answer", kept.Answer, first, err)
	}
	must(t, "OpenCarrierStream by the name", s.OpenCarrierStream(ctx, "telnyx", "call-a", at(time.Second)))
	wantErr(t, "OpenCarrierStream by the alias", s.OpenCarrierStream(ctx, "telnyx", "req-a", at(time.Second)), store.ErrDuplicate)

	// Another call cannot take the name, at this carrier; at another one it is free.
	wantErr(t, "AliasCarrierCall to another call", s.AliasCarrierCall(ctx, "telnyx", "call-b", "req-a", at(0)), store.ErrDuplicate)
	must(t, "AliasCarrierCall at another carrier", s.AliasCarrierCall(ctx, "plivo", "call-b", "req-a", at(0)))
	wantErr(t, "the alias at another carrier", errOf(s.CarrierProgress(ctx, "plivo", "req-a")), store.ErrNotFound)
}

// testCarrierAliasMoves: what was kept under a name before it became an alias joins the
// call's entries; two answered calls cannot become one.
func testCarrierAliasMoves(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	early := word("req-a", "queued", 1, 0)
	early.CallID = "call-1"
	record(t, s, early)
	record(t, s, word("call-a", "in-progress", 3, time.Second))
	_, _, err := s.RememberCarrierCall(ctx, store.CarrierCall{Carrier: "telnyx", Ref: "req-a", Answer: []byte("first"), CreatedAt: at(0)})
	must(t, "RememberCarrierCall", err)
	must(t, "AliasCarrierCall", s.AliasCarrierCall(ctx, "telnyx", "call-a", "req-a", at(2*time.Second)))

	for _, name := range []string{"call-a", "req-a"} {
		got, err := s.CarrierProgress(ctx, "telnyx", name)
		if err != nil || got.Ref != "call-a" || got.Status != "in-progress" || got.CallID != "call-1" || !got.At.Equal(at(time.Second)) {
			t.Errorf("CarrierProgress(%s) = %+v, %v; want both words joined under call-a", name, got, err)
		}
	}
	if kept, first, err := s.RememberCarrierCall(ctx, store.CarrierCall{Carrier: "telnyx", Ref: "call-a", Answer: []byte("x"), CreatedAt: at(0)}); err != nil || first || string(kept.Answer) != "first" {
		t.Errorf("RememberCarrierCall(call-a) = %q, first %v, %v; want the answer kept under the alias", kept.Answer, first, err)
	}
	// A third name given by the alias names the same call.
	must(t, "AliasCarrierCall by the alias", s.AliasCarrierCall(ctx, "telnyx", "req-a", "leg-a", at(3*time.Second)))
	if got, err := s.CarrierProgress(ctx, "telnyx", "leg-a"); err != nil || got.Ref != "call-a" {
		t.Errorf("CarrierProgress(leg-a) = %+v, %v; want call-a's", got, err)
	}

	for _, ref := range []string{"call-c", "call-d"} {
		_, _, err := s.RememberCarrierCall(ctx, store.CarrierCall{Carrier: "telnyx", Ref: ref, Answer: []byte(ref), CreatedAt: at(0)})
		must(t, "RememberCarrierCall", err)
	}
	wantErr(t, "AliasCarrierCall of two answered calls", s.AliasCarrierCall(ctx, "telnyx", "call-c", "call-d", at(0)), store.ErrDuplicate)
	if kept, _, err := s.RememberCarrierCall(ctx, store.CarrierCall{Carrier: "telnyx", Ref: "call-d", Answer: []byte("x"), CreatedAt: at(0)}); err != nil || string(kept.Answer) != "call-d" {
		t.Errorf("a refused alias changed call-d: %q, %v", kept.Answer, err)
	}
}

// testCarrierLedgerPrune: ledger entries (by their latest word), aliases and names seen
// once go with the answers.
func testCarrierLedgerPrune(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	record(t, s, word("old", "ringing", 2, 0))
	record(t, s, word("lively", "ringing", 2, 0))
	record(t, s, word("lively", "in-progress", 3, 2*time.Hour)) // its latest word is recent
	must(t, "AliasCarrierCall", s.AliasCarrierCall(ctx, "telnyx", "old", "old-alias", at(0)))
	first, err := s.CarrierOnce(ctx, "telnyx", "old-event", at(0))
	must(t, "CarrierOnce", err)
	if !first {
		t.Fatal("a new name was not first")
	}
	_, err = s.CarrierOnce(ctx, "telnyx", "new-event", at(2*time.Hour))
	must(t, "CarrierOnce", err)

	n, err := s.PruneCarrierCalls(ctx, at(time.Hour))
	must(t, "PruneCarrierCalls", err)
	if n != 3 {
		t.Errorf("pruned %d entries, want 3 (a ledger entry, an alias, a name seen once)", n)
	}
	wantErr(t, "a pruned ledger entry", errOf(s.CarrierProgress(ctx, "telnyx", "old")), store.ErrNotFound)
	if got, err := s.CarrierProgress(ctx, "telnyx", "lively"); err != nil || got.Status != "in-progress" {
		t.Errorf("a recent entry: %+v, %v; want it kept", got, err)
	}
	if first, err := s.CarrierOnce(ctx, "telnyx", "old-event", at(3*time.Hour)); err != nil || !first {
		t.Errorf("a pruned name: first %v, %v; want it forgotten", first, err)
	}
	if first, err := s.CarrierOnce(ctx, "telnyx", "new-event", at(3*time.Hour)); err != nil || first {
		t.Errorf("a kept name: first %v, %v; want it remembered", first, err)
	}
	// The pruned alias is free for another call.
	must(t, "AliasCarrierCall after the prune", s.AliasCarrierCall(ctx, "telnyx", "other", "old-alias", at(3*time.Hour)))
}

func errOf[T any](_ T, err error) error { return err }
