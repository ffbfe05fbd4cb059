package storetest

import (
	"errors"
	"testing"

	"github.com/handset-voice/handset/internal/store"
)

// What each store's upgrade tests check once a database from an older schema is opened.

// CheckUpgradedCallListing checks a store opened on a database whose schema predates the
// call listing (migration 0006) and that kept the ended call "old" with the caller's line
// "Où est ma commande ?": the call has an empty summary and its line is searchable.
func CheckUpgradedCallListing(t *testing.T, s store.Store) {
	t.Helper()
	ctx := ctxOf(t)
	c, err := s.Call(ctx, "old")
	if err != nil || c.Summary != (store.CallSummary{}) || c.Outcome != "caller_hangup" {
		t.Fatalf("Call(old) = %+v, %v; want the call with an empty summary", c, err)
	}
	for _, text := range []string{"ou est", "COMMANDE"} {
		got, err := s.Calls(ctx, store.ListCalls{Text: text})
		if err != nil || len(got) != 1 || got[0].ID != "old" {
			t.Errorf("Calls(Text %q) = %v, %v; want the line written before the upgrade", text, got, err)
		}
	}
}

// CheckUpgradedCarrierCall checks a store opened on a database whose schema predates the
// call ledger and that kept the answer "answer" for twilio's call CA1: the answer is still
// found, the ledger starts empty, and the call takes an alias.
func CheckUpgradedCarrierCall(t *testing.T, s store.Store) {
	t.Helper()
	ctx := ctxOf(t)
	kept, first, err := s.RememberCarrierCall(ctx, store.CarrierCall{Carrier: "twilio", Ref: "CA1", Answer: []byte("new"), CreatedAt: at(0)})
	if err != nil || first || string(kept.Answer) != "answer" {
		t.Errorf("RememberCarrierCall after the upgrade = %q, first %v, %v; want the answer kept before", kept.Answer, first, err)
	}
	if _, err := s.CarrierProgress(ctx, "twilio", "CA1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CarrierProgress of a call from before = %v, want ErrNotFound", err)
	}
	if err := s.AliasCarrierCall(ctx, "twilio", "CA1", "R1", at(0)); err != nil {
		t.Fatal(err)
	}
	if err := s.OpenCarrierStream(ctx, "twilio", "R1", at(0)); err != nil {
		t.Errorf("OpenCarrierStream by a new alias of a call from before: %v", err)
	}
}
