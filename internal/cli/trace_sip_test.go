package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
	"github.com/handset-voice/handset/internal/obs"
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

// A real SIP call through serve, the greeting played and the caller hung up: trace shows
// its signalling in the order it happened, the first RTP out with it, and diagnose finds
// nothing broken.
func TestTraceOfASIPCallThroughServe(t *testing.T) {
	r, trunk := startServeSIP(t, nil)
	caller, err := sipsim.NewCaller(sipsim.CallerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, trunk, sipsim.CallOptions{From: "+15551230000", To: "+15557650000"})
	if err != nil {
		t.Fatalf("%v\n%s", err, r.logs.String())
	}
	r.waitEvent(obs.PlayoutDone, nil, 20*time.Second) // the greeting played
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	events := r.journal()

	out, err := runJournalCommand(t, runTrace, r.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	at := 0
	for _, want := range []string{"signalling", "← INVITE", "→ 180 Ringing", "→ 200 OK", "← ACK", "← BYE (caller)", "✓ carrier"} {
		i := strings.Index(out[at:], want)
		if i < 0 {
			t.Fatalf("trace output lacks %q after byte %d:\n%s\njournal:\n%s", want, at, out, dumpEvents(events))
		}
		at += i + len(want)
	}
	if !strings.Contains(out, "→ "+obs.FirstRTPOut) {
		t.Errorf("trace output lacks the first RTP out:\n%s", out)
	}
	expectDiagnosis(t, r, "", obs.Healthy)
}
