package sip

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/sip/allow"
	"github.com/handset-voice/handset/internal/carrier/sip/sdp"
	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
	"github.com/handset-voice/handset/internal/voice"
)

// answering is what a test's call engine does with each leg it admits: run it with a
// recording sink, send a greeting of greetFrames frames of a tone with a mark after it.
type answering struct {
	greetFrames int
	refuse      atomic.Pointer[error] // when set, admissions are refused with it
	hold        chan struct{}         // when set, admissions wait for it to close

	mu   sync.Mutex
	legs []*legRun
	got  chan *legRun
}

type legRun struct {
	leg    voice.Leg
	sink   *recordingSink
	runErr chan error
	sent   chan error // the greeting's SendAudio and SendMark, once done
}

func newAnswering(greetFrames int) *answering {
	return &answering{greetFrames: greetFrames, got: make(chan *legRun, 16)}
}

func (a *answering) admit(leg voice.Leg) (<-chan struct{}, error) {
	if a.hold != nil {
		<-a.hold
	}
	if err := a.refuse.Load(); err != nil {
		return nil, *err
	}
	r := &legRun{leg: leg, sink: newRecordingSink(), runErr: make(chan error, 1), sent: make(chan error, 1)}
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(done)
		defer cancel()
		r.runErr <- leg.Run(ctx, r.sink)
	}()
	go func() {
		frame := toneFrame(leg.Info().Format.FrameBytes())
		var err error
		for range a.greetFrames {
			if err = leg.SendAudio(ctx, frame); err != nil {
				break
			}
		}
		if err == nil {
			err = leg.SendMark(ctx, "greeting")
		}
		r.sent <- err
	}()
	a.mu.Lock()
	a.legs = append(a.legs, r)
	a.mu.Unlock()
	a.got <- r
	return done, nil
}

// toneFrame is a loud mu-law/A-law pattern that is not silence in either law.
func toneFrame(n int) []byte {
	f := make([]byte, n)
	for i := range f {
		if i%2 == 0 {
			f[i] = 0x20
		} else {
			f[i] = 0xA0
		}
	}
	return f
}

type recordingSink struct {
	mu     sync.Mutex
	frames int
	heard  int // frames carrying the caller's test pattern (0x35)
	marks  []string
	digits []string
	bad    []error
	event  chan struct{}
}

func newRecordingSink() *recordingSink { return &recordingSink{event: make(chan struct{}, 1)} }

func (s *recordingSink) note(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
	select {
	case s.event <- struct{}{}:
	default:
	}
}
func (s *recordingSink) Audio(f []byte) {
	s.note(func() {
		s.frames++
		if len(f) > 0 && f[0] == 0x35 && f[len(f)-1] == 0x35 {
			s.heard++
		}
	})
}
func (s *recordingSink) Mark(name string)    { s.note(func() { s.marks = append(s.marks, name) }) }
func (s *recordingSink) DTMF(digit string)   { s.note(func() { s.digits = append(s.digits, digit) }) }
func (s *recordingSink) Malformed(err error) { s.note(func() { s.bad = append(s.bad, err) }) }

