package telnyx

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/telnyx/telnyxsim"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/voice"
)

// withFake is Handset's Telnyx carrier against the fake: its REST API, its signed
// webhooks and its simulated caller on the media stream.
type withFake struct {
	fake   *telnyxsim.Server
	caller *telnyxsim.Caller
	legs   chan voice.Leg
	memory *carriertest.Memory
	rest   *REST
	refuse atomic.Bool // Admit refuses every call
}

const (
	ourNumber      = "+15550002222"
	testConnection = "1494404757140276705"
)

func newWithFake(t *testing.T, codec Codec, stream telnyxsim.StreamOptions, tweaks ...func(*telnyxsim.Options)) *withFake {
	t.Helper()
	f := &withFake{legs: make(chan voice.Leg, 4), memory: carriertest.NewMemory()}
	var handset http.Handler
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handset.ServeHTTP(w, r) }))
	t.Cleanup(hs.Close)
	f.caller = telnyxsim.NewCaller(telnyxsim.CallerOptions{Stream: stream})
	o := telnyxsim.Options{
		ConnectionID: testConnection,
		Numbers:      []telnyxsim.Number{{PhoneNumber: ourNumber, ConnectionID: testConnection}},
		WebhookURL:   hs.URL + WebhookPath, OpenStream: f.caller.OpenStream,
	}
	for _, tweak := range tweaks {
		tweak(&o)
	}
	f.fake = telnyxsim.New(o)
	f.caller.Bind(f.fake)
	api := httptest.NewServer(f.fake)
	t.Cleanup(func() { f.fake.Close(); api.Close() })
	key, err := ParsePublicKey(f.fake.PublicKeyBase64())
	if err != nil {
		t.Fatal(err)
	}
	rest, err := NewREST(RESTOptions{BaseURL: api.URL + "/v2", APIKey: f.fake.APIKey(), ConnectionID: f.fake.ConnectionID()})
	if err != nil {
		t.Fatal(err)
	}
	f.rest = rest
	mux := http.NewServeMux()
	New(Options{
		PublicKey: key, APIKey: f.fake.APIKey(), Command: rest.Command, Codec: codec,
		PublicURL: hs.URL, Memory: f.memory,
		Admit: func(l voice.Leg) (<-chan struct{}, error) {
			if f.refuse.Load() {
				return nil, errors.New("at capacity")
			}
			f.legs <- l
			return make(chan struct{}), nil
		},
	}).Register(mux)
	handset = mux
	return f
}

// ring places an inbound call and returns the caller's phone and Handset's leg, running.
func (f *withFake) ring(t *testing.T) (*phone.Call, voice.Leg, *sink, <-chan error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	call, err := f.fake.Ring(ctx, "+15550001111", ourNumber, telnyxsim.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.caller.Phone(ctx, call.CallControlID)
	if err != nil {
		t.Fatal(err)
	}
	var leg voice.Leg
	select {
	case leg = <-f.legs:
	case <-ctx.Done():
		t.Fatal("no call admitted")
	}
	rec := newSink()
	return p, leg, rec, run(leg, rec)
}

// tone is n bytes of a recognisable mu-law pattern (no silence byte).
func tone(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(0x10 + i%0x60)
	}
	return b
}

// receivedSpeech is the caller's audio as Handset received it, with the silence the caller
// streams between utterances left out.
func receivedSpeech(s *sink) []byte {
	var out []byte
	for _, f := range s.audio {
		for _, b := range f {
			if b != 0xff && b != 0x7f {
				out = append(out, b)
			}
		}
	}
	return out
}

