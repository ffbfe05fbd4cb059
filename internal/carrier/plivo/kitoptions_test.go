package plivo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/sim/phone"
	"github.com/handset-voice/handset/internal/sim/simkit"
	"github.com/handset-voice/handset/internal/voice"
)

// kitCall places one inbound call through the kit rig and returns its phone, leg and
// the sink the leg reports to, once the greeting's checkpoint came back.
func kitCall(t *testing.T, k *kitRig, o simkit.CallOptions) (phone.Phone, voice.Leg, *sink) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	p, err := k.vendor.Call(ctx, k.url, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Hangup() })
	leg, s := <-k.legs, <-k.sinks
	s.waitFor(t, "the greeting's checkpoint", func(s *sink) bool { return len(s.marks) == 1 })
	return p, leg, s
}

// TestKitWithheldAndAttestedCallers: a withheld caller reaches the leg as no number (so
// Handset treats it as withheld), and the STIR/SHAKEN attestation Plivo gives an inbound
// caller reaches the leg; a caller without one has none.
func TestKitWithheldAndAttestedCallers(t *testing.T) {
	k := newKitRig(t, simkit.VendorOptions{})
	for _, c := range []struct {
		opts   simkit.CallOptions
		from   string
		attest voice.Attestation
	}{
		{simkit.CallOptions{From: "+15550100123", Withheld: true, Attestation: "B"}, "", voice.AttestationB},
		{simkit.CallOptions{From: "+15550100123", Attestation: "A"}, "+15550100123", voice.AttestationA},
		{simkit.CallOptions{From: "+15550100123"}, "+15550100123", ""},
	} {
		p, leg, _ := kitCall(t, k, c.opts)
		info := leg.Info()
		if info.From != c.from || info.Attestation != c.attest || session.Withheld(info.From) != c.opts.Withheld {
			t.Errorf("call %+v: leg from %q attestation %q, want %q %q", c.opts, info.From, info.Attestation, c.from, c.attest)
		}
		_ = p.Hangup()
	}
}

// TestKitCallEchoIsTheCallsOwn: a call placed with its own echo returns the greeting
// to Handset; the next call, without one, returns none.
func TestKitCallEchoIsTheCallsOwn(t *testing.T) {
	k := newKitRig(t, simkit.VendorOptions{})
	_, _, echoed := kitCall(t, k, simkit.CallOptions{Echo: &phone.EchoOptions{Delay: 60 * time.Millisecond, GainDB: -6}})
	echoed.waitFor(t, "the greeting's echo", func(s *sink) bool { return len(receivedSpeech(s)) > 0 })

	_, _, plain := kitCall(t, k, simkit.CallOptions{})
	// 40 frames are 800 ms: the 200 ms greeting and any echo of it have arrived by then.
	plain.waitFor(t, "800 ms of the caller's audio", func(s *sink) bool { return len(s.audio) >= 40 })
	plain.mu.Lock()
	defer plain.mu.Unlock()
	if got := receivedSpeech(plain); len(got) != 0 {
		t.Errorf("a call without echo returned %d bytes of sound", len(got))
	}
}

// TestKitSilentCallerSendsNoMedia: a silent vendor's caller starts its stream (the
// greeting plays and its checkpoint comes back) and sends no audio at all.
func TestKitSilentCallerSendsNoMedia(t *testing.T) {
	k := newKitRig(t, simkit.VendorOptions{Silent: true})
	p, _, s := kitCall(t, k, simkit.CallOptions{})
	// The key press comes after anything the caller would have sent before it.
	if err := p.DTMF("5"); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "the key press", func(s *sink) bool { return len(s.digits) == 1 })
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.audio) != 0 {
		t.Errorf("a silent caller sent %d media frames", len(s.audio))
	}
}

// TestKitFramesAndEarlyEvents: 60 ms frames reach Handset as 60 ms of audio each, and
// events before start (silence and a key press) are kept for the call; frames that are
// not whole 20 ms are refused as something the caller never does.
func TestKitFramesAndEarlyEvents(t *testing.T) {
	k := newKitRig(t, simkit.VendorOptions{Frame: 60 * time.Millisecond, EarlyFrames: 2})
	_, _, s := kitCall(t, k, simkit.CallOptions{})
	s.waitFor(t, "the key press sent before start", func(s *sink) bool { return len(s.digits) == 1 && len(s.audio) >= 3 })
	s.mu.Lock()
	if s.digits[0] != "1" || len(s.audio[0]) != 480 {
		t.Errorf("digits %v, first frame %d bytes (want 480: 60 ms of mu-law)", s.digits, len(s.audio[0]))
	}
	s.mu.Unlock()

	for _, frame := range []time.Duration{30 * time.Millisecond, -20 * time.Millisecond} {
		v, err := plivosim.Kit.Start(context.Background(), simkit.VendorOptions{Frame: frame})
		if v != nil {
			_ = v.Close()
		}
		if !errors.Is(err, simkit.ErrUnsupported) {
			t.Errorf("Start with %v frames: %v, want ErrUnsupported", frame, err)
		}
	}
}
