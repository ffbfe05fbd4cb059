package doctor

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func fixed(r Result) func(context.Context) Result {
	return func(context.Context) Result { return r }
}

// lateCheck is a check that ignores its deadline and answers only once late is closed:
// after Run has given up on it, whatever the scheduling (a safety net of a minute stands in
// for a Run that waits for it, which the results then show).
func lateCheck(late <-chan struct{}, onStart func()) func(context.Context) Result {
	return func(ctx context.Context) Result {
		if onStart != nil {
			onStart()
		}
		<-ctx.Done()
		select {
		case <-late:
		case <-time.After(time.Minute):
		}
		return Result{Status: OK}
	}
}

// TestRunParallelAndBounded: slow checks run at once, a hung check fails after its own
// timeout, and the results keep the checks' order.
func TestRunParallelAndBounded(t *testing.T) {
	var running, peak atomic.Int32
	allIn := make(chan struct{}) // closed when the three slow checks are running together
	slow := func(ctx context.Context) Result {
		n := running.Add(1)
		if n == 3 {
			close(allIn)
		}
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		defer running.Add(-1)
		// Checks run one after another would each wait here until their timeout.
		select {
		case <-allIn:
		case <-ctx.Done():
			return Result{Status: Fail, Detail: "cancelled before the others ran"}
		}
		select {
		case <-time.After(150 * time.Millisecond):
			return Result{Status: OK, Detail: "slow but fine"}
		case <-ctx.Done():
			return Result{Status: Fail, Detail: "cancelled"}
		}
	}
	late := make(chan struct{})
	checks := []Check{
		{Section: "a", Name: "one", Run: slow},
		{Section: "b", Name: "hung", Run: lateCheck(late, nil)},
		{Section: "a", Name: "two", Run: slow},
		{Section: "a", Name: "three", Run: slow},
		{Section: "c", Name: "quick", Run: fixed(Result{Status: Warn, Detail: "meh", Fix: "do it"})},
	}
	// Parallelism is the slow checks meeting; the bound is the hung check's timeout
	// result. Wall time is left to load, not asserted: the timeout leaves the slow checks
	// ample time to meet and finish.
	res := Run(context.Background(), checks, Options{Timeout: 2 * time.Second})
	close(late)
	if peak.Load() < 3 {
		t.Errorf("at most %d slow checks ran at once, want 3", peak.Load())
	}
	want := []string{"one", "hung", "two", "three", "quick"}
	for i, r := range res {
		if r.Name != want[i] || r.Section != checks[i].Section {
			t.Fatalf("result %d is %s/%s, want %s/%s", i, r.Section, r.Name, checks[i].Section, want[i])
		}
	}
	if res[0].Status != OK || res[0].Took < 150*time.Millisecond {
		t.Errorf("slow check: %+v", res[0])
	}
	h := res[1]
	if h.Status != Fail || !strings.Contains(h.Detail, "timed out after 2s") || h.Fix == "" {
		t.Errorf("hung check: %+v", h)
	}
	if res[4].Status != Warn || res[4].Fix != "do it" {
		t.Errorf("quick check: %+v", res[4])
	}
}

// TestRunTimeoutMessage: the timeout names the limit as people write it.
func TestRunTimeoutMessage(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{5 * time.Second: "5s", 1500 * time.Millisecond: "1.5s", 250 * time.Millisecond: "250ms"} {
		if got := seconds(d); got != want {
			t.Errorf("seconds(%v) = %q, want %q", d, got, want)
		}
	}
	late := make(chan struct{})
	defer close(late)
	res := Run(context.Background(), []Check{{Section: "s", Name: "n", Run: lateCheck(late, nil)}},
		Options{Timeout: 250 * time.Millisecond})
	if res[0].Status != Fail || res[0].Detail != "timed out after 250ms with no answer" {
		t.Errorf("%+v", res[0])
	}
}

// TestCheckGivingUpWithTheDeadlineIsATimeout: a check that fails in its own words when the
// deadline ends its requests (its answer racing the runner's) still reads as the timeout,
// with the fix that gives more time.
func TestCheckGivingUpWithTheDeadlineIsATimeout(t *testing.T) {
	t.Parallel()
	giveUp := func(ctx context.Context) Result {
		<-ctx.Done()
		return Result{Status: Fail, Detail: "no answer in time", Fix: "start it"}
	}
	for range 20 { // either of the runner's two ways of seeing it
		res := Run(context.Background(), []Check{{Section: "s", Name: "n", Run: giveUp}}, Options{Timeout: 20 * time.Millisecond})
		if res[0].Status != Fail || !strings.HasPrefix(res[0].Detail, "timed out after 20ms") || !strings.Contains(res[0].Fix, "--timeout") {
			t.Fatalf("%+v", res[0])
		}
	}
}

