package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier/sip"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// signalled reports whether the journal holds a carrier.signal name, kind and reason.
func signalled(events []obs.Event, name, kind, reason string) bool {
	for _, e := range eventsOf(events, obs.CarrierSignal) {
		if e.Name == name && e.Kind == kind && e.Reason == reason {
			return true
		}
	}
	return false
}

// sipp asks for session timers as the refresher: the 200 OK agrees and requires the timer
// (sipp checks the headers), its UPDATE refreshes the session (and says so again), and
// the call ends on its BYE.
func TestSippRefreshesTheSession(t *testing.T) {
	res, events, r := sippCall(t, sippeer.Scenario(filepath.Join("testdata", "sipp", "uac_session_refresh.xml")), sippeer.SippOptions{})
	sippPassed(t, res, r)
	if events == nil {
		t.Fatal("no call")
	}
	if !signalled(events, "UPDATE", "in", "") {
		t.Errorf("the journal holds no UPDATE:\n%s", dumpEvents(events))
	}
	if end := events[len(events)-1]; end.Reason != "caller_hangup" {
		t.Errorf("the call ended %q, want caller_hangup", end.Reason)
	}
}

// sipp asks for a 6 s session as the refresher and never refreshes it: Handset hangs up
// with a BYE before it runs out, and the journal says why. (The floor is lowered for the
// test: RFC 4028's 90 s would make it wait a minute.)
func TestSippSessionExpires(t *testing.T) {
	defer sip.SetTestMinSE(3 * time.Second)()
	start := time.Now()
	res, events, r := sippCall(t, sippeer.Scenario(filepath.Join("testdata", "sipp", "uac_session_expire.xml")), sippeer.SippOptions{})
	sippPassed(t, res, r)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the session took %v to expire, want about 4 s", took)
	}
	if events == nil {
		t.Fatal("no call")
	}
	if !signalled(events, "BYE", "out", "session expired") {
		t.Errorf("the journal does not say the session expired:\n%s", dumpEvents(events))
	}
	if end := events[len(events)-1]; end.Reason == "caller_hangup" {
		t.Errorf("the call ended %q: as if the caller had hung up", end.Reason)
	}
}

// serveWithDigest runs serve with an allow-list that does not name sipp's address and
// inbound digest credentials pbx / s3cret.
func serveWithDigest(t *testing.T) (*rig, string) {
	t.Helper()
	testpeer.Slow(t, "runs sipp against handset serve")
	port := freeSIPPort(t)
	r := startServe(t, []string{"hello"}, "HANDSET_SIP_ALLOW=192.0.2.10", fmt.Sprintf("HANDSET_SIP_LISTEN=127.0.0.1:%d", port),
		"HANDSET_SIP_RTP_PORTS=33000-33999", "HANDSET_SIP_INBOUND_USERNAME=pbx", "HANDSET_SIP_INBOUND_PASSWORD=s3cret")
	return r, fmt.Sprintf("127.0.0.1:%d", port)
}

