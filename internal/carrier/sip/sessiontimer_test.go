package sip

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/voice"
)

func TestParseSessionExpires(t *testing.T) {
	for _, tc := range []struct {
		in        string
		want      time.Duration
		refresher string
		bad       bool
	}{
		{in: "1800", want: 1800 * time.Second},
		{in: " 90 ;refresher=UAC", want: 90 * time.Second, refresher: "uac"},
		{in: "120;foo=bar;refresher=uas", want: 120 * time.Second, refresher: "uas"},
		{in: "99999999", want: maxSessionExpires},
		{in: "0", bad: true},
		{in: "-5", bad: true},
		{in: "abc", bad: true},
		{in: "90;refresher=both", bad: true},
		{in: strings.Repeat("9", 200), bad: true},
	} {
		d, r, err := parseSessionExpires(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && (d != tc.want || r != tc.refresher)) {
			t.Errorf("parseSessionExpires(%q) = %v %q %v", tc.in, d, r, err)
		}
	}
}

// timedTrunk is a trunk whose session timers run on a fake clock.
func timedTrunk(t *testing.T, a *answering) (*Trunk, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	return startTrunkWith(t, "127.0.0.1", a, func(o *Options) { o.Clock = clk }), clk
}

// waitArmed waits until the call's session timer is set (after the ACK, on the trunk's
// goroutine), so that advancing the clock counts from it.
func waitArmed(t *testing.T, clk *clock.Fake) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for clk.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the session timer was never set")
		}
		time.Sleep(time.Millisecond)
	}
}

// signalsOf collects a leg's journal events.
type signalLog struct {
	mu     sync.Mutex
	events []voice.LegEvent
}

func signalsOf(leg voice.Leg) *signalLog {
	l := &signalLog{}
	leg.(*Leg).ReportTo(func(e voice.LegEvent) {
		l.mu.Lock()
		l.events = append(l.events, e)
		l.mu.Unlock()
	})
	return l
}

func (l *signalLog) has(name, direction, reason string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Name == name && e.Direction == direction && e.Reason == reason {
			return true
		}
	}
	return false
}

