package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/bench"
)

// --ramp is a float: NaN (which every comparison rejects) and infinity are refused like 0.
func TestBenchRefusesABadRamp(t *testing.T) {
	for _, ramp := range []string{"0", "-1", "NaN", "Inf"} {
		if code, out := runCmd(t, nil, "bench", "--ramp", ramp); code != 2 || !strings.Contains(out, "--ramp a finite number") {
			t.Errorf("--ramp %s: %d %s", ramp, code, out)
		}
	}
}

// handset bench, in process and small: every figure of the report is measured, the
// calls are held and take turns, and nothing failed. Timing is bench's to measure, not
// this test's to assert.
func TestBenchReportsEverything(t *testing.T) {
	code, out := runCmd(t, []string{"HANDSET_LOG_LEVEL=error"}, "bench", "--in-process", "--calls", "4", "--duration", "6s", "--ramp", "10", "--json")
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
	if code, out := runCmd(t, nil, "bench", "--calls", "0"); code != 2 || !strings.Contains(out, "positive") {
		t.Errorf("--calls 0: %d %s", code, out)
	}
	if code, out := runCmd(t, nil, "bench", "--target", "http://127.0.0.1:1"); code != 2 || !strings.Contains(out, "--twilio-token") {
		t.Errorf("--target without its token: %d %s", code, out)
	}
}