// waitFor waits until cond holds of the sink.
func (s *recordingSink) waitFor(t *testing.T, what string, cond func(*recordingSink) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		ok := cond(s)
		s.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-s.event:
		case <-deadline:
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

// startTrunkWith is startTrunk with the options changed by set first.
func startTrunkWith(t *testing.T, allowSpec string, a *answering, set func(*Options)) *Trunk {
	t.Helper()
	return startTrunk(t, allowSpec, a, set)
}

// startTrunk runs a trunk on loopback that admits calls through a, its options changed by
// edits first.
func startTrunk(t *testing.T, allowSpec string, a *answering, edits ...func(*Options)) *Trunk {
	t.Helper()
	return startLoggedTrunk(t, allowSpec, a, slog.New(slog.DiscardHandler), edits...)
}

// startLoggedTrunk is startTrunk logging to log.
func startLoggedTrunk(t *testing.T, allowSpec string, a *answering, log *slog.Logger, edits ...func(*Options)) *Trunk {
	t.Helper()
	list, err := allow.Parse(allowSpec)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Listen: netip.MustParseAddrPort("127.0.0.1:0"), Transports: []string{"udp", "tcp"},
		Allow: list, RTPLow: 31000, RTPHigh: 31999, Codecs: []sdp.Codec{sdp.PCMU, sdp.PCMA},
	}
	for _, edit := range edits {
		edit(&opts)
	}
	tr, err := Start(opts, carrier.Inbound{Admit: a.admit, Draining: func() bool { return false },
		Memory: carriertest.NewMemory(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	return tr
}

func newCaller(t *testing.T) *sipsim.Caller {
	t.Helper()
	c, err := sipsim.NewCaller(sipsim.CallerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// An INVITE from an allowed source gets 100 and 180 at once, 200 OK with an answer, RTP
// before or with the 200 OK, the greeting only after the ACK, and a mark once it was sent.
func TestInboundCallAnsweredWithMediaFlowing(t *testing.T) {
	a := newAnswering(25) // 500 ms of greeting
	tr := startTrunk(t, "127.0.0.1", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{From: "+15551230000", To: "+15557650000"})
	if err != nil {
		t.Fatal(err)
	}
	var codes []int
	for _, r := range call.Responses {
		codes = append(codes, r.Status)
	}
	// sipgo hands responses to the transaction on goroutines of their own, so two that
	// arrive together may be seen in either order: both provisionals, then 200.
	if !slices.Contains(codes, 100) || !slices.Contains(codes, 180) || codes[len(codes)-1] != 200 {
		t.Fatalf("responses %v, want 100 and 180, then 200", codes)
	}
	r := <-a.got
	info := r.leg.Info()
	if info.Carrier != Name || info.From != "+15551230000" || info.To != "+15557650000" || info.Direction != voice.Inbound ||
		info.CarrierRef != call.SIPCallID() {
		t.Errorf("leg info %+v", info)
	}
	pkts, err := call.WaitReceived(ctx, 40)
	if err != nil {
		t.Fatal(err)
	}
	if first := pkts[0].At.Sub(call.Answered); first > 100*time.Millisecond {
		t.Errorf("first RTP packet %v after the 200 OK, want within 100 ms", first)
	}
	var loud int
	for _, p := range pkts {
		if p.PayloadType != 0 {
			t.Fatalf("payload type %d, want PCMU (0)", p.PayloadType)
		}
		if p.Payload[0] == 0x20 {
			loud++
		}
	}
	if loud == 0 {
		t.Errorf("no greeting frame among the first %d packets", len(pkts))
	}
	r.sink.waitFor(t, "the greeting's mark", func(s *recordingSink) bool { return len(s.marks) == 1 })
	if err := <-r.sent; err != nil {
		t.Fatal(err)
	}

	// The caller's audio reaches the sink as 20 ms frames.
	frame := make([]byte, 160)
	for i := range frame {
		frame[i] = 0x35
	}
	payloads := make([][]byte, 25)
	for i := range payloads {
		payloads[i] = frame
	}
	if err := call.Play(ctx, payloads); err != nil {
		t.Fatal(err)
	}
	r.sink.waitFor(t, "the caller's frames", func(s *recordingSink) bool { return s.heard >= 24 })

	// A key pressed as RFC 4733 events reaches the call once; one sent by INFO too.
	if err := call.SendDTMF(ctx, "7"); err != nil {
		t.Fatal(err)
	}
	if status, err := call.Info(ctx, "application/dtmf-relay", []byte("Signal=#\r\nDuration=160\r\n")); err != nil || status != 200 {
		t.Fatalf("INFO: %d %v", status, err)
	}
	r.sink.waitFor(t, "two digits", func(s *recordingSink) bool { return len(s.digits) >= 2 })
	time.Sleep(200 * time.Millisecond) // any duplicate of the event would have arrived by now
	r.sink.mu.Lock()
	digits := append([]string(nil), r.sink.digits...)
	r.sink.mu.Unlock()
	if len(digits) != 2 || digits[0] != "7" || digits[1] != "#" {
		t.Errorf("digits %q, want [7 #]", digits)
	}

	// The caller hangs up: Run returns nil.
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-r.runErr:
		if err != nil {
			t.Errorf("Run after the caller's BYE: %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return after the caller's BYE")
	}
	if n := tr.dialogs.count(); n != 0 {
		t.Errorf("%d dialogs left after the call", n)
	}
}

// When the call ends on Handset's side, the caller gets a BYE.
func TestHandsetHangsUpWithBye(t *testing.T) {
	a := newAnswering(5)
	var logged carriertest.Logs
	tr := startLoggedTrunk(t, "127.0.0.0/8", a, slog.New(slog.NewTextHandler(&logged, nil)))
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := <-a.got
	// End the call as the engine would: cancel Run's context. The test's admit owns it,
	// so close the leg's dialog through Run's context by hanging up from Handset.
	r.leg.(*Leg).hangUp()
	select {
	case <-call.Ended():
	case <-ctx.Done():
		t.Fatal("no BYE reached the caller")
	}
	// The call's RTP counters are logged as its media ends, for diagnosing a caller who
	// was not heard.
	for !regexp.MustCompile(`RTP media stats.*packets_in=\d+ packets_out=[1-9].*concealed_frames=\d+ restarts=\d+`).MatchString(logged.String()) {
		if ctx.Err() != nil {
			t.Fatalf("no RTP stats logged at the call's end: %s", logged.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A source the allow-list does not name gets 403 and no dialog; past the refusal rate it
// gets nothing at all.
func TestStrangersAreRefused(t *testing.T) {
	a := newAnswering(0)
	tr := startTrunk(t, "192.0.2.0/24", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{})
	var refused *sipsim.Refused
	if !errors.As(err, &refused) || refused.Status != 403 {
		t.Fatalf("a stranger's INVITE: %v, want 403", err)
	}
	a.mu.Lock()
	admitted := len(a.legs)
	a.mu.Unlock()
	if admitted != 0 || tr.dialogs.count() != 0 {
		t.Errorf("a stranger's INVITE reached the call engine")
	}
}

// An offer with no codec Handset speaks gets 488; an admission refused gets 503.
func TestRefusedOffersAndAdmissions(t *testing.T) {
	a := newAnswering(0)
	tr := startTrunk(t, "127.0.0.1", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	g729 := []byte("v=0\r\no=x 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 40000 RTP/AVP 18\r\na=rtpmap:18 G729/8000\r\n")
	_, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{Offer: g729})
	var refused *sipsim.Refused
	if !errors.As(err, &refused) || refused.Status != 488 {
		t.Errorf("a G.729-only offer: %v, want 488", err)
	}
	capacity := errors.New("at capacity")
	a.refuse.Store(&capacity)
	_, err = caller.Call(ctx, tr.Addr(), sipsim.CallOptions{})
	if !errors.As(err, &refused) || refused.Status != 503 {
		t.Errorf("a refused admission: %v, want 503", err)
	}
}

// A CANCEL while ringing ends the INVITE 487 and the leg.
func TestCancelWhileRinging(t *testing.T) {
	a := newAnswering(0)
	a.hold = make(chan struct{}) // the call engine is slow to take the call
	tr := startTrunk(t, "127.0.0.1", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, _ := caller.CallAndCancel(ctx, tr.Addr(), sipsim.CallOptions{})
	close(a.hold)
	// The CANCEL came while the call engine was taking the call, or before: either no
	// call starts, or the one that did ends, not established.
	select {
	case r := <-a.got:
		select {
		case err := <-r.runErr:
			if err == nil {
				t.Errorf("Run of a cancelled call returned nil, want why it was not established")
			}
		case <-ctx.Done():
			t.Fatal("the cancelled call's leg never ended")
		}
	case <-time.After(time.Second):
	}
	var codes []int
	for _, r := range got {
		codes = append(codes, r.Status)
	}
	if len(codes) == 0 || codes[len(codes)-1] != 487 {
		t.Errorf("responses %v, want the INVITE to end 487", codes)
	}
}

// A re-INVITE that holds the call stops Handset's RTP; one that resumes it starts it again
// with the marker bit; one with the same SDP version (a session refresh) changes nothing.
func TestReinviteHoldsAndResumes(t *testing.T) {
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
	if _, err := call.WaitReceived(ctx, 5); err != nil {
		t.Fatal(err)
	}
	status, answer, err := call.Reinvite(ctx, call.OfferSDP("sendonly", 2))
	if err != nil || status != 200 {
		t.Fatalf("hold: %d %v", status, err)
	}
	if !strings.Contains(string(answer), "a=recvonly") {
		t.Errorf("the answer to a sendonly offer is not recvonly:\n%s", answer)
	}
	time.Sleep(100 * time.Millisecond) // packets sent before the hold took effect land
	held := len(call.Received())
	time.Sleep(300 * time.Millisecond) // 15 ticks
	if n := len(call.Received()) - held; n > 1 {
		t.Errorf("%d RTP packets arrived during the hold", n)
	}
	status, _, err = call.Reinvite(ctx, call.OfferSDP("sendrecv", 3))
	if err != nil || status != 200 {
		t.Fatalf("resume: %d %v", status, err)
	}
	pkts, err := call.WaitReceived(ctx, len(call.Received())+3)
	if err != nil {
		t.Fatal(err)
	}
	resumed := slices.IndexFunc(pkts[held:], func(p sipsim.Packet) bool { return p.Marker })
	if resumed < 0 {
		t.Error("no packet after the hold carries the marker bit")
	}
	// The same version again: a refresh, answered with the same body.
	_, refresh, err := call.Reinvite(ctx, call.OfferSDP("sendrecv", 3))
	if err != nil {
		t.Fatal(err)
	}
	_, again, err := call.Reinvite(ctx, call.OfferSDP("sendrecv", 3))
	if err != nil || !bytes.Equal(refresh, again) {
		t.Errorf("a session refresh changed the answer:\n%s\n%s", refresh, again)
	}
	_ = call.Hangup(ctx)
}

// TCP signalling works as UDP does.
func TestInboundCallOverTCP(t *testing.T) {
	a := newAnswering(5)
	tr := startTrunk(t, "127.0.0.1", a)
	caller, err := sipsim.NewCaller(sipsim.CallerOptions{Transport: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := <-a.got
	if _, err := call.WaitReceived(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-r.runErr; err != nil {
		t.Errorf("Run after a BYE over TCP: %v", err)
	}
}

// Clear stops the audio queued ahead at once: the next packet is silence, and the mark
// after the audio comes back (as dropped) instead of waiting for audio never sent.
func TestClearStopsTheQueuedAudioAtOnce(t *testing.T) {
	a := newAnswering(100) // two seconds queued ahead at once
	tr := startTrunk(t, "127.0.0.1", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Hangup(ctx)
	r := <-a.got
	if err := <-r.sent; err != nil {
		t.Fatal(err)
	}
	waitLoudPackets(ctx, t, call, 10)
	if err := r.leg.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	cleared := time.Now()
	r.sink.waitFor(t, "the mark back after the clear", func(s *recordingSink) bool { return len(s.marks) == 1 })
	if took := time.Since(cleared); took > 200*time.Millisecond {
		t.Errorf("the mark came back %v after the clear", took)
	}
	time.Sleep(300 * time.Millisecond)
	var after int
	for _, p := range call.Received() {
		if p.At.After(cleared.Add(5*time.Millisecond)) && p.Payload[0] == 0x20 {
			after++
		}
	}
	if after > 1 { // one packet may have been on its way
		t.Errorf("%d packets of the cleared audio arrived after the clear", after)
	}
}

func waitLoudPackets(ctx context.Context, t *testing.T, call *sipsim.Call, n int) {
	t.Helper()
	for have := 1; ; have++ {
		pkts, err := call.WaitReceived(ctx, have)
		if err != nil {
			t.Fatal(err)
		}
		loud := 0
		for _, p := range pkts {
			if p.Payload[0] == 0x20 {
				loud++
			}
		}
		if loud >= n {
			return
		}
	}
}

// An INVITE of a call already taken (a replay after the call ended, or a looped copy) is
// refused 482 and starts nothing.
func TestRepeatedInviteIsRefused(t *testing.T) {
	a := newAnswering(0)
	tr := startTrunk(t, "127.0.0.1", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o := sipsim.CallOptions{CallID: "replayed-call@192.0.2.7", FromTag: "f1x3d"}
	call, err := caller.Call(ctx, tr.Addr(), o)
	if err != nil {
		t.Fatal(err)
	}
	<-a.got
	if err := call.Hangup(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = caller.Call(ctx, tr.Addr(), o)
	var refused *sipsim.Refused
	if !errors.As(err, &refused) || refused.Status != 482 {
		t.Fatalf("the same INVITE again: %v, want 482", err)
	}
	a.mu.Lock()
	admitted := len(a.legs)
	a.mu.Unlock()
	if admitted != 1 {
		t.Errorf("%d calls admitted, want 1", admitted)
	}
}

// A call that came in is transferred with REFER in its dialog: the trunk accepts, reports
// the new call answered with a NOTIFY, and hangs up; Transfer returns once it did.
func TestInboundTransferWithRefer(t *testing.T) {
	a := newAnswering(0)
	tr := startTrunk(t, "127.0.0.1", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := <-a.got
	if _, err := call.WaitReceived(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := tr.transferInbound(ctx, call.SIPCallID(), "+15550109999"); err != nil {
		t.Fatal(err)
	}
	if got := call.ReferredTo(); !strings.Contains(got, "sip:+15550109999@127.0.0.1") {
		t.Errorf("Refer-To %q, want the number at the trunk's host", got)
	}
	select {
	case err := <-r.runErr:
		if err != nil {
			t.Errorf("Run after the trunk took the call over: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the leg did not end after the transfer")
	}
	if err := tr.transferInbound(ctx, "no-such-call", "+15550109999"); err == nil {
		t.Error("a transfer of an unknown call succeeded")
	}
}
