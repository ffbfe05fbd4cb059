package sip

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/emiago/sipgo/sip"

	"github.com/handset-voice/handset/internal/audio/g711"
	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
	"github.com/handset-voice/handset/internal/voice"
)

// bridgeScene is a call from a trunk that refuses REFER (501), with the transfer's target
// on a second simulated trunk that the first's calls are sent through (HANDSET_SIP_TRUNK).
type bridgeScene struct {
	tr       *Trunk
	call     *sipsim.Call // the caller, in PCMU
	run      *legRun      // the agent's side of the call
	answered <-chan *sipsim.Call
	events   chan voice.LegEvent
}

func newBridgeScene(t *testing.T, ctx context.Context, answer sipsim.AnswerOptions) *bridgeScene {
	t.Helper()
	a := newAnswering(0)
	target, err := sipsim.NewCaller(sipsim.CallerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(target.Close)
	tr := startTrunk(t, "127.0.0.1", a, func(o *Options) {
		o.Trunk = &sip.Uri{Scheme: "sip", Host: "127.0.0.1", Port: int(target.Addr().Port())}
	})
	caller, err := sipsim.NewCaller(sipsim.CallerOptions{ReferStatus: sip.StatusNotImplemented})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(caller.Close)
	s := &bridgeScene{tr: tr, answered: target.Answer(answer), events: make(chan voice.LegEvent, 64)}
	if s.call, err = caller.Call(ctx, tr.Addr(), sipsim.CallOptions{}); err != nil {
		t.Fatal(err)
	}
	s.run = <-a.got
	s.run.leg.(*Leg).ReportTo(func(e voice.LegEvent) { s.events <- e })
	if _, err := s.call.WaitReceived(ctx, 3); err != nil {
		t.Fatal(err)
	}
	return s
}

// bridged transfers the call, which the caller's trunk refuses, and returns the target's
// side of the bridge once the agent's leg has ended as after a REFER.
func (s *bridgeScene) bridged(t *testing.T, ctx context.Context) *sipsim.Call {
	t.Helper()
	if err := s.tr.transferInbound(ctx, s.call.SIPCallID(), "+15550109999"); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	var far *sipsim.Call
	select {
	case far = <-s.answered:
	case <-ctx.Done():
		t.Fatal("the target was never called")
	}
	select {
	case err := <-s.run.runErr:
		if err != nil {
			t.Fatalf("the agent's leg ended with %v, want nil (transferred)", err)
		}
	case <-ctx.Done():
		t.Fatal("the agent's leg did not end once bridged")
	}
	return far
}

// levels are 20 ms frames whose samples climb by a quarter each frame: told apart after
// either G.711 law, whose error is a sixteenth at most.
func levels(n int, encode func(int16) byte) ([][]byte, []float64) {
	frames, values := make([][]byte, n), make([]float64, n)
	for i := range n {
		values[i] = 200 * math.Pow(1.25, float64(i))
		f := make([]byte, 160)
		for j := range f {
			f[j] = encode(int16(values[i]))
		}
		frames[i] = f
	}
	return frames, values
}

// heardLevels are the indices of values that packets carried, in arrival order, silence
// left out.
func heardLevels(pkts []sipsim.Packet, decode func(byte) int16, values []float64) []int {
	var heard []int
	for _, p := range pkts {
		v := float64(decode(p.Payload[0]))
		if v < values[0]/2 {
			continue // silence
		}
		best := 0
		for i := range values {
			if math.Abs(math.Log(v/values[i])) < math.Abs(math.Log(v/values[best])) {
				best = i
			}
		}
		heard = append(heard, best)
	}
	return heard
}

// checkHeard fails unless most of the n levels arrived, in order, the last among them.
func checkHeard(t *testing.T, who string, heard []int, n int) {
	t.Helper()
	distinct := 0
	for i, v := range heard {
		if i > 0 && v < heard[i-1] {
			t.Fatalf("%s heard levels out of order: %v", who, heard)
		}
		if i == 0 || v != heard[i-1] {
			distinct++
		}
	}
	if distinct < n*3/4 || heard[len(heard)-1] != n-1 {
		t.Fatalf("%s heard levels %v: want most of 0-%d, in order", who, heard, n-1)
	}
}

// waitLevel waits until call has received a packet of level last.
func waitLevel(t *testing.T, ctx context.Context, call *sipsim.Call, decode func(byte) int16, values []float64) []int {
	t.Helper()
	for n := 1; ; n++ {
		pkts, err := call.WaitReceived(ctx, n)
		if err != nil {
			t.Fatalf("the last level never arrived: %v", err)
		}
		if h := heardLevels(pkts[len(pkts)-1:], decode, values); len(h) == 1 && h[0] == len(values)-1 {
			return heardLevels(pkts, decode, values)
		}
	}
}

// When the caller's trunk refuses REFER, Handset calls the target itself and bridges: what
// each side says reaches the other (PCMU to PCMA and back), a key pressed crosses as an
// RFC 4733 event, and the journal tells the story.
func TestRefusedReferIsBridged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newBridgeScene(t, ctx, sipsim.AnswerOptions{Codec: "PCMA"})
	far := s.bridged(t, ctx)

	const n = 20
	toCaller, values := levels(n, g711.EncodeAlawSample)
	if err := far.Play(ctx, toCaller); err != nil {
		t.Fatal(err)
	}
	checkHeard(t, "the caller", waitLevel(t, ctx, s.call, g711.DecodeMulawSample, values), n)

	toTarget, _ := levels(n, g711.EncodeMulawSample)
	if err := s.call.Play(ctx, toTarget); err != nil {
		t.Fatal(err)
	}
	checkHeard(t, "the target", waitLevel(t, ctx, far, g711.DecodeAlawSample, values), n)

	if err := s.call.SendDTMF(ctx, "7"); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, ctx, far, 7)
	if status, err := s.call.Info(ctx, "application/dtmf-relay", []byte("Signal=5\r\nDuration=160\r\n")); err != nil || status != 200 {
		t.Fatalf("INFO: %d %v", status, err)
	}
	waitEvent(t, ctx, far, 5)

	if err := s.call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	waitNoBridges(t, ctx, s.tr)

	want := []voice.LegEvent{{Name: "REFER", Direction: "out"}, {Name: "501 Refused", Direction: "in", Reason: "REFER refused"},
		{Name: "INVITE", Direction: "out", Reason: "bridge"}, {Name: "200 OK", Direction: "in", Reason: "bridge"},
		{Name: "bridging", Direction: "out", Reason: "+15550109999"}}
	for _, w := range want { // in this order, among the call's other messages
		for found := false; !found; {
			select {
			case e := <-s.events:
				found = e.Name == w.Name && e.Direction == w.Direction && e.Reason == w.Reason
			case <-ctx.Done():
				t.Fatalf("the journal never got %+v", w)
			}
		}
	}
}

