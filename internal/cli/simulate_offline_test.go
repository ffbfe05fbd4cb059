//go:build embedded

package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSimulateAudioOffline: with HANDSET_STT unset, --audio is heard by sphinx, the
// offline recogniser this build has, and the report says so.
func TestSimulateAudioOffline(t *testing.T) {
	_, env := withFakes(t, nil, "HANDSET_STT=", "HANDSET_VAD=energy")
	file := callerWAV(t, fliteSpeech(t, "rms", "what are your opening hours on saturday", 8000))
	code, out := runCmd(t, env, "simulate", "--audio", file, "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var rep simulateReport
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if rep.STT != "sphinx" || !strings.Contains(rep.STTNote, "HANDSET_STT is not set") || len(rep.Turns) != 1 {
		t.Fatalf("report %+v, want one turn heard by sphinx, saying why", rep)
	}
	if n := keywordsIn(rep.Turns[0].Caller, "opening", "hours", "saturday"); n < 2 {
		t.Errorf("sphinx heard %q", rep.Turns[0].Caller)
	}
}
