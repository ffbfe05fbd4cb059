package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// sippCall runs one sipp scenario against a fresh `handset serve` with a SIP trunk and
// returns sipp's result with the call's journal (nil when no call started).
func sippCall(t *testing.T, scenario sippeer.Scenario, opts sippeer.SippOptions, transcripts ...string) (sippeer.SippResult, []obs.Event, *rig) {
	t.Helper()
	testpeer.Slow(t, "runs sipp against handset serve")
	r, trunk := startServeSIP(t, transcripts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := sippeer.RunSipp(ctx, t, scenario, trunk.String(), opts)
	if err != nil {
		t.Fatalf("sipp %s: %v\n%s\nhandset:\n%s", scenario, err, res.Output, r.logs.String())
	}
	paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*", "events.jsonl"))
	if len(paths) == 0 {
		return res, nil, r
	}
	return res, r.journal(), r
}

// sippPassed fails t unless sipp counted every call successful.
func sippPassed(t *testing.T, res sippeer.SippResult, r *rig) {
	t.Helper()
	if res.ExitCode != 0 || res.Failed != 0 || res.Successful == 0 {
		t.Fatalf("sipp: exit %d, %d successful, %d failed\n%s\n%s\nhandset:\n%s", res.ExitCode, res.Successful, res.Failed,
			res.Errors, clipTail(res.Messages, 4000), r.logs.String())
	}
}

func clipTail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// sipp, a real SIP user agent, calls Handset: the call is answered with RTP, the caller's
// recorded speech reaches the agent, and the BYE ends it as the caller's hang-up.
func TestSippCallsHandset(t *testing.T) {
	wavPath := filepath.Join(t.TempDir(), "speech.wav")
	if err := sippeer.WriteSpeechWAV(wavPath, audio.Telephone); err != nil {
		testpeer.Missing(t, testpeer.Speech, err)
	}
	res, events, r := sippCall(t, sippeer.UACCall, sippeer.SippOptions{Audio: wavPath, Hold: 6 * time.Second},
		"go forward ten meters")
	sippPassed(t, res, r)
	if n := len(eventsOf(events, obs.VADSpeechStart)); n == 0 {
		t.Errorf("the caller's speech was never heard:\n%s", dumpEvents(events))
	}
	if reqs := r.agent.Requests(); len(reqs) == 0 {
		t.Errorf("the agent got no turn:\n%s", dumpEvents(events))
	}
	if end := events[len(events)-1]; end.Reason != "caller_hangup" {
		t.Errorf("the call ended %q, want caller_hangup", end.Reason)
	}
	if !strings.Contains(res.Messages, "SIP/2.0 180 Ringing") || !strings.Contains(res.Messages, "m=audio") {
		t.Errorf("sipp saw no 180 Ringing, or no SDP answer:\n%s", clipTail(res.Messages, 3000))
	}
}

// The same over TCP.
func TestSippCallsHandsetOverTCP(t *testing.T) {
	res, events, r := sippCall(t, sippeer.UACCall, sippeer.SippOptions{Transport: "tcp", Hold: time.Second})
	sippPassed(t, res, r)
	if events == nil || events[len(events)-1].Reason != "caller_hangup" {
		t.Errorf("no call, or it did not end as the caller's hang-up")
	}
}

// sipp holds the call with a re-INVITE and takes it off hold with another: both answered.
func TestSippHoldsAndResumes(t *testing.T) {
	res, events, r := sippCall(t, sippeer.UACReinvite, sippeer.SippOptions{})
	sippPassed(t, res, r)
	if events == nil {
		t.Fatal("no call")
	}
}

// Keys pressed as RFC 4733 events and as SIP INFO reach the call once each, in order.
func TestSippDTMFReachesTheCall(t *testing.T) {
	for _, sc := range []sippeer.Scenario{sippeer.UACDTMF, sippeer.UACInfoDTMF} {
		t.Run(string(sc), func(t *testing.T) {
			res, events, r := sippCall(t, sc, sippeer.SippOptions{Digits: "5#9"})
			sippPassed(t, res, r)
			var digits []string
			for _, e := range eventsOf(events, obs.DTMF) {
				digits = append(digits, e.Digit)
			}
			if got := strings.Join(digits, ""); got != "5#9" {
				t.Errorf("digits in the journal %q, want 5#9", got)
			}
		})
	}
}

// A source HANDSET_SIP_ALLOW does not name is refused 403, and no call starts.
func TestSippStrangerIsRefused(t *testing.T) {
	testpeer.Slow(t, "runs sipp against handset serve")
	port := freeSIPPort(t)
	r := startServe(t, nil, "HANDSET_SIP_ALLOW=192.0.2.10", fmt.Sprintf("HANDSET_SIP_LISTEN=127.0.0.1:%d", port),
		"HANDSET_SIP_RTP_PORTS=33000-33999")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := sippeer.RunSipp(ctx, t, sippeer.UACRefused, fmt.Sprintf("127.0.0.1:%d", port), sippeer.SippOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sippPassed(t, res, r)
	if paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*")); len(paths) != 0 {
		t.Errorf("a stranger's INVITE started %d calls", len(paths))
	}
	if !strings.Contains(r.logs.String(), "refused SIP requests from a source") {
		t.Errorf("the refusal was not logged:\n%s", r.logs.String())
	}
}

// Broken and hostile messages get no dialog, and Handset goes on serving: OPTIONS is
// answered and a call still goes through afterwards.
func TestMalformedSIPMessagesAreSurvived(t *testing.T) {
	testpeer.Slow(t, "runs sipp against handset serve")
	r, trunk := startServeSIP(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, junk := range sippeer.MalformedMessages(trunk.String()) {
		reply, err := sippeer.Exchange(ctx, "udp", trunk.String(), junk.Packet, 300*time.Millisecond)
		if err != nil {
			t.Fatalf("%s: %v", junk.Name, err)
		}
		// An OPTIONS that parses may well be answered; an INVITE never.
		if bytes.HasPrefix(junk.Packet, []byte("INVITE")) && bytes.HasPrefix(reply, []byte("SIP/2.0 2")) {
			t.Errorf("%s was answered %q", junk.Name, firstLine(reply))
		}
	}
	options := fmt.Sprintf("OPTIONS sip:handset@%s SIP/2.0\r\nVia: SIP/2.0/UDP 127.0.0.1:5999;rport;branch=z9hG4bK-probe\r\n"+
		"From: <sip:probe@127.0.0.1>;tag=p1\r\nTo: <sip:handset@%s>\r\nCall-ID: probe-after-junk\r\nCSeq: 1 OPTIONS\r\n"+
		"Max-Forwards: 70\r\nContent-Length: 0\r\n\r\n", trunk, trunk)
	reply, err := sippeer.Exchange(ctx, "udp", trunk.String(), []byte(options), 2*time.Second)
	if err != nil || !bytes.HasPrefix(reply, []byte("SIP/2.0 200")) {
		t.Fatalf("OPTIONS after the junk: %q %v\n%s", firstLine(reply), err, r.logs.String())
	}
	if paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*")); len(paths) != 0 {
		t.Errorf("the junk started %d calls", len(paths))
	}
	res, err := sippeer.RunSipp(ctx, t, sippeer.UACCall, trunk.String(), sippeer.SippOptions{Hold: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sippPassed(t, res, r)
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\r\n"))
	return string(line)
}

// Handset registers with a real registrar (kamailio, digest auth) as its user, and a call
// to that user through the registrar reaches it; a wrong password is refused and said so.
func TestHandsetRegistersWithKamailio(t *testing.T) {
	testpeer.Slow(t, "runs kamailio, sipp and handset serve")
	k, err := sippeer.StartKamailio(t, sippeer.KamailioOptions{Users: map[string]string{"handset": "reg-pw-1"}})
	if err != nil {
		t.Fatal(err)
	}
	port := freeSIPPort(t)
	r := startServe(t, []string{"hello there"}, fmt.Sprintf("HANDSET_SIP_LISTEN=127.0.0.1:%d", port),
		"HANDSET_SIP_RTP_PORTS=33000-33999", "HANDSET_SIP_REGISTRAR=sip:"+k.Addr(),
		"HANDSET_SIP_USERNAME=handset", "HANDSET_SIP_PASSWORD=reg-pw-1")
	waitLog(t, r, `msg="SIP registration"`, 10*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := sippeer.RunSipp(ctx, t, sippeer.UACCall, k.Addr(), sippeer.SippOptions{Service: "handset", Hold: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sippPassed(t, res, r)
	if events := r.journal(); events[len(events)-1].Reason != "caller_hangup" {
		t.Errorf("the call through the registrar ended %q", events[len(events)-1].Reason)
	}

	bad := startServe(t, nil, fmt.Sprintf("HANDSET_SIP_LISTEN=127.0.0.1:%d", freeSIPPort(t)),
		"HANDSET_SIP_RTP_PORTS=34000-34999", "HANDSET_SIP_REGISTRAR=sip:"+k.Addr(),
		"HANDSET_SIP_USERNAME=handset", "HANDSET_SIP_PASSWORD=wrong-pw")
	waitLog(t, bad, `msg="SIP registration failed"`, 10*time.Second)
	if !strings.Contains(bad.logs.String(), "refused the credentials") {
		t.Errorf("a wrong password is not said to be one:\n%s", bad.logs.String())
	}
}

// waitLog waits until serve's log holds want.
func waitLog(t *testing.T, r *rig, want string, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !strings.Contains(r.logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in the log after %v:\n%s", want, limit, r.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An outbound call through the trunk: the job dials sipp (the trunk's far end), sipp
// answers, the message is spoken, and Handset ends the call with a BYE sipp accepts.
func TestSIPOutboundCallThroughSipp(t *testing.T) {
	testpeer.Slow(t, "runs sipp against handset serve")
	uas, err := sippeer.StartSipp(t, sippeer.UASAnswer, "", sippeer.SippOptions{Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := startServeSIP(t, nil, "HANDSET_SIP_TRUNK=sip:"+uas.Addr(), "HANDSET_PHONE_NUMBER=+15550001111",
		"HANDSET_CARRIER=sip", "HANDSET_MAX_CALL=4s")
	o := newOutRig(t, r)
	var queued apiJob
	if code := o.api("POST", "/api/calls?wait=60s", map[string]any{"to": "+15550102000", "message": "Hi, this is your reminder."}, &queued); code != 200 {
		t.Fatalf("POST /api/calls = %d %+v\n%s", code, queued, r.logs.String())
	}
	if queued.State != "completed" {
		t.Fatalf("job %s %s %q\n%s", queued.State, queued.Result, queued.Error, r.logs.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := uas.Wait(ctx)
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Output)
	}
	sippPassed(t, res, r)
	if !strings.Contains(res.Messages, "INVITE sip:+15550102000@") {
		t.Errorf("sipp got no INVITE for the number dialled:\n%s", clipTail(res.Messages, 3000))
	}
	events := r.journal()
	var signals []string
	for _, e := range eventsOf(events, obs.CarrierSignal) {
		signals = append(signals, e.Kind+" "+e.Name)
	}
	if start := eventsOf(events, obs.CallStart)[0]; start.Direction != "outbound" || !slices.Contains(signals, "out INVITE") || !slices.Contains(signals, "in 200 OK") {
		t.Errorf("journal: start %+v, signals %q", start, signals)
	}
}

// A call Handset placed is transferred with REFER: sipp (the far end) accepts it, reports
// the new call answered with a NOTIFY and hangs up; the call ends transferred.
func TestSIPTransferWithRefer(t *testing.T) {
	testpeer.Slow(t, "runs sipp against handset serve")
	uas, err := sippeer.StartSipp(t, sippeer.UASAcceptRefer, "", sippeer.SippOptions{Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const desk = "+15550109999"
	r, _ := startServeSIP(t, nil, "HANDSET_SIP_TRUNK=sip:"+uas.Addr(), "HANDSET_PHONE_NUMBER=+15550001111",
		"HANDSET_CARRIER=sip", "HANDSET_TRANSFER_ALLOW="+desk)
	o := newOutRig(t, r)
	var queued apiJob
	if code := o.api("POST", "/api/calls", map[string]any{"to": "+15550102000"}, &queued); code != 200 && code != 202 {
		t.Fatalf("POST /api/calls = %d %+v", code, queued)
	}
	r.waitEvent(obs.PlayoutDone, nil, 20*time.Second) // the call is up and greeted
	id := r.onlyCallID()
	var answer map[string]any
	if code := o.api("POST", "/api/calls/"+id+"/transfer", map[string]any{"to": desk}, &answer); code != 200 {
		t.Fatalf("transfer: %d %v\n%s", code, answer, r.logs.String())
	}
	j := o.waitJob(queued.ID)
	var res jobs.CallResult
	_ = json.Unmarshal(j.Result, &res)
	if res.Outcome != "transferred" {
		t.Errorf("call ended %q, want transferred", res.Outcome)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sres, err := uas.Wait(ctx)
	if err != nil {
		t.Fatalf("%v\n%s", err, sres.Output)
	}
	sippPassed(t, sres, r)
	if !strings.Contains(sres.Messages, "Refer-To: <sip:"+desk+"@") && !strings.Contains(sres.Messages, "Refer-To: sip:"+desk+"@") {
		t.Errorf("no REFER to %s in sipp's trace:\n%s", desk, clipTail(sres.Messages, 3000))
	}
}
