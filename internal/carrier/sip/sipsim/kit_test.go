package sipsim_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/sip"
	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/voice"
)

// settings are KEY=VALUE lines as the registry's settings: only Value is read.
type settings map[string]string

func (s settings) Value(env string) string       { return s[env] }
func (s settings) Duration(string) time.Duration { return 0 }
func (s settings) Int(string) int                { return 0 }
func (s settings) Bool(string) bool              { return false }
func (s settings) Source(string) string          { return "test" }

func settingsOf(lines []string) settings {
	s := settings{}
	for _, kv := range lines {
		k, v, _ := strings.Cut(kv, "=")
		s[k] = v
	}
	return s
}

// greetFrames is the greeting every admitted call plays: 500 ms of a loud pattern.
const greetFrames = 25

// engine stands in for Handset's call engine behind a real trunk: every admitted leg runs
// with a sink that notes the caller's audio and keys, and plays a greeting.
type engine struct {
	mu     sync.Mutex
	legs   []*admitted
	change chan struct{}
}

type admitted struct {
	hangUp context.CancelFunc // Handset ending the call
	runErr chan error
	mu     sync.Mutex
	loud   int // frames of the caller's speech heard
	digits []string
}

func (a *admitted) Audio(f []byte) {
	if len(f) > 0 && f[0] == 0x35 {
		a.mu.Lock()
		a.loud++
		a.mu.Unlock()
	}
}
func (a *admitted) Mark(string) {}
func (a *admitted) DTMF(d string) {
	a.mu.Lock()
	a.digits = append(a.digits, d)
	a.mu.Unlock()
}
func (a *admitted) Malformed(error) {}

func (e *engine) admit(leg voice.Leg) (<-chan struct{}, error) {
	ctx, cancel := context.WithCancel(context.Background())
	a := &admitted{hangUp: cancel, runErr: make(chan error, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.runErr <- leg.Run(ctx, a)
	}()
	go func() {
		frame := make([]byte, leg.Info().Format.FrameBytes())
		for i := range frame {
			frame[i] = 0x20 // loud in either law
		}
		for range greetFrames {
			if leg.SendAudio(ctx, frame) != nil {
				return
			}
		}
	}()
	e.mu.Lock()
	e.legs = append(e.legs, a)
	e.mu.Unlock()
	select {
	case e.change <- struct{}{}:
	default:
	}
	return done, nil
}

func (e *engine) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.legs)
}