func TestWholeStreamThroughTheFake(t *testing.T) {
	cases := []struct {
		name   string
		stream telnyxsim.StreamOptions
	}{
		{"plain", telnyxsim.StreamOptions{}},
		{"60 ms chunks", telnyxsim.StreamOptions{ChunkMS: 60}},
		{"shuffled", telnyxsim.StreamOptions{ShuffleWindow: 3}},
		{"frames before start", telnyxsim.StreamOptions{PreStartFrames: 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newWithFake(t, CodecPCMU, c.stream)
			p, leg, rec, done := f.ring(t)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			said := tone(800) // 100 ms
			if err := p.SayAndWait(ctx, said); err != nil {
				t.Fatal(err)
			}
			rec.waitFor(t, "the caller's speech", func(s *sink) bool { return len(receivedSpeech(s)) >= len(said) })
			rec.mu.Lock()
			got := receivedSpeech(rec)
			rec.mu.Unlock()
			if !bytes.Equal(got[:len(said)], said) {
				t.Fatalf("speech arrived changed or out of order")
			}
			if c.stream.PreStartFrames > 0 {
				rec.waitFor(t, "the early key", func(s *sink) bool { return len(s.digits) == 1 })
			}

			reply := tone(1600)
			if err := leg.SendAudio(ctx, reply); err != nil {
				t.Fatal(err)
			}
			if err := leg.SendMark(ctx, "t1-s1"); err != nil {
				t.Fatal(err)
			}
			rec.waitFor(t, "the mark played", func(s *sink) bool { return len(s.marks) == 1 && s.marks[0] == "t1-s1" })
			if played := p.Snapshot().PlayedAudio(); !bytes.Equal(played, reply) {
				t.Errorf("the caller heard %d bytes, want the reply's %d", len(played), len(reply))
			}
			if errs := p.Snapshot().ProtocolErrors(); len(errs) != 0 {
				t.Errorf("protocol errors: %v", errs)
			}
			if err := p.Hangup(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run = %v", err)
				}
			case <-ctx.Done():
				t.Fatal("the caller's hangup did not end the call")
			}
			call, err := f.fake.WaitCall(ctx, p.Ref(), func(c telnyxsim.Call) bool { return !c.Alive })
			if err != nil || call.HangupSource != "caller" {
				t.Errorf("fake call %+v, %v", call, err)
			}
		})
	}
}

// TestMarksOnClearThroughTheFake: with and without Telnyx echoing cleared marks, Handset's
// call hears every mark once.
func TestMarksOnClearThroughTheFake(t *testing.T) {
	for _, echo := range []bool{false, true} {
		t.Run(map[bool]string{false: "no echo", true: "echo"}[echo], func(t *testing.T) {
			f := newWithFake(t, CodecPCMU, telnyxsim.StreamOptions{EchoMarksOnClear: echo})
			p, leg, rec, _ := f.ring(t)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if err := leg.SendAudio(ctx, tone(8000*5)); err != nil { // five seconds: still playing at the clear
				t.Fatal(err)
			}
			for _, m := range []string{"a", "b"} {
				if err := leg.SendMark(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.WaitFor(ctx, func(s phone.Snapshot) bool { return len(s.Marks()) == 2 }); err != nil {
				t.Fatal(err)
			}
			if err := leg.Clear(ctx); err != nil {
				t.Fatal(err)
			}
			if err := p.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Clears() == 1 }); err != nil {
				t.Fatal(err)
			}
			if err := p.DTMF("7"); err != nil { // a marker after any echo
				t.Fatal(err)
			}
			rec.waitFor(t, "the marker", func(s *sink) bool { return len(s.digits) == 1 })
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if got := strings.Join(rec.marks, ","); got != "a,b" {
				t.Errorf("marks %q, want a,b", got)
			}
			if len(rec.malformed) != 0 {
				t.Errorf("malformed: %v", rec.malformed)
			}
		})
	}
}

// TestHandsetHangupStopsTheStream: Handset's hangup command ends the call at the fake,
// whose caller sends stop and closes the stream.
func TestHandsetHangupStopsTheStream(t *testing.T) {
	f := newWithFake(t, CodecPCMU, telnyxsim.StreamOptions{})
	p, _, _, done := f.ring(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := f.rest.Command(ctx, p.Ref(), "hangup", HangupRequest{CommandID: "hangup:" + p.Ref()}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the hangup command did not end the call")
	}
	if err := p.WaitFor(ctx, func(s phone.Snapshot) bool { return s.Ended }); err != nil {
		t.Fatal(err)
	}
	if s := p.Snapshot(); s.Count(phone.StopSent) != 1 {
		t.Errorf("the caller sent %d stops, want 1", s.Count(phone.StopSent))
	}
}

// TestL16ThroughTheFake: L16 at 16 kHz both ways, byte order as pinned.
func TestL16ThroughTheFake(t *testing.T) {
	f := newWithFake(t, CodecL16, telnyxsim.StreamOptions{})
	p, leg, rec, _ := f.ring(t)
	if got := leg.Info().Format; got.Rate != 16000 {
		t.Fatalf("format %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := p.SayAndWait(ctx, tone(800)); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "speech", func(s *sink) bool {
		for _, f := range s.audio {
			for i := 0; i+1 < len(f); i += 2 {
				if v := int16(f[i]) | int16(f[i+1])<<8; v > 2000 || v < -2000 {
					return true
				}
			}
		}
		return false
	})
	if errs := p.Snapshot().ProtocolErrors(); len(errs) != 0 {
		t.Errorf("protocol errors: %v", errs)
	}
}

// hangups are the hangup commands the fake took for call ccid.
func (f *withFake) hangups(ccid string) []telnyxsim.Request {
	var out []telnyxsim.Request
	for _, q := range f.fake.Requests() {
		if q.Method == http.MethodPost && q.Path == "/v2/calls/"+ccid+"/actions/hangup" {
			out = append(out, q)
		}
	}
	return out
}

// TestHandsetEndingTheCallHangsItUp: a Telnyx call outlives its media stream, so when
// Handset ends a call (its context ends) the leg sends the hangup command, once, and the
// call ends at Telnyx from Handset's side, even when Telnyx does not report the stream
// Handset dropped.
func TestHandsetEndingTheCallHangsItUp(t *testing.T) {
	f := newWithFake(t, CodecPCMU, telnyxsim.StreamOptions{}, func(o *telnyxsim.Options) { o.NoStreamFailed = true })
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	call, err := f.fake.Ring(ctx, "+15550001111", ourNumber, telnyxsim.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var leg voice.Leg
	select {
	case leg = <-f.legs:
	case <-ctx.Done():
		t.Fatal("no call admitted")
	}
	callCtx, end := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- leg.Run(callCtx, newSink()) }()
	end()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want the call's end", err)
	}
	ended, err := f.fake.WaitCall(ctx, call.CallControlID, func(c telnyxsim.Call) bool { return !c.Alive })
	if err != nil {
		t.Fatalf("the call is still up at Telnyx: %v", err)
	}
	if ended.HangupSource != "callee" {
		t.Errorf("hangup_source %q, want callee: Handset, which answered, hung up", ended.HangupSource)
	}
	if hs := f.hangups(call.CallControlID); len(hs) != 1 || hs[0].Status != http.StatusOK ||
		!strings.Contains(string(hs[0].Body), `"command_id":"hangup:`+call.CallControlID+`:end"`) {
		t.Errorf("hangup commands %+v, want one with a command_id of its own", hs)
	}
}

