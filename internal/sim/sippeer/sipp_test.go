package sippeer

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/testpeer"
)

// sippPair runs a sipp UAS scenario and a sipp UAC scenario against it and returns both
// results once both have ended.
func sippPair(t *testing.T, uas, uac Scenario, uasOpts, uacOpts SippOptions) (uasResult, uacResult SippResult) {
	t.Helper()
	testpeer.Slow(t, "runs sipp calls in real time")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server, err := StartSipp(t, uas, "", uasOpts)
	if err != nil {
		t.Fatal(err)
	}
	uacResult, err = RunSipp(ctx, t, uac, server.Addr(), uacOpts)
	if err != nil {
		t.Fatalf("%s: %v\n%s", uac, err, uacResult.Output)
	}
	uasResult, err = server.Wait(ctx)
	if err != nil {
		t.Fatalf("%s: %v\n%s", uas, err, uasResult.Output)
	}
	return uasResult, uacResult
}

// wantCalls fails t unless r counts exactly successful and failed calls.
func wantCalls(t *testing.T, name string, r SippResult, successful, failed int) {
	t.Helper()
	if r.Successful != successful || r.Failed != failed {
		t.Errorf("%s: %d successful and %d failed calls (exit %d), want %d and %d\nerrors:\n%s\nmessages:\n%s\noutput:\n%s",
			name, r.Successful, r.Failed, r.ExitCode, successful, failed, r.Errors, r.Messages, r.Output[max(0, len(r.Output)-2000):])
	}
}

const shortHold = 300 * time.Millisecond

func TestSippCallWithAudio(t *testing.T) {
	uas, uac := sippPair(t, UASAnswer, UACCall, SippOptions{}, SippOptions{Hold: time.Second})
	wantCalls(t, "uas", uas, 1, 0)
	wantCalls(t, "uac", uac, 1, 0)
	if uac.ExitCode != 0 {
		t.Errorf("uac exit %d, want 0", uac.ExitCode)
	}
	if !strings.Contains(uac.Messages, "BYE sip:") || !strings.Contains(uas.Messages, "a=rtpmap:0 PCMU/8000") {
		t.Errorf("the message trace lacks the BYE or the SDP:\n%s", uac.Messages)
	}
}

func TestSippCancelBeforeAnswer(t *testing.T) {
	uas, uac := sippPair(t, UASRing, UACCancel, SippOptions{}, SippOptions{})
	wantCalls(t, "uas", uas, 1, 0)
	wantCalls(t, "uac", uac, 1, 0)
	if !strings.Contains(uac.Messages, "SIP/2.0 487") {
		t.Errorf("no 487 in the caller's trace:\n%s", uac.Messages)
	}
}

func TestSippReinviteHoldAndResume(t *testing.T) {
	uas, uac := sippPair(t, UASAnswer, UACReinvite, SippOptions{}, SippOptions{Hold: shortHold})
	wantCalls(t, "uas", uas, 1, 0)
	wantCalls(t, "uac", uac, 1, 0)
	// the hold offer is answered recvonly, the resume sendrecv
	if !strings.Contains(uac.Messages, "a=sendonly") || !strings.Contains(uas.Messages, "a=recvonly") {
		t.Errorf("no hold offer and answer in the traces:\n%s", uas.Messages)
	}
}

func TestSippRFC4733DTMF(t *testing.T) {
	const digits = "4#"
	uas, uac := sippPair(t, UASAnswer, UACDTMF, SippOptions{}, SippOptions{Hold: shortHold, Digits: digits})
	wantCalls(t, "uas", uas, 1, 0)
	wantCalls(t, "uac", uac, 1, 0)
	if !strings.Contains(uac.Messages, "a=rtpmap:101 telephone-event/8000") {
		t.Errorf("the offer lacks telephone-event:\n%s", uac.Messages)
	}
}

func TestSippInfoDTMF(t *testing.T) {
	uas, uac := sippPair(t, UASAnswer, UACInfoDTMF, SippOptions{}, SippOptions{Hold: shortHold, Digits: "7*"})
	wantCalls(t, "uas", uas, 1, 0)
	wantCalls(t, "uac", uac, 1, 0)
	for _, body := range []string{"Signal=7", "Signal=*"} {
		if !strings.Contains(uas.Messages, body) {
			t.Errorf("the answerer never got %q:\n%s", body, uas.Messages)
		}
	}
}