// The caller refreshes (its choice): the 200 OK says so and requires the timer; an UPDATE
// restarts the interval; when no refresh comes, Handset hangs up with a BYE a third of
// the interval before it ends, and the call's end says why.
func TestSessionExpiresWhenThePeerStopsRefreshing(t *testing.T) {
	a := newAnswering(0)
	tr, clk := timedTrunk(t, a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{Headers: map[string]string{
		"Session-Expires": "120;refresher=uac", "Supported": "timer"}})
	if err != nil {
		t.Fatal(err)
	}
	r := <-a.got
	log := signalsOf(r.leg)
	if se, req := call.AnswerHeader("Session-Expires"), call.AnswerHeader("Require"); se != "120;refresher=uac" || req != "timer" {
		t.Fatalf("200 OK: Session-Expires %q, Require %q; want 120;refresher=uac and timer", se, req)
	}
	waitArmed(t, clk)
	clk.Advance(70 * time.Second)
	res, err := call.Update(ctx, map[string]string{"Session-Expires": "120;refresher=uac", "Supported": "timer"}, nil)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("UPDATE: %v %v", res, err)
	}
	if h := res.GetHeader("Session-Expires"); h == nil || h.Value() != "120;refresher=uac" {
		t.Errorf("the UPDATE's 200 OK names no Session-Expires 120;refresher=uac: %v", h)
	}
	// 88 s after the refresh (120 - min(32, 120/3)) is the hang-up; 87 s is not yet.
	clk.Advance(87 * time.Second)
	select {
	case <-call.Ended():
		t.Fatal("Handset hung up although the caller refreshed the session")
	case <-time.After(200 * time.Millisecond):
	}
	clk.Advance(time.Second)
	select {
	case <-call.Ended():
	case <-ctx.Done():
		t.Fatal("no BYE when the session expired")
	}
	select {
	case err := <-r.runErr:
		if !errors.Is(err, errSessionExpired) {
			t.Errorf("Run: %v, want the session's expiry", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return")
	}
	if !log.has("BYE", "out", "session expired") || !log.has("UPDATE", "in", "") {
		t.Errorf("the journal lacks the UPDATE or the BYE's reason: %+v", log.events)
	}
}

// A Session-Expires below the floor gets 422 with Min-SE; the caller's next INVITE of the
// same call (same Call-ID and From tag) with a longer one is taken.
func TestSessionIntervalTooSmall(t *testing.T) {
	a := newAnswering(0)
	tr := startTrunkWith(t, "127.0.0.1", a, func(o *Options) { o.MinSE = 100 * time.Second })
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o := sipsim.CallOptions{CallID: "brief-1", FromTag: "t1", Headers: map[string]string{"Session-Expires": "90", "Supported": "timer"}}
	_, err := caller.Call(ctx, tr.Addr(), o)
	var refused *sipsim.Refused
	if !errors.As(err, &refused) || refused.Status != 422 {
		t.Fatalf("Session-Expires 90 against a floor of 100: %v, want 422", err)
	}
	o.Headers["Session-Expires"] = "100"
	o.Headers["Min-SE"] = "100"
	call, err := caller.Call(ctx, tr.Addr(), o)
	if err != nil {
		t.Fatalf("the retry with 100 s: %v", err)
	}
	<-a.got
	if se := call.AnswerHeader("Session-Expires"); se != "100;refresher=uac" {
		t.Errorf("Session-Expires %q, want 100;refresher=uac", se)
	}
	_ = call.Hangup(ctx)
}

// When the caller asks Handset to refresh, Handset refreshes at half the interval: with
// UPDATE when the caller allows it, else with a re-INVITE; the call goes on.
func TestHandsetRefreshesTheSession(t *testing.T) {
	for _, tc := range []struct {
		allow, want string
	}{
		{"INVITE, ACK, BYE, CANCEL, UPDATE", "UPDATE"},
		{"INVITE, ACK, BYE, CANCEL", "INVITE"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			a := newAnswering(0)
			tr, clk := timedTrunk(t, a)
			caller := newCaller(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{Headers: map[string]string{
				"Session-Expires": "90;refresher=uas", "Supported": "timer", "Allow": tc.allow}})
			if err != nil {
				t.Fatal(err)
			}
			r := <-a.got
			waitArmed(t, clk)
			for i := range 3 {
				clk.Advance(45 * time.Second)
				select {
				case got := <-call.Refreshed():
					if got != tc.want {
						t.Fatalf("refresh %d by %s, want %s", i, got, tc.want)
					}
				case <-ctx.Done():
					t.Fatalf("no refresh %d", i)
				}
				waitArmed(t, clk) // armed again once the refresh was answered
			}
			select {
			case <-call.Ended():
				t.Fatal("the call ended")
			case err := <-r.runErr:
				t.Fatalf("Run returned %v", err)
			default:
			}
			_ = call.Hangup(ctx)
		})
	}
}

// An UPDATE with an SDP offer is answered as a re-INVITE's offer is: with an SDP answer.
func TestUpdateWithAnOffer(t *testing.T) {
	a := newAnswering(0)
	tr := startTrunk(t, "127.0.0.1", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-a.got
	res, err := call.Update(ctx, nil, call.OfferSDP("sendonly", 2))
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("UPDATE: %v %v", res, err)
	}
	if !strings.Contains(string(res.Body()), "a=recvonly") {
		t.Errorf("the answer to a sendonly offer is not recvonly:\n%s", res.Body())
	}
	if res.GetHeader("Session-Expires") != nil {
		t.Error("a call without session timers got a Session-Expires")
	}
	_ = call.Hangup(ctx)
}