// sipp from outside the allow-list answers Handset's digest challenge with the right
// password and its call goes through; with a wrong one it is refused 403 and no call
// starts.
func TestSippDigestAuthentication(t *testing.T) {
	t.Run("right password", func(t *testing.T) {
		r, target := serveWithDigest(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := sippeer.RunSipp(ctx, t, sippeer.UACCall, target, sippeer.SippOptions{Username: "pbx", Password: "s3cret", Hold: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		sippPassed(t, res, r)
		if !strings.Contains(res.Messages, "SIP/2.0 401 Unauthorized") {
			t.Errorf("sipp was not challenged:\n%s", clipTail(res.Messages, 3000))
		}
		if !strings.Contains(r.logs.String(), "challenged (digest) or refused SIP requests from a source") {
			t.Errorf("the challenged source was not logged:\n%s", r.logs.String())
		}
		if events := r.journal(); events[len(events)-1].Reason != "caller_hangup" {
			t.Errorf("the authenticated call ended %q, want caller_hangup (its BYE taken)", events[len(events)-1].Reason)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		r, target := serveWithDigest(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := sippeer.RunSipp(ctx, t, sippeer.UACRefused, target, sippeer.SippOptions{Username: "pbx", Password: "guess"})
		if err != nil {
			t.Fatal(err)
		}
		sippPassed(t, res, r)
		if !strings.Contains(res.Messages, "SIP/2.0 401 Unauthorized") || !strings.Contains(res.Messages, "SIP/2.0 403 Forbidden") {
			t.Errorf("not challenged, then refused:\n%s", clipTail(res.Messages, 3000))
		}
		if paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*")); len(paths) != 0 {
			t.Errorf("a wrong password started %d calls", len(paths))
		}
	})
}

// sipp CANCELs as soon as Handset rings, which races Handset's 200 OK: whichever won, the
// outcome is consistent. Cancelled: the INVITE ended 487 and no call goes on (a call the
// gateway had admitted has ended). Answered: the call ended on sipp's BYE. A CANCEL half a
// second after the ring always comes after the answer.
func TestSippCancelRacesTheAnswer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		pause     time.Duration
		mustWinOK bool
	}{
		{"at once", time.Millisecond, false},
		{"after the answer", 500 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _, r := sippCall(t, sippeer.Scenario(filepath.Join("testdata", "sipp", "uac_cancel_race.xml")), sippeer.SippOptions{Hold: tc.pause})
			sippPassed(t, res, r)
			cancelled := strings.Contains(res.Messages, "SIP/2.0 487")
			answered := strings.Contains(res.Messages, "BYE sip:")
			paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*", "events.jsonl"))
			switch {
			case cancelled == answered:
				t.Fatalf("cancelled %v and answered %v: want exactly one\n%s", cancelled, answered, clipTail(res.Messages, 4000))
			case cancelled && tc.mustWinOK:
				t.Fatalf("a CANCEL %v after the ring cancelled the call: the 200 OK came that late", tc.pause)
			case cancelled:
				t.Logf("the CANCEL won (%d call journals)", len(paths))
				for _, p := range paths {
					events := r.journalAt(p) // waits for call.end: nothing is left running
					if signalled(events, "ACK", "in", "") {
						t.Errorf("a cancelled call was established:\n%s", dumpEvents(events))
					}
				}
			default:
				t.Log("the 200 OK won")
				if len(paths) != 1 {
					t.Fatalf("%d call journals for an answered call, want 1", len(paths))
				}
				events := r.journalAt(paths[0])
				if !signalled(events, "BYE", "in", "caller") || events[len(events)-1].Reason != "caller_hangup" {
					t.Errorf("the answered call did not end on sipp's BYE:\n%s", dumpEvents(events))
				}
			}
		})
	}
}

// placeToSipp starts sipp playing a UAS scenario from testdata/sipp as the trunk's far end
// and has serve place a call to it through the jobs API.
func placeToSipp(t *testing.T, scenario string) (*sippeer.Sipp, *rig) {
	t.Helper()
	testpeer.Slow(t, "runs sipp against handset serve")
	uas, err := sippeer.StartSipp(t, sippeer.Scenario(filepath.Join("testdata", "sipp", scenario)), "", sippeer.SippOptions{Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := startServeSIP(t, nil, "HANDSET_SIP_TRUNK=sip:"+uas.Addr(), "HANDSET_PHONE_NUMBER=+15550001111", "HANDSET_CARRIER=sip")
	o := newOutRig(t, r)
	var queued apiJob
	if code := o.api("POST", "/api/calls", map[string]any{"to": "+15550102000"}, &queued); code != 200 && code != 202 {
		t.Fatalf("POST /api/calls = %d %+v\n%s", code, queued, r.logs.String())
	}
	return uas, r
}

// waitSipp waits for sipp's scenario to end and checks it passed.
func waitSipp(t *testing.T, uas *sippeer.Sipp, r *rig) sippeer.SippResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	res, err := uas.Wait(ctx)
	if err != nil {
		t.Fatalf("sipp: %v\n%s\n%s\n%s", err, res.Output, clipTail(res.Messages, 4000), r.logs.String())
	}
	sippPassed(t, res, r)
	return res
}

// Handset places a call and sipp answers with a 6 s session for Handset to refresh: the
// INVITE offers a timer (sipp checks it), Handset refreshes twice with UPDATE within the
// interval (sipp checks the terms), and the call ends on sipp's BYE.
func TestSIPPlacedCallRefreshesTheSession(t *testing.T) {
	defer sip.SetTestMinSE(3 * time.Second)()
	uas, r := placeToSipp(t, "uas_session_refresh.xml")
	waitSipp(t, uas, r)
	r.waitEvent(obs.CallEnd, nil, 10*time.Second)
	events := r.journal()
	refreshes := 0
	for _, e := range eventsOf(events, obs.CarrierSignal) {
		if e.Name == "UPDATE" && e.Kind == "out" && e.Reason == "session refresh" {
			refreshes++
		}
	}
	if refreshes != 2 {
		t.Errorf("%d refreshes in the journal, want 2:\n%s", refreshes, dumpEvents(events))
	}
	if signalled(events, "BYE", "out", "session expired") || signalled(events, "BYE", "out", "session refresh failed") {
		t.Errorf("Handset hung up on its own:\n%s", dumpEvents(events))
	}
}

// Handset places a call asking for a 5 s session; sipp refuses it as too small (422,
// Min-SE 8 s),
// takes the INVITE sent again with 8 s, and answers with a session it means to refresh
// itself, then never does: Handset hangs up before the session runs out, and the journal
// says why.
func TestSIPPlacedCallSessionExpires(t *testing.T) {
	defer sip.SetTestMinSE(3 * time.Second)()
	defer sip.SetTestSessionExpires(5 * time.Second)()
	start := time.Now()
	uas, r := placeToSipp(t, "uas_session_expire.xml")
	waitSipp(t, uas, r)
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the session took %v to expire, want about 5 s after the answer", took)
	}
	r.waitEvent(obs.CallEnd, nil, 10*time.Second)
	events := r.journal()
	if !signalled(events, "422", "in", "session interval too small") {
		t.Errorf("the journal holds no 422:\n%s", dumpEvents(events))
	}
	if !signalled(events, "BYE", "out", "session expired") {
		t.Errorf("the journal does not say the session expired:\n%s", dumpEvents(events))
	}
}
