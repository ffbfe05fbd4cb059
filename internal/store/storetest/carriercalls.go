package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/store"
)

// The carrier-call memory: a webhook's first answer is kept once for every node, a stream
// opens once, and old entries are pruned.

func sampleCarrierCall(ref string, created time.Time) store.CarrierCall {
	return store.CarrierCall{
		Carrier: "twilio", Ref: ref, RequestKey: "idem-" + ref,
		Answer: []byte(`<?xml version="1.0"?><Response><Connect><Stream url="wss://h/twilio/stream"/></Connect></Response>`), CreatedAt: created,
	}
}

func testCarrierCallRemember(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	first := sampleCarrierCall("CA1", at(0))
	kept, isFirst, err := s.RememberCarrierCall(ctx, first)
	must(t, "RememberCarrierCall", err)
	if !isFirst {
		t.Error("the first entry for a call was not reported first")
	}
	if d := cmp.Diff(first, kept, cmpOpts...); d != "" {
		t.Errorf("kept entry (-want +got):\n%s", d)
	}

	// A second answer for the same call is not kept: the first comes back, as stored.
	second := sampleCarrierCall("CA1", at(time.Second))
	second.RequestKey, second.Answer = "another", []byte("<Response><Hangup/></Response>")
	kept, isFirst, err = s.RememberCarrierCall(ctx, second)
	must(t, "RememberCarrierCall again", err)
	if isFirst {
		t.Error("a second entry for the same call was reported first")
	}
	if d := cmp.Diff(first, kept, cmpOpts...); d != "" {
		t.Errorf("a repeat did not get the first entry back (-want +got):\n%s", d)
	}

	// The same ref at another carrier, and another ref, are other calls.
	other := sampleCarrierCall("CA1", at(0))
	other.Carrier = "telnyx"
	if _, isFirst, err := s.RememberCarrierCall(ctx, other); err != nil || !isFirst {
		t.Errorf("same ref at another carrier: first %v err %v, want a new entry", isFirst, err)
	}
	if _, isFirst, err := s.RememberCarrierCall(ctx, sampleCarrierCall("CA2", at(0))); err != nil || !isFirst {
		t.Errorf("another ref: first %v err %v, want a new entry", isFirst, err)
	}

	// An empty request key is kept as empty; bad entries are refused.
	bare := sampleCarrierCall("CA3", at(0))
	bare.RequestKey = ""
	if kept, _, err := s.RememberCarrierCall(ctx, bare); err != nil || kept.RequestKey != "" {
		t.Errorf("entry without a request key: %+v, %v", kept, err)
	}
	for name, bad := range map[string]store.CarrierCall{
		"no carrier": {Ref: "CA9", Answer: []byte("x"), CreatedAt: at(0)},
		"no ref":     {Carrier: "twilio", Answer: []byte("x"), CreatedAt: at(0)},
		"no answer":  {Carrier: "twilio", Ref: "CA9", CreatedAt: at(0)},
		"no time":    {Carrier: "twilio", Ref: "CA9", Answer: []byte("x")},
	} {
		if _, _, err := s.RememberCarrierCall(ctx, bad); err == nil {
			t.Errorf("%s: RememberCarrierCall accepted %+v", name, bad)
		}
	}
}

func testCarrierCallStreamOnce(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	wantErr(t, "OpenCarrierStream of an unknown call", s.OpenCarrierStream(ctx, "twilio", "CA1", at(time.Second)), store.ErrNotFound)
	_, _, err := s.RememberCarrierCall(ctx, sampleCarrierCall("CA1", at(0)))
	must(t, "RememberCarrierCall", err)
	must(t, "OpenCarrierStream", s.OpenCarrierStream(ctx, "twilio", "CA1", at(time.Second)))
	wantErr(t, "OpenCarrierStream again", s.OpenCarrierStream(ctx, "twilio", "CA1", at(2*time.Second)), store.ErrDuplicate)
	wantErr(t, "OpenCarrierStream at another carrier", s.OpenCarrierStream(ctx, "telnyx", "CA1", at(time.Second)), store.ErrNotFound)

	// The entry now says when its stream opened (the first time), and a repeat sees it.
	kept, isFirst, err := s.RememberCarrierCall(ctx, sampleCarrierCall("CA1", at(3*time.Second)))
	must(t, "RememberCarrierCall after the stream", err)
	if isFirst || !kept.StreamedAt.Equal(at(time.Second)) || !kept.CreatedAt.Equal(at(0)) {
		t.Errorf("after the stream opened: first %v, streamed %v, created %v", isFirst, kept.StreamedAt, kept.CreatedAt)
	}
}

// testCarrierCallConcurrent: nodes answering the same webhook at once agree on one answer,
// and of streams opened at once exactly one succeeds.
func testCarrierCallConcurrent(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	const n = 8
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers = map[string]int{}
		firsts  int
		opened  int
		errs    []error
	)
	for i := range n {
		wg.Go(func() {
			c := sampleCarrierCall("CA1", at(time.Duration(i)*time.Millisecond))
			c.Answer = fmt.Appendf(nil, "answer %d", i)
			kept, first, err := s.RememberCarrierCall(ctx, c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			answers[string(kept.Answer)]++
			if first {
				firsts++
			}
		})
	}
	wg.Wait()
	for i := range n {
		wg.Go(func() {
			err := s.OpenCarrierStream(ctx, "twilio", "CA1", at(time.Second+time.Duration(i)*time.Millisecond))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				opened++
			case !isDuplicate(err):
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(answers) != 1 || firsts != 1 {
		t.Errorf("concurrent remembers: answers %v, %d first; want one answer, one first", answers, firsts)
	}
	if opened != 1 {
		t.Errorf("%d concurrent stream opens succeeded, want 1", opened)
	}
}

func testCarrierCallPrune(t *testing.T, s store.Store) {
	ctx := ctxOf(t)
	for i, ref := range []string{"CA1", "CA2", "CA3"} {
		_, _, err := s.RememberCarrierCall(ctx, sampleCarrierCall(ref, at(time.Duration(i)*time.Hour)))
		must(t, "RememberCarrierCall", err)
	}
	must(t, "OpenCarrierStream", s.OpenCarrierStream(ctx, "twilio", "CA1", at(time.Minute)))
	n, err := s.PruneCarrierCalls(ctx, at(90*time.Minute))
	must(t, "PruneCarrierCalls", err)
	if n != 2 {
		t.Errorf("pruned %d entries, want the 2 created before the cut", n)
	}
	// The pruned calls are forgotten: a new answer is kept for them.
	if _, first, err := s.RememberCarrierCall(ctx, sampleCarrierCall("CA1", at(3*time.Hour))); err != nil || !first {
		t.Errorf("a pruned call: first %v err %v, want it forgotten", first, err)
	}
	if _, first, err := s.RememberCarrierCall(ctx, sampleCarrierCall("CA3", at(3*time.Hour))); err != nil || first {
		t.Errorf("a kept call: first %v err %v, want it remembered", first, err)
	}
	if n, err := s.PruneCarrierCalls(ctx, at(90*time.Minute)); err != nil || n != 0 {
		t.Errorf("pruning again: %d, %v; want nothing left to prune", n, err)
	}
}

func isDuplicate(err error) bool { return errors.Is(err, store.ErrDuplicate) }