func TestRunNoNetwork(t *testing.T) {
	t.Parallel()
	var ran atomic.Bool
	res := Run(context.Background(), []Check{
		{Section: "agent", Name: "reachable", Network: true, Run: func(context.Context) Result { ran.Store(true); return Result{Status: Fail} }},
		{Section: "store", Name: "data dir", Run: fixed(Result{Status: OK, Detail: "writable"})},
	}, Options{NoNetwork: true})
	if ran.Load() {
		t.Error("a network check ran under NoNetwork")
	}
	if res[0].Status != Skip || !strings.Contains(res[0].Detail, "--no-network") {
		t.Errorf("network check: %+v", res[0])
	}
	if res[1].Status != OK {
		t.Errorf("local check: %+v", res[1])
	}
}

func TestRunPanicAndDefaults(t *testing.T) {
	t.Parallel()
	res := Run(context.Background(), []Check{
		{Section: "x", Name: "boom", Run: func(context.Context) Result { panic("kaput") }},
		{Section: "x", Name: "plain", Run: fixed(Result{})},
		{Section: "x", Name: "renamed", Run: fixed(Result{Section: "y", Name: "other", Status: Skip})},
		{Section: "x", Name: "nil"},
	}, Options{})
	if res[0].Status != Fail || !strings.Contains(res[0].Detail, "kaput") {
		t.Errorf("panic: %+v", res[0])
	}
	if res[1].Status != OK || res[1].Section != "x" || res[1].Name != "plain" {
		t.Errorf("defaults: %+v", res[1])
	}
	if res[2].Section != "y" || res[2].Name != "other" {
		t.Errorf("a check's own names are kept: %+v", res[2])
	}
	if res[3].Status != Skip {
		t.Errorf("nil Run: %+v", res[3])
	}
}

func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	late := make(chan struct{})
	defer close(late)
	// Interrupted while the check runs.
	res := Run(ctx, []Check{{Section: "s", Name: "n", Run: lateCheck(late, cancel)}}, Options{Timeout: time.Minute})
	if res[0].Status != Fail || !strings.Contains(res[0].Detail, "interrupted") {
		t.Errorf("%+v", res[0])
	}
}

func TestPrint(t *testing.T) {
	t.Parallel()
	results := []Result{
		{Section: "agent", Name: "reachable", Status: OK, Detail: "Hermes 0.18.2"},
		{Section: "stt", Name: "key", Status: Fail, Detail: "rejected\n(HTTP 401)", Fix: "set DEEPGRAM_API_KEY"},
		{Section: "agent", Name: "model", Status: Warn, Detail: "not listed", Fix: "pick one", Took: 1200 * time.Millisecond},
		{Section: "carrier", Name: "account", Status: Skip, Detail: "not configured"},
	}
	var b bytes.Buffer
	Print(&b, results, false)
	want := `agent
  ✓ reachable: Hermes 0.18.2
  ! model: not listed (1.2s)
      fix: pick one

stt
  ✗ key: rejected (HTTP 401)
      fix: set DEEPGRAM_API_KEY

carrier
  - account: not configured

1 ok, 1 warning, 1 failed, 1 skipped
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	Print(&b, results, true)
	if !strings.Contains(b.String(), "\x1b[31m✗\x1b[0m") || !strings.Contains(b.String(), "\x1b[31m1 ok") {
		t.Errorf("colour output: %q", b.String())
	}
	if !Failed(results) || Failed(results[:1]) {
		t.Error("Failed")
	}
}

func TestResultJSON(t *testing.T) {
	t.Parallel()
	r := Result{Section: "tts", Name: "voice", Status: Fail, Detail: "missing", Fix: "set it", Took: 1500 * time.Millisecond}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"section":"tts","name":"voice","status":"fail","detail":"missing","fix":"set it","took_ms":1500}`
	if string(b) != want {
		t.Errorf("got %s want %s", b, want)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || back != r {
		t.Errorf("round trip: %+v %v", back, err)
	}
}
