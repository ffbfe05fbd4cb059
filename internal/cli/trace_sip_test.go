package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A SIP call's journal (obs's testdata: a 200 OK the caller never acknowledged): trace
// shows its signalling timeline, diagnose names the lost answer and the setting to check.
func TestTraceAndDiagnoseSIPCall(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "obs", "testdata", "sip-no-ack.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dataDir := t.TempDir()
	dir := filepath.Join(dataDir, "calls", "c_sip001")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "events.jsonl"), raw, 0o640); err != nil {
		t.Fatal(err)
	}

	out, err := runJournalCommand(t, runTrace, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	order := []string{"signalling", "-41 ← INVITE", "-40 → 180 Ringing", "118 → first RTP out", "121 → 200 OK",
		"32121 ← ACK (transaction terminated)", "carrier"}
	at := 0
	for _, want := range order {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("trace output lacks %q after byte %d:\n%s", want, at, out)
		}
		at += i + len(want)
	}

	out, err = runJournalCommand(t, runDiagnose, dataDir, "c_sip001")
	if err == nil {
		t.Error("diagnose of a broken call returned no error")
	}
	for _, want := range []string{"carrier", "never acknowledged the answer", "HANDSET_SIP_PUBLIC_ADDR", "carrier.signal out 200 OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("diagnose output lacks %q:\n%s", want, out)
		}
	}
}