func (e *engine) leg(t *testing.T, n int) *admitted {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for e.count() < n {
		select {
		case <-e.change:
		case <-deadline:
			t.Fatalf("leg %d was never admitted", n)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.legs[n-1]
}

// waitFor polls a leg's sink: the sink has no events to wait on, and the bound is generous.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

// startTrunk starts the kit's vendor and a real trunk configured by the vendor's Settings.
func startTrunk(t *testing.T, o simkit.VendorOptions) (simkit.Vendor, *engine) {
	t.Helper()
	v, err := sipsim.Kit.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = v.Close() })
	opts, err := sip.ReadOptions(settingsOf(v.Settings("")))
	if err != nil {
		t.Fatalf("the kit's settings: %v", err)
	}
	e := &engine{change: make(chan struct{}, 1)}
	tr, err := sip.Start(opts, carrier.Inbound{Admit: e.admit, Draining: func() bool { return false },
		Memory: carriertest.NewMemory(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return v, e
}

func wait(t *testing.T, p phone.Phone, what string, cond func(phone.Snapshot) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitFor(ctx, cond); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, p.Snapshot())
	}
}

// A call through the kit: the phone hears the greeting and where it ended, Handset hears
// the caller's speech and key press, and the caller's hang-up ends the leg cleanly.
func TestKitCallHearsTheGreetingAndIsHeard(t *testing.T) {
	v, e := startTrunk(t, simkit.VendorOptions{})
	ctx := context.Background()
	p, err := v.Call(ctx, "", simkit.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leg := e.leg(t, 1)
	wait(t, p, "the greeting's end", func(s phone.Snapshot) bool { return s.ReplyEnds() >= 1 })
	segs := p.SpeechSegments()
	if len(segs) != 1 || segs[0].Duration() < 400*time.Millisecond || segs[0].Duration() > 600*time.Millisecond {
		t.Fatalf("heard speech %v, want the 500 ms greeting once\n%s", segs, p.Snapshot())
	}
	end := p.Snapshot().Filter(phone.ReplyEnded)[0]
	if end.End < segs[0].End-20*time.Millisecond || end.End > segs[0].End+20*time.Millisecond || end.At+20*time.Millisecond-end.End < phone.ReplyGap {
		t.Fatalf("reply end %v against the greeting heard %v: want it at the greeting's end, told %v later", end, segs[0], phone.ReplyGap)
	}

	speech := make([]byte, 8000/5) // 200 ms
	for i := range speech {
		speech[i] = 0x35
	}
	if err := p.SayAndWait(ctx, speech); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the caller's speech", func() bool { leg.mu.Lock(); defer leg.mu.Unlock(); return leg.loud >= 8 })
	if err := p.DTMF("7"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the key press", func() bool { leg.mu.Lock(); defer leg.mu.Unlock(); return len(leg.digits) > 0 })
	leg.mu.Lock()
	digits := strings.Join(leg.digits, "")
	leg.mu.Unlock()
	if digits != "7" {
		t.Fatalf("Handset heard keys %q, want 7 once", digits)
	}
	if err := p.Hangup(); err != nil {
		t.Fatalf("hang up: %v", err)
	}
	select {
	case err := <-leg.runErr:
		if err != nil {
			t.Fatalf("the leg ended with %v, want the caller's hang-up (nil)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the leg did not end after the caller's BYE")
	}
	if n := len(p.ProtocolErrors()); n > 0 {
		t.Fatalf("%d protocol errors: %v", n, p.ProtocolErrors())
	}
}

// Handset hanging up (its BYE) ends the phone's call cleanly, as Handset's choice.
func TestKitCallEndedByHandset(t *testing.T) {
	v, e := startTrunk(t, simkit.VendorOptions{Lean: true})
	p, err := v.Call(context.Background(), "", simkit.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, p, "the greeting's end", func(s phone.Snapshot) bool { return s.ReplyEnds() >= 1 })
	if c := p.Counters(); c.ReceivedFrames < greetFrames || len(p.PlayedAudio()) != 0 {
		t.Fatalf("a lean call counted %+v and kept %d bytes of audio", c, len(p.PlayedAudio()))
	}
	if late, n := v.(simkit.ArrivalMeter).ArrivalLateness(0.5); n < greetFrames || late > time.Second {
		t.Fatalf("the arrival meter timed %d packets, median %v late; want the greeting's %d at least", n, late, greetFrames)
	}
	e.leg(t, 1).hangUp()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the phone's call did not end after Handset's BYE")
	}
	if end, _ := p.Ending(); !end.ByHandset || end.Err != nil {
		t.Fatalf("ending %+v, want Handset's clean hang-up", end)
	}
}

// The forgeries get the refusals they ask for, and what a trunk cannot do is refused as
// unsupported.
func TestKitForgeriesAndUnsupported(t *testing.T) {
	v, e := startTrunk(t, simkit.VendorOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, f := range v.Forgeries("") {
		got, err := f.Send(ctx)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		if !f.Want.Matches(got) {
			t.Errorf("%s: Handset answered %+v, want %+v", f.Name, got, f.Want)
		}
	}
	if n := e.count(); n != 0 {
		t.Fatalf("the forgeries got %d calls admitted", n)
	}
	if _, err := v.WaitCall(ctx, 1); !errors.Is(err, simkit.ErrUnsupported) {
		t.Fatalf("WaitCall: %v, want ErrUnsupported", err)
	}
	for _, o := range []simkit.VendorOptions{{Frame: 40 * time.Millisecond}, {EarlyFrames: 2}} {
		if _, err := sipsim.Kit.Start(ctx, o); !errors.Is(err, simkit.ErrUnsupported) {
			t.Errorf("Start(%+v): %v, want ErrUnsupported", o, err)
		}
	}
}

// A replayed INVITE of an ended call sets up no second call, and Replay's verdict agrees
// with what Handset admitted.
func TestKitReplay(t *testing.T) {
	v, e := startTrunk(t, simkit.VendorOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := v.Replay(ctx, "")
	if n := e.count(); (err == nil) != (n == 1) {
		t.Fatalf("Replay said %v, and Handset admitted %d calls for one call and its replayed INVITE", err, n)
	}
	if err != nil {
		t.Errorf("a replayed INVITE of an ended call: %v", err)
	}
}
