package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/bench"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/testpeer"
)

// --ramp is a float: NaN (which every comparison rejects) and infinity are refused like 0.
func TestBenchRefusesABadRamp(t *testing.T) {
	for _, ramp := range []string{"0", "-1", "NaN", "Inf"} {
		if code, out := runCmd(t, nil, "bench", "--ramp", ramp); code != 2 || !strings.Contains(out, "--ramp a finite number") {
			t.Errorf("--ramp %s: %d %s", ramp, code, out)
		}
	}
}

// handset bench, in process and small, through each carrier's fake: every figure of the
// report is measured, the calls are held and take turns, and nothing failed. Timing is
// bench's to measure, not this test's to assert.
func TestBenchReportsEverything(t *testing.T) { forEachCarrier(t, testBenchReportsEverything) }

func testBenchReportsEverything(t *testing.T, kit simkit.Kit) {
	benchReportsEverything(t, kit, "6s", false)
}

// benchReportsEverything is testBenchReportsEverything with a hold of its own: a line
// that hears reply ends in the audio (SIP) tells a turn over half a second later. With
// arrival, the kit's callers time Handset's audio (simkit.ArrivalMeter) and the report says.
func benchReportsEverything(t *testing.T, kit simkit.Kit, hold string, arrival bool) {
	testpeer.Slow(t, "a "+hold+" bench run")
	code, out := runCmd(t, []string{"HANDSET_LOG_LEVEL=error"}, "bench", "--carrier", kit.Name(), "--in-process", "--calls", "4", "--duration", hold, "--ramp", "10", "--json")
	if code != 0 {
		t.Fatalf("bench exited %d:\n%s", code, out)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("not a report: %v\n%s", err, out)
	}
	if err := rep.Complete(); err != nil {
		t.Error(err)
	}
	if rep.CallsHeld != 4 || rep.TurnsCompleted < 1 || rep.Errors.Total != 0 || rep.Latency.Source != "journals" {
		t.Errorf("report: %+v", rep)
	}
	if rep.After.CallsActive != 0 {
		t.Errorf("%d calls still active after the bench", rep.After.CallsActive)
	}
	if got := rep.Arrival != nil && rep.Arrival.Samples > 0 && rep.Arrival.P99 >= rep.Arrival.P50; got != arrival {
		t.Errorf("arrival lateness %+v, want it reported: %t", rep.Arrival, arrival)
	}
}

// TestBenchRefusesNoCallsAndATargetWithoutItsSecret: usage errors, before anything starts.
func TestBenchRefusesNoCallsAndATargetWithoutItsSecret(t *testing.T) {
	if code, out := runCmd(t, nil, "bench", "--calls", "0"); code != 2 || !strings.Contains(out, "positive") {
		t.Errorf("--calls 0: %d %s", code, out)
	}
	if code, out := runCmd(t, nil, "bench", "--target", "http://127.0.0.1:1"); code != 2 || !strings.Contains(out, "--twilio-token") {
		t.Errorf("--target without its token: %d %s", code, out)
	}
}

func TestBenchDriftLimit(t *testing.T) {
	flat := &bench.Drift{RSSPercent: 3.2, GoroutinesPercent: -0.4}
	if err := checkDrift(flat, 5); err != nil {
		t.Errorf("a drift within the limit failed: %v", err)
	}
	if err := checkDrift(&bench.Drift{RSSPercent: 7.5}, 5); err == nil {
		t.Error("memory grown by 7.5 % passed a 5 % limit")
	}
	if err := checkDrift(&bench.Drift{GoroutinesPercent: -6}, 5); err == nil {
		t.Error("goroutines down by 6 % passed a 5 % limit")
	}
	if err := checkDrift(nil, 5); err == nil {
		t.Error("a hold whose drift was never measured passed")
	}
	if err := checkDrift(nil, 0); err != nil {
		t.Errorf("no limit asked, yet: %v", err)
	}
	var out, errb strings.Builder
	code := Main(context.Background(), []string{"bench", "--max-drift", "5", "--duration", "1m"}, Env{Stdout: &out, Stderr: &errb})
	if code != 2 || !strings.Contains(errb.String(), "--max-drift") {
		t.Errorf("--max-drift with a one-minute hold: exit %d (%s), want 2 naming --max-drift", code, errb.String())
	}
}

// TestUnknownCarrierIsRefusedWithTheList: bench and simulate name the carriers they can
// simulate when --carrier names none of them.
func TestUnknownCarrierIsRefusedWithTheList(t *testing.T) {
	for _, args := range [][]string{{"bench", "--carrier", "nope"}, {"simulate", "--carrier", "nope", "--say", "hello"}} {
		code, out := runCmd(t, nil, args...)
		if code != 2 || !strings.Contains(out, `no simulated carrier "nope"`) || !strings.Contains(out, "twilio") {
			t.Errorf("%s: exit %d:\n%s", strings.Join(args, " "), code, out)
		}
	}
}

// The Handset bench starts gets the load's settings and the Go runtime's tuning from
// bench's environment, and nothing else of it: not a HANDSET_ setting of the shell's.
func TestBenchChildEnvironment(t *testing.T) {
	parent := map[string]string{"PATH": "/bin", "GOGC": "400", "GOMEMLIMIT": "2GiB", "HANDSET_AGENT": "hermes", "SECRET": "x"}
	lookup := func(k string) (string, bool) { v, ok := parent[k]; return v, ok }
	got := benchChildEnv("/tmp/h", map[string]string{"HANDSET_AGENT": "openai"}, lookup)
	slices.Sort(got)
	want := []string{"GOGC=400", "GOMEMLIMIT=2GiB", "HANDSET_AGENT=openai", "HOME=/tmp/h", "PATH=/bin"}
	if !slices.Equal(got, want) {
		t.Fatalf("child environment %q, want %q", got, want)
	}
}
