package obs

import (
	"path/filepath"
	"slices"
	"testing"
)

// The journals in testdata/sip-*.jsonl have the shape a SIP trunk's calls write: the
// INVITE and 180 Ringing before call.start (with their own, negative, times), the first
// RTP packet out by the 200 OK, carrier.signal lines for every message, and media.first_in
// at once (the media stage fills silence until RTP comes), so a call whose RTP never came
// ends on the media timeout (call.end media_error, BYE from Handset).

func readJournal(t *testing.T, name string) []Event {
	t.Helper()
	events, err := ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func TestTraceShowsTheSignallingInOrder(t *testing.T) {
	tr := Trace(readJournal(t, "sip-healthy.jsonl"))
	var got []string
	for _, l := range tr.Signalling {
		got = append(got, l.Direction+" "+l.Name)
	}
	want := []string{"in INVITE", "out 180 Ringing", "out " + FirstRTPOut, "out 200 OK", "in ACK", "in BYE"}
	if !slices.Equal(got, want) {
		t.Fatalf("signalling %v, want %v", got, want)
	}
	if first, last := tr.Signalling[0], tr.Signalling[len(tr.Signalling)-1]; first.MS != -41 || last.MS != 8000 || last.Reason != "caller" {
		t.Errorf("first %+v, last %+v", first, last)
	}
	if Trace(healthyCall()).Signalling != nil {
		t.Error("a call without carrier.signal events has no signalling timeline")
	}
}

func TestDiagnoseSIPCalls(t *testing.T) {
	for _, c := range []struct {
		journal string
		want    want
	}{
		{"sip-healthy.jsonl", want{stage: "", problem: []string{Healthy}}},
		{"sip-no-ack.jsonl", want{stage: "carrier",
			problem:  []string{"the caller never acknowledged the answer", "200 OK at 121 ms", "no ACK came: transaction terminated"},
			fix:      []string{"NAT or firewall", "HANDSET_SIP_PUBLIC_ADDR", "Contact address"},
			evidence: []string{"121 ms carrier.signal out 200 OK", "32121 ms carrier.signal in ACK (transaction terminated)", "call.end media_error"}}},
		{"sip-no-rtp.jsonl", want{stage: "carrier",
			problem:  []string{"no audio (RTP) from SIP trunk was heard", "30.1 s", "never came, or stopped"},
			fix:      []string{"media timeout", "HANDSET_SIP_RTP_PORTS", "HANDSET_SIP_PUBLIC_ADDR"},
			evidence: []string{"21 ms media.first_in", "call.end media_error"}}},
		{"sip-rtp-stopped.jsonl", want{stage: "carrier",
			problem:  []string{"the caller's audio (RTP) from SIP trunk stopped", "35.3 s"},
			fix:      []string{"media timeout", "NAT binding", "HANDSET_SIP_RTP_PORTS"},
			evidence: []string{"175 ms media.first_in", "call.end media_error"}}},
	} {
		t.Run(c.journal, func(t *testing.T) {
			checkVerdict(t, Diagnose(readJournal(t, c.journal)), c.want)
		})
	}
}

func TestDiagnoseSIPRepeatedInvites(t *testing.T) {
	events := readJournal(t, "sip-loop.jsonl")
	v := Diagnose(events)
	checkVerdict(t, v, want{stage: ""})
	if !hasWarning(v, "carrier", "2 INVITEs refused 482 Loop Detected", "routing loop") {
		t.Errorf("warnings %+v", v.Warnings)
	}
	// Never answered, the repeated INVITE is the carrier's failure.
	var unanswered []Event
	for _, e := range events {
		if e.Type != CarrierSignal || e.Name == "INVITE" || e.Name == "482 Loop Detected" {
			unanswered = append(unanswered, e)
		}
	}
	checkVerdict(t, Diagnose(unanswered), want{stage: "carrier", problem: []string{"482 Loop Detected"},
		fix: []string{"routing loop"}, evidence: []string{"carrier.signal out 482 Loop Detected (repeated)"}})
}

// A caller who cancels while the answer is on its way did not lose Handset's 200 OK.
func TestDiagnoseSIPCancelIsNotALostAnswer(t *testing.T) {
	events := readJournal(t, "sip-no-ack.jsonl")
	for i := range events {
		if events[i].Type == CarrierSignal && events[i].Name == "ACK" {
			events[i].Reason = "transaction canceled"
		}
	}
	v := Diagnose(events)
	if v.Stage == "carrier" && slices.Contains(v.Evidence, "121 ms carrier.signal out 200 OK") {
		t.Errorf("a cancelled call diagnosed as a lost answer: %+v", v)
	}
}