// A BYE from either side of a bridge hangs up the other.
func TestBridgeEndsOnEitherSidesBye(t *testing.T) {
	for _, side := range []string{"caller", "target"} {
		t.Run(side, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := newBridgeScene(t, ctx, sipsim.AnswerOptions{})
			far := s.bridged(t, ctx)
			hangs, other := s.call, far
			if side == "target" {
				hangs, other = far, s.call
			}
			if err := hangs.Hangup(ctx); err != nil {
				t.Fatal(err)
			}
			select {
			case <-other.Ended():
			case <-ctx.Done():
				t.Fatalf("the %s hung up, and the other side was not", side)
			}
			waitNoBridges(t, ctx, s.tr)
			if n := s.tr.dialogs.count(); n != 0 {
				t.Errorf("%d inbound dialogs kept after the bridge ended", n)
			}
		})
	}
}

// Closing the trunk (after the gateway's drain) hangs up both sides of every bridge.
func TestTrunkCloseEndsBridges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newBridgeScene(t, ctx, sipsim.AnswerOptions{})
	far := s.bridged(t, ctx)
	s.tr.Close()
	for _, c := range []*sipsim.Call{s.call, far} {
		select {
		case <-c.Ended():
		case <-ctx.Done():
			t.Fatal("a side of the bridge was not hung up when the trunk closed")
		}
	}
}