// TestRefusedCallIsHungUp: a call Handset cannot take (Admit refuses it) is hung up, not
// left at Telnyx in silence with its stream closed, whether or not Telnyx reports the
// stream as failed.
func TestRefusedCallIsHungUp(t *testing.T) {
	for _, silent := range []bool{false, true} {
		t.Run(map[bool]string{false: "stream failure reported", true: "stream failure silent"}[silent], func(t *testing.T) {
			testRefusedCallIsHungUp(t, silent)
		})
	}
}

func testRefusedCallIsHungUp(t *testing.T, silent bool) {
	f := newWithFake(t, CodecPCMU, telnyxsim.StreamOptions{}, func(o *telnyxsim.Options) { o.NoStreamFailed = silent })
	f.refuse.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	call, err := f.fake.Ring(ctx, "+15550001111", ourNumber, telnyxsim.RingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.fake.WaitCall(ctx, call.CallControlID, func(c telnyxsim.Call) bool { return !c.Alive }); err != nil {
		t.Fatalf("the refused call is still up at Telnyx: %v", err)
	}
	// The leg hangs up, and so may the webhook of the stream that failed: Telnyx takes one.
	accepted := 0
	for _, q := range f.hangups(call.CallControlID) {
		if q.Status == http.StatusOK {
			accepted++
		}
	}
	if accepted != 1 {
		t.Errorf("%d hangup commands accepted, want 1", accepted)
	}
}

// TestTransferEndsHandsetsSideOfTheCall: a transfer bridges the caller elsewhere and stops
// the stream to Handset, so Handset's leg ends as Twilio's does when it moves a call; the
// call itself is not hung up (it is the transferee's now).
func TestTransferEndsHandsetsSideOfTheCall(t *testing.T) {
	f := newWithFake(t, CodecPCMU, telnyxsim.StreamOptions{})
	_, leg, _, done := f.ring(t)
	control, err := NewControl(RESTOptions{BaseURL: f.rest.BaseURL(), APIKey: f.fake.APIKey(), ConnectionID: f.rest.ConnectionID()}, f.memory)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ref := leg.Info().CarrierRef
	if err := control.Transfer(ctx, ref, "+15550003333", ourNumber); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want the stream's end", err)
		}
	case <-ctx.Done():
		t.Fatal("Handset's leg outlived the transfer")
	}
	c, _ := f.fake.Call(ref)
	if !c.Alive || c.TransferredTo != "+15550003333" || len(f.hangups(ref)) != 0 {
		t.Errorf("after the transfer: alive %v, transferred to %q, %d hangups; want alive, bridged, none", c.Alive, c.TransferredTo, len(f.hangups(ref)))
	}
	// Repeated (a retried job), the commands are the same ones: nothing new happens.
	if err := control.Transfer(ctx, ref, "+15550003333", ourNumber); err != nil {
		t.Errorf("repeated transfer: %v", err)
	}
}