func TestSippDigestChallenge(t *testing.T) {
	uasOpts := SippOptions{Username: "alice", Password: "s3cret"}
	t.Run("right password", func(t *testing.T) {
		uas, uac := sippPair(t, UASDigest, UACCall, uasOpts, SippOptions{Hold: shortHold, Username: "alice", Password: "s3cret"})
		wantCalls(t, "uas", uas, 1, 0)
		wantCalls(t, "uac", uac, 1, 0)
	})
	t.Run("wrong password", func(t *testing.T) {
		uas, uac := sippPair(t, UASDigest, UACRefused, uasOpts, SippOptions{Username: "alice", Password: "guess"})
		wantCalls(t, "uas", uas, 0, 1)
		wantCalls(t, "uac", uac, 1, 0)
	})
}

func TestSippRefusedWithoutChallengeIsRefused(t *testing.T) {
	// UACRefused must fail against an answerer that takes the call: it proves nothing
	// if it passes whatever the far end does
	_, uac := sippPair(t, UASAnswer, UACRefused, SippOptions{}, SippOptions{})
	wantCalls(t, "uac", uac, 0, 1)
}

func TestSippRefuseRefer(t *testing.T) {
	uas, uac := sippPair(t, UASRefuseRefer, "testdata/uac_refer.xml", SippOptions{}, SippOptions{Hold: shortHold})
	wantCalls(t, "uas", uas, 1, 0)
	wantCalls(t, "uac", uac, 1, 0)
}

func TestSippOverTCP(t *testing.T) {
	uas, uac := sippPair(t, UASAnswer, UACCall, SippOptions{Transport: "tcp"}, SippOptions{Transport: "tcp", Hold: shortHold})
	wantCalls(t, "uas", uas, 1, 0)
	wantCalls(t, "uac", uac, 1, 0)
	if !strings.Contains(uac.Messages, "SIP/2.0/TCP") {
		t.Errorf("the call did not go over TCP:\n%s", uac.Messages)
	}
}

func TestSippAcceptReferTransfersAndHangsUp(t *testing.T) {
	uas, uac := sippPair(t, UASAcceptRefer, "testdata/uac_refer_accepted.xml", SippOptions{}, SippOptions{})
	wantCalls(t, "uas", uas, 1, 0)
	wantCalls(t, "uac", uac, 1, 0)
	for _, want := range []string{"NOTIFY sip:", "Event: refer", "Content-Type: message/sipfrag", "BYE sip:"} {
		if !strings.Contains(uac.Messages, want) {
			t.Errorf("no %q in the caller's trace:\n%s", want, uac.Messages)
		}
	}
}

func TestSippSeveralCalls(t *testing.T) {
	uas, uac := sippPair(t, UASAnswer, UACCall, SippOptions{Calls: 3}, SippOptions{Calls: 3, Hold: shortHold})
	wantCalls(t, "uas", uas, 3, 0)
	wantCalls(t, "uac", uac, 3, 0)
}

// sipp's own output on a taken port is recognised, as kamailio's is.
func TestSippOnATakenPortIsToldApart(t *testing.T) {
	testpeer.Slow(t, "starts sipp")
	opts, err := SippOptions{}.withDefaults(t)
	if err != nil {
		t.Fatal(err)
	}
	data, err := opts.scenarioData(UASAnswer)
	if err != nil {
		t.Fatal(err)
	}
	xml, err := renderScenario(UASAnswer, data)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(opts.Dir, "uas.xml")
	if err := os.WriteFile(file, xml, 0o644); err != nil {
		t.Fatal(err)
	}
	others, err := freePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	ports := []int{holdUDPPort(t), others[0], others[1]}
	_, err = startSippOn(t, testpeer.Program(t, "sipp", testpeer.Sipp), UASAnswer, "", opts, file, ports)
	if !errors.Is(err, errPortTaken) {
		t.Fatalf("sipp on a taken port: %v, want errPortTaken", err)
	}
}
