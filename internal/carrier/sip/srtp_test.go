package sip

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier/sip/media"
	"github.com/handset-voice/handset/internal/carrier/sip/sdp"
	"github.com/handset-voice/handset/internal/carrier/sip/sipsim"
)

func requireSRTP(o *Options) { o.SRTP = SRTPRequired }

// callerFrames is n frames of the caller's test pattern, which the sink counts as heard.
func callerFrames(n int) [][]byte {
	frames := make([][]byte, n)
	for i := range frames {
		frames[i] = bytes.Repeat([]byte{0x35}, 160)
	}
	return frames
}

// An RTP/SAVP offer is answered with SRTP: the greeting reaches the caller sealed under
// Handset's key (sipsim drops what does not authenticate), the caller's audio and keys
// reach the call through Handset's decryption, for both suites.
func TestSRTPOfferIsAnsweredWithSRTP(t *testing.T) {
	for _, suite := range []string{sipsim.SRTP80, sipsim.SRTP32} {
		t.Run(suite, func(t *testing.T) {
			a := newAnswering(25)
			tr := startTrunk(t, "127.0.0.1", a)
			caller := newCaller(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{SRTP: suite})
			if err != nil {
				t.Fatal(err)
			}
			answer := string(call.Answer)
			if !strings.Contains(answer, "RTP/SAVP") || !strings.Contains(answer, "a=crypto:1 "+suite+" inline:") {
				t.Fatalf("the answer is not SRTP keyed in %s:\n%s", suite, answer)
			}
			r := <-a.got
			waitLoudPackets(ctx, t, call, 5)
			if err := call.Play(ctx, callerFrames(25)); err != nil {
				t.Fatal(err)
			}
			r.sink.waitFor(t, "the caller's frames", func(s *recordingSink) bool { return s.heard >= 20 })
			if err := call.SendDTMF(ctx, "5"); err != nil {
				t.Fatal(err)
			}
			r.sink.waitFor(t, "the digit", func(s *recordingSink) bool { return len(s.digits) == 1 && s.digits[0] == "5" })
			r.sink.mu.Lock()
			bad := len(r.sink.bad)
			r.sink.mu.Unlock()
			if bad != 0 {
				t.Errorf("%d packets of a genuine SRTP call were reported malformed", bad)
			}
			_ = call.Hangup(ctx)
		})
	}
}

// Plain RTP into an SRTP call does not authenticate: it is reported malformed and not
// played, and the call goes on.
func TestSRTPCallDropsPlainPackets(t *testing.T) {
	a := newAnswering(0)
	tr := startTrunk(t, "127.0.0.1", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{SRTP: sipsim.SRTP80})
	if err != nil {
		t.Fatal(err)
	}
	r := <-a.got
	// Sealed, then the same audio as plain RTP on the same socket, as a forger would.
	if err := call.Play(ctx, callerFrames(3)); err != nil {
		t.Fatal(err)
	}
	r.sink.waitFor(t, "the sealed frames", func(s *recordingSink) bool { return s.heard >= 2 })
	forged := append([]byte{0x80, 0, 0x12, 0x34, 0, 0, 0x10, 0, 0xde, 0xad, 0xbe, 0xef}, callerFrames(1)[0]...)
	if err := call.SendForged(forged); err != nil {
		t.Fatal(err)
	}
	r.sink.waitFor(t, "the forged packet reported", func(s *recordingSink) bool { return len(s.bad) == 1 })
	r.sink.mu.Lock()
	err = r.sink.bad[0]
	r.sink.mu.Unlock()
	if !errors.Is(err, media.ErrUnauthentic) {
		t.Errorf("reported %v, want media.ErrUnauthentic", err)
	}
	_ = call.Hangup(ctx)
}