// When the target does not answer (busy), the transfer fails as a refusal and the caller
// stays with the agent, whose audio still reaches them.
func TestBridgeFailureKeepsTheCallerWithTheAgent(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := newBridgeScene(t, ctx, sipsim.AnswerOptions{Status: sip.StatusBusyHere})
	err := s.tr.transferInbound(ctx, s.call.SIPCallID(), "+15550109999")
	if !errors.Is(err, carrier.ErrRejected) {
		t.Fatalf("transfer to a busy target: %v, want ErrRejected", err)
	}
	select {
	case err := <-s.run.runErr:
		t.Fatalf("the agent's leg ended (%v) though the transfer failed", err)
	default:
	}
	const n = 10
	frames, values := levels(n, g711.EncodeMulawSample)
	for _, f := range frames {
		if err := s.run.leg.SendAudio(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	checkHeard(t, "the caller", waitLevel(t, ctx, s.call, g711.DecodeMulawSample, values), n)
	if waitNoBridges(t, ctx, s.tr); s.tr.dialogs.count() != 1 {
		t.Errorf("%d inbound dialogs, want the caller's", s.tr.dialogs.count())
	}
}

// Which refusals of REFER Handset works around by bridging.
func TestRefusesRefer(t *testing.T) {
	for status, want := range map[int]bool{403: true, 405: true, 420: true, 489: true, 501: true, 603: true,
		400: false, 401: false, 404: false, 481: false, 484: false, 486: false, 491: false, 500: false, 503: false} {
		if got := refusesRefer(status); got != want {
			t.Errorf("refusesRefer(%d) = %v, want %v", status, got, want)
		}
	}
}

func waitNoBridges(t *testing.T, ctx context.Context, tr *Trunk) {
	t.Helper()
	for {
		tr.bridges.mu.Lock()
		n := len(tr.bridges.live)
		tr.bridges.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d bridges still live", n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A call Handset placed whose far end refuses REFER is bridged the same way: Handset
// calls the target through the trunk, the two parties hear each other, and the target's
// hang-up hangs up the party Handset had called.
func TestPlacedCallRefusedReferIsBridged(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := newAnswering(0)
	trunk, err := sipsim.NewCaller(sipsim.CallerOptions{ReferStatus: sip.StatusMethodNotAllowed})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(trunk.Close)
	answered := trunk.Answer(sipsim.AnswerOptions{})
	tr := startTrunk(t, "127.0.0.1", a, func(o *Options) {
		o.Trunk = &sip.Uri{Scheme: "sip", Host: "127.0.0.1", Port: int(trunk.Addr().Port())}
	})
	placed, err := tr.place(carrier.Dial{To: "+15550102000", From: "+15550001111"})
	if err != nil {
		t.Fatal(err)
	}
	callee := <-answered
	run := <-a.got
	if err := tr.transferPlaced(ctx, placed.Ref, "+15550109999"); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	var desk *sipsim.Call
	select {
	case desk = <-answered:
	case <-ctx.Done():
		t.Fatal("the target was never called")
	}
	select {
	case err := <-run.runErr:
		if err != nil {
			t.Fatalf("the agent's leg ended with %v, want nil (transferred)", err)
		}
	case <-ctx.Done():
		t.Fatal("the agent's leg did not end once bridged")
	}
	const n = 20
	frames, values := levels(n, g711.EncodeMulawSample)
	if err := desk.Play(ctx, frames); err != nil {
		t.Fatal(err)
	}
	checkHeard(t, "the party called", waitLevel(t, ctx, callee, g711.DecodeMulawSample, values), n)
	if err := callee.Play(ctx, frames); err != nil {
		t.Fatal(err)
	}
	checkHeard(t, "the target", waitLevel(t, ctx, desk, g711.DecodeMulawSample, values), n)
	if err := desk.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-callee.Ended():
	case <-ctx.Done():
		t.Fatal("the target hung up, and the party called was not")
	}
	waitNoBridges(t, ctx, tr)
}

// A caller who hangs up while the target rings stops the ringing (CANCEL): the transfer
// fails at once rather than after the ring timeout, and no bridge is left.
func TestCallerHangingUpStopsTheTargetRinging(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), bridgeRingTimeout/2)
	defer cancel()
	s := newBridgeScene(t, ctx, sipsim.AnswerOptions{Ring: time.Hour})
	transferred := make(chan error, 1)
	go func() { transferred <- s.tr.transferInbound(ctx, s.call.SIPCallID(), "+15550109999") }()
	// Hang up once the target rings: the journal's 180 from the second call says it does.
	for ringing := false; !ringing; {
		select {
		case e := <-s.events:
			ringing = e.Name == "180" && e.Reason == "bridge"
		case <-ctx.Done():
			t.Fatal("the target never rang")
		}
	}
	if err := s.call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-transferred:
		if err == nil {
			t.Fatal("the transfer of a caller who hung up succeeded")
		}
	case <-ctx.Done():
		t.Fatal("the target rang on after the caller hung up")
	}
	waitNoBridges(t, ctx, s.tr)
}

// waitEvent waits until call receives an RFC 4733 event for key code.
func waitEvent(t *testing.T, ctx context.Context, call *sipsim.Call, code byte) {
	t.Helper()
	for seen, n := 0, 1; ; n++ { // the key arrives as telephone-events, audio held back
		pkts, err := call.WaitReceived(ctx, n)
		if err != nil {
			t.Fatalf("key %d never arrived: %v", code, err)
		}
		for _, p := range pkts[seen:] {
			if p.PayloadType == 101 && p.Payload[0] == code {
				return
			}
		}
		seen = len(pkts)
	}
}
