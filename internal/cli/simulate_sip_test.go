package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/testpeer"
)

// The SIP trunk's kit is a tool kit (simkit.RegisterTool): RTP carries no marks, so the
// whole-call scenarios of forEachCarrier leave it out, and simulate and bench, which hear
// reply ends in its audio instead, are tested over it here.

func sipKit(t *testing.T) simkit.Kit {
	t.Helper()
	k, err := simkit.Find("sip")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSimulateAudioOverSIP(t *testing.T) { testSimulateAudio(t, sipKit(t)) }

func TestBenchReportsEverythingOverSIP(t *testing.T) {
	benchReportsEverything(t, sipKit(t), "10s", true)
}

// simulate --say over a SIP trunk with a greeting: the greeting and each turn's reply are
// told apart by the silences between them, so every turn is answered and reported in order.
func TestSimulateSaysOverSIP(t *testing.T) {
	testpeer.Slow(t, "a simulated call with a greeting and two turns in real time")
	_, env := withFakes(t, []string{"what are your opening hours", "thank you"}, "HANDSET_VAD=energy",
		"HANDSET_FIRST_MESSAGE=Hello, thanks for calling. How can I help you today?")
	code, out := runCmd(t, env, "simulate", "--carrier", "sip", "--say", "what are your opening hours", "--say", "thank you", "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var rep simulateReport
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(rep.Turns) != 2 || rep.Turns[0].Reply == "" || rep.Turns[1].Reply == "" || rep.Greeting == "" {
		t.Fatalf("report %+v, want a greeting and two answered turns", rep)
	}
}

// bench --target cannot load a running Handset over SIP: the simulated trunk calls the
// listener it chose for the Handset bench starts.
func TestBenchRefusesATargetOverSIP(t *testing.T) {
	code, out := runCmd(t, nil, "bench", "--carrier", "sip", "--target", "http://127.0.0.1:1", "--carrier-secret", "x")
	if code != 2 || !strings.Contains(out, "--target with --carrier sip") {
		t.Errorf("exit %d, want 2 saying --target does not go with SIP:\n%s", code, out)
	}
}