// HANDSET_SIP_SRTP=required refuses a plain offer 488 and takes a secure one.
func TestSRTPRequiredRefusesPlainOffers(t *testing.T) {
	a := newAnswering(0)
	tr := startTrunk(t, "127.0.0.1", a, requireSRTP)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{})
	var refused *sipsim.Refused
	if !errors.As(err, &refused) || refused.Status != 488 {
		t.Fatalf("a plain offer with SRTP required: %v, want 488", err)
	}
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{SRTP: sipsim.SRTP80})
	if err != nil {
		t.Fatalf("a secure offer with SRTP required: %v", err)
	}
	<-a.got
	waitLoudPackets(ctx, t, call, 0)
	_ = call.Hangup(ctx)
}

// A re-INVITE with a new key rekeys the call; one that drops SRTP is refused 488 and the
// call keeps its keys.
func TestSRTPReinviteRekeysAndRefusesDowngrade(t *testing.T) {
	a := newAnswering(0)
	tr := startTrunk(t, "127.0.0.1", a)
	caller := newCaller(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	call, err := caller.Call(ctx, tr.Addr(), sipsim.CallOptions{SRTP: sipsim.SRTP80})
	if err != nil {
		t.Fatal(err)
	}
	r := <-a.got
	if status, _, err := call.Reinvite(ctx, call.PlainOfferSDP("sendrecv", 2)); err != nil || status != 488 {
		t.Fatalf("a re-INVITE to plain RTP: %d %v, want 488", status, err)
	}
	status, answer, err := call.Reinvite(ctx, call.RekeyOfferSDP("sendrecv", 3))
	if err != nil || status != 200 {
		t.Fatalf("a re-INVITE with a new key: %d %v\n%s", status, err, answer)
	}
	// The caller now seals under its new key: Handset plays it only if it rekeyed.
	if err := call.Play(ctx, callerFrames(25)); err != nil {
		t.Fatal(err)
	}
	r.sink.waitFor(t, "the frames under the new key", func(s *recordingSink) bool { return s.heard >= 20 })
	// And Handset's packets still open under the key its answer gave.
	waitLoudPackets(ctx, t, call, 0)
	before := len(call.Received())
	if _, err := call.WaitReceived(ctx, before+5); err != nil {
		t.Fatalf("no SRTP from Handset after the rekey: %v", err)
	}
	_ = call.Hangup(ctx)
}

func TestSRTPSettingIsRead(t *testing.T) {
	for v, want := range map[string]string{"": SRTPOffered, "offered": SRTPOffered, " Required ": SRTPRequired} {
		o, err := ReadOptions(checkSettings{SettingAllow: "127.0.0.1", SettingSRTP: v})
		if err != nil || o.SRTP != want {
			t.Errorf("%s=%q: %q %v, want %q", SettingSRTP, v, o.SRTP, err, want)
		}
	}
	_, err := ReadOptions(checkSettings{SettingAllow: "127.0.0.1", SettingSRTP: "always"})
	if err == nil || !strings.Contains(err.Error(), SettingSRTP) {
		t.Errorf("a bad %s: %v", SettingSRTP, err)
	}
}

// Each call gets keys of its own, for every suite, that the SDP code accepts.
func TestFreshKeysAreNewAndUsable(t *testing.T) {
	a, b := freshKeys(), freshKeys()
	if len(a) != len(srtpSuites) {
		t.Fatalf("%d keys for %d suites", len(a), len(srtpSuites))
	}
	for i := range a {
		if !a[i].Usable() || bytes.Equal(a[i].KeySalt, b[i].KeySalt) || a[i].Suite != srtpSuites[i] {
			t.Errorf("key %d: %+v, then %+v", i, a[i], b[i])
		}
	}
	keys, err := mediaSRTP(sdp.Media{Secure: true, Crypto: []sdp.Crypto{b[1]}}, a)
	if err != nil || keys.Suite != media.SRTPAES128SHA1_32 || !bytes.Equal(keys.Local, a[1].KeySalt) || !bytes.Equal(keys.Remote, b[1].KeySalt) {
		t.Errorf("mediaSRTP: %+v %v", keys, err)
	}
}
