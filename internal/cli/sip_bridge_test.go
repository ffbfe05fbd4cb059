package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
	"github.com/handset-voice/handset/internal/jobs"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// A caller's trunk that refuses REFER (501) has the call transferred all the same: Handset
// calls the desk through HANDSET_SIP_TRUNK (sipp, a real user agent, answering and
// playing recorded speech), the agent's call ends as transferred, the caller hears the
// desk's own recording byte for byte, and the caller's hang-up hangs the desk up.
func TestSIPTransferBridgedWhenReferRefused(t *testing.T) {
	testpeer.Slow(t, "runs sipp against handset serve")
	speech := filepath.Join(t.TempDir(), "desk.wav")
	if err := sippeer.WriteSpeechWAV(speech, audio.Telephone); err != nil {
		t.Fatal(err)
	}
	_, said, err := wav.ReadFile(speech) // what sipp's rtp_stream sends, as it is
	if err != nil {
		t.Fatal(err)
	}
	desk, err := sippeer.StartSipp(t, sippeer.UASAnswer, "", sippeer.SippOptions{Audio: speech, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const deskNumber = "+15550109999"
	r, trunk := startServeSIP(t, nil, "HANDSET_SIP_TRUNK=sip:"+desk.Addr(), "HANDSET_PHONE_NUMBER=+15557650000",
		"HANDSET_CARRIER=sip", "HANDSET_TRANSFER_ALLOW="+deskNumber)
	caller, err := sipsim.NewCaller(sipsim.CallerOptions{ReferStatus: 501})
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
	r.waitEvent(obs.PlayoutDone, nil, 20*time.Second) // greeted by the agent
	before := len(call.Received())
	o := newOutRig(t, r)
	var answer map[string]any
	if code := o.api("POST", "/api/calls/"+r.onlyCallID()+"/transfer", map[string]any{"to": deskNumber}, &answer); code != 200 {
		t.Fatalf("transfer: %d %v\n%s", code, answer, r.logs.String())
	}
	r.waitEvent(obs.CallEnd, func(e obs.Event) bool { return e.Reason == "transferred" }, 20*time.Second)

	// The desk's speech reaches the caller unchanged (both sides speak PCMU): 20 ms
	// windows of the recording, which neither the agent's voice nor silence could match.
	heard := 0
	for n := before + 1; heard < 50; n++ {
		pkts, err := call.WaitReceived(ctx, n)
		if err != nil {
			t.Fatalf("the caller heard %d frames of the desk's recording: %v\n%s", heard, err, r.logs.String())
		}
		if p := pkts[n-1].Payload; loud(p) && bytes.Contains(said, p) {
			heard++
		}
	}
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := desk.Wait(ctx) // its call ends with Handset's BYE
	if err != nil {
		t.Fatalf("%v\n%s", err, res.Output)
	}
	sippPassed(t, res, r)
	if !bytes.Contains([]byte(res.Messages), []byte("INVITE sip:"+deskNumber+"@")) {
		t.Errorf("the desk got no INVITE for its number:\n%s", clipTail(res.Messages, 3000))
	}
	var signals []string
	for _, e := range eventsOf(r.journal(), obs.CarrierSignal) {
		signals = append(signals, e.Kind+" "+e.Name+" "+e.Reason)
	}
	for _, want := range []string{"out REFER ", "in 501 Refused REFER refused", "out INVITE bridge", "in 200 OK bridge", "out bridging " + deskNumber} {
		if !slices.Contains(signals, want) {
			t.Errorf("journal signals %q: no %q", signals, want)
		}
	}
}

// A call Handset placed whose far end (sipp) declines the REFER (603) is bridged as well:
// Handset calls the desk through the same trunk (sipp answers that call too), the agent's
// call ends transferred, and when the two sides fall silent (sipp plays its tone once)
// Handset hangs both up, which sipp counts as two calls completed.
func TestSIPPlacedCallTransferBridgedWhenReferDeclined(t *testing.T) {
	testpeer.Slow(t, "runs sipp against handset serve")
	uas, err := sippeer.StartSipp(t, sippeer.UASRefuseRefer, "", sippeer.SippOptions{Calls: 2, Timeout: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const deskNumber = "+15550109999"
	r, _ := startServeSIP(t, nil, "HANDSET_SIP_TRUNK=sip:"+uas.Addr(), "HANDSET_PHONE_NUMBER=+15550001111",
		"HANDSET_CARRIER=sip", "HANDSET_TRANSFER_ALLOW="+deskNumber)
	o := newOutRig(t, r)
	var queued apiJob
	if code := o.api("POST", "/api/calls", map[string]any{"to": "+15550102000"}, &queued); code != 200 && code != 202 {
		t.Fatalf("POST /api/calls = %d %+v", code, queued)
	}
	r.waitEvent(obs.PlayoutDone, nil, 20*time.Second) // the call is up and greeted
	var answer map[string]any
	if code := o.api("POST", "/api/calls/"+r.onlyCallID()+"/transfer", map[string]any{"to": deskNumber}, &answer); code != 200 {
		t.Fatalf("transfer: %d %v\n%s", code, answer, r.logs.String())
	}
	j := o.waitJob(queued.ID)
	var res jobs.CallResult
	_ = json.Unmarshal(j.Result, &res)
	if res.Outcome != "transferred" {
		t.Errorf("call ended %q, want transferred", res.Outcome)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sres, err := uas.Wait(ctx)
	if err != nil {
		t.Fatalf("%v\n%s", err, sres.Output)
	}
	if sres.Successful != 2 || sres.Failed != 0 {
		t.Fatalf("sipp: %d successful, %d failed, want the call and the desk's both hung up by Handset\n%s\n%s",
			sres.Successful, sres.Failed, clipTail(sres.Messages, 4000), r.logs.String())
	}
	if !strings.Contains(sres.Messages, "INVITE sip:"+deskNumber+"@") || !strings.Contains(r.logs.String(), "bridge ended") {
		t.Errorf("no INVITE to the desk in sipp's trace, or no bridge ended in the log:\n%s\n%s", clipTail(sres.Messages, 3000), r.logs.String())
	}
}
