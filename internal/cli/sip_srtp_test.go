package cli

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// With HANDSET_SIP_SRTP=required an outbound call offers only SRTP: a real phone
// (baresip) that demands SRTP answers it, both sides turn SRTP on, and the message Handset
// speaks reaches the phone through it.
func TestSIPOutboundCallOffersSRTP(t *testing.T) {
	testpeer.Slow(t, "runs baresip against handset serve")
	phone := startSRTPPhone(t, sippeer.BaresipOptions{})
	r, _ := startServeSIP(t, nil, "HANDSET_SIP_TRUNK=sip:"+phone.Addr(), "HANDSET_PHONE_NUMBER=+15550001111",
		"HANDSET_CARRIER=sip", "HANDSET_MAX_CALL=4s", "HANDSET_SIP_SRTP=required")
	placeReminder(t, r, phone)
}

// A trunk that takes calls only over TLS (baresip listening with a certificate of its own,
// SRTP required): Handset places the call to its ;transport=tls URI, checks the trunk's
// certificate against HANDSET_SIP_TLS_CA, and the message is heard through SRTP. Without
// that authority the certificate is refused and the call fails.
func TestSIPOutboundCallOverTLS(t *testing.T) {
	testpeer.Slow(t, "runs baresip against handset serve")
	dir := t.TempDir()
	cert, key, err := sippeer.WriteTestCertificate(dir)
	if err != nil {
		t.Fatal(err)
	}
	phone := startSRTPPhone(t, sippeer.BaresipOptions{TLSCert: cert, TLSKey: key, CAFile: cert})
	trunk := "HANDSET_SIP_TRUNK=sip:" + phone.TLSAddr() + ";transport=tls"
	t.Run("untrusted certificate", func(t *testing.T) {
		r, _ := startServeSIP(t, nil, trunk, "HANDSET_PHONE_NUMBER=+15550001111", "HANDSET_CARRIER=sip",
			"HANDSET_SIP_SRTP=required")
		o := newOutRig(t, r)
		var queued apiJob
		if code := o.api("POST", "/api/calls", map[string]any{"to": "+15550102000", "message": "Hi."}, &queued); code != 200 && code != 202 {
			t.Fatalf("POST /api/calls = %d %+v", code, queued)
		}
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(r.logs.String(), "outbound call not connected") && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		logs := r.logs.String()
		if !strings.Contains(logs, "outbound call not connected") || !strings.Contains(logs, "certificate") {
			t.Fatalf("the call to a trunk whose certificate nobody vouches for did not fail on it:\n%s", logs)
		}
		if paths, _ := filepath.Glob(filepath.Join(r.dataDir, "calls", "*")); len(paths) != 0 {
			t.Errorf("%d calls started", len(paths))
		}
	})
	t.Run("trusted", func(t *testing.T) {
		tlsPort := freeTCPPort(t)
		r, _ := startServeSIP(t, nil, trunk, "HANDSET_PHONE_NUMBER=+15550001111", "HANDSET_CARRIER=sip",
			"HANDSET_MAX_CALL=4s", "HANDSET_SIP_SRTP=required", "HANDSET_SIP_TLS_CA="+cert,
			"HANDSET_SIP_TRANSPORTS=udp,tls", fmt.Sprintf("HANDSET_SIP_TLS_LISTEN=127.0.0.1:%d", tlsPort),
			"HANDSET_SIP_TLS_CERT="+cert, "HANDSET_SIP_TLS_KEY="+key)
		placeReminder(t, r, phone)
	})
}

// startSRTPPhone starts baresip as the trunk's far end: it answers every call, requires
// SRTP, plays a tone and records what it hears.
func startSRTPPhone(t *testing.T, opts sippeer.BaresipOptions) *sippeer.Baresip {
	t.Helper()
	tone := filepath.Join(t.TempDir(), "tone.wav")
	if err := sippeer.WriteToneWAV(tone, audio.Format{Encoding: audio.PCM16, Rate: 8000}, 10*time.Second, 440); err != nil {
		t.Fatal(err)
	}
	opts.Source, opts.User, opts.SRTP, opts.AutoAnswer = tone, "+15550102000", true, true
	phone, err := sippeer.StartBaresip(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return phone
}

// placeReminder has serve call the phone with a message through the jobs API and checks
// the call completed, SRTP was on and the phone heard the message.
func placeReminder(t *testing.T, r *rig, phone *sippeer.Baresip) {
	t.Helper()
	o := newOutRig(t, r)
	var queued apiJob
	if code := o.api("POST", "/api/calls?wait=60s", map[string]any{"to": "+15550102000", "message": "Hi, this is your reminder."}, &queued); code != 200 {
		t.Fatalf("POST /api/calls = %d %+v\n%s", code, queued, r.logs.String())
	}
	if queued.State != "completed" {
		t.Fatalf("job %s %s %q\nhandset:\n%s\nbaresip:\n%s", queued.State, queued.Result, queued.Error, r.logs.String(), phone.Log())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := phone.WaitClosed(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(phone.Log(), "SRTP is Enabled") {
		t.Fatalf("baresip never turned SRTP on:\n%s", phone.Log())
	}
	rec, err := phone.Recording()
	if err != nil {
		t.Fatal(err)
	}
	f, data, err := wav.ReadFile(rec)
	if err != nil || f.Encoding != audio.PCM16 {
		t.Fatalf("baresip's recording %s: %v %v", rec, f, err)
	}
	pcm := make([]int16, len(data)/2)
	for i := range pcm {
		pcm[i] = int16(uint16(data[2*i]) | uint16(data[2*i+1])<<8)
	}
	loudest := -100.0
	for i := 0; i+1600 <= len(pcm); i += 1600 {
		loudest = max(loudest, echo.LevelDB(pcm[i:i+1600]))
	}
	if loudest < -40 {
		t.Errorf("baresip heard nothing through SRTP: the loudest 200 ms of its recording is at %.1f dBFS", loudest)
	}
}

// A call baresip placed over TLS with SRTP that Handset ends (HANDSET_MAX_CALL): Handset's
// BYE reaches baresip over TLS, and its sealed audio was heard until then.
func TestHandsetHangsUpATLSCall(t *testing.T) {
	testpeer.Slow(t, "runs baresip against handset serve")
	dir := t.TempDir()
	cert, key, err := sippeer.WriteTestCertificate(dir)
	if err != nil {
		t.Fatal(err)
	}
	tone := filepath.Join(dir, "tone.wav")
	if err := sippeer.WriteToneWAV(tone, audio.Format{Encoding: audio.PCM16, Rate: 8000}, 30*time.Second, 440); err != nil {
		t.Fatal(err)
	}
	tlsPort := freeTCPPort(t)
	r, _ := startServeSIP(t, nil, "HANDSET_SIP_TRANSPORTS=udp,tls", fmt.Sprintf("HANDSET_SIP_TLS_LISTEN=127.0.0.1:%d", tlsPort),
		"HANDSET_SIP_TLS_CERT="+cert, "HANDSET_SIP_TLS_KEY="+key, "HANDSET_SIP_SRTP=required", "HANDSET_MAX_CALL=3s")
	phone, err := sippeer.StartBaresip(t, sippeer.BaresipOptions{Source: tone, CAFile: cert, SRTP: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := phone.Dial(fmt.Sprintf("sip:handset@127.0.0.1:%d;transport=tls", tlsPort)); err != nil {
		t.Fatal(err)
	}
	if _, err := phone.WaitEstablished(ctx); err != nil {
		t.Fatalf("%v\nbaresip:\n%s\nhandset:\n%s", err, phone.Log(), r.logs.String())
	}
	ev, err := phone.WaitClosed(ctx)
	if err != nil {
		t.Fatalf("Handset's BYE never reached baresip: %v\nbaresip:\n%s\nhandset:\n%s", err, phone.Log(), r.logs.String())
	}
	t.Logf("baresip: the call closed: %s", ev.Param)
	if ev.Param == "end of file" || strings.Contains(r.logs.String(), "could not hang up") {
		t.Fatalf("the call ended by baresip (%s), not by Handset's BYE\nhandset:\n%s", ev.Param, r.logs.String())
	}
	if !strings.Contains(phone.Log(), "SRTP is Enabled") {
		t.Errorf("baresip never turned SRTP on:\n%s", phone.Log())
	}
}

// freeTCPPort is a loopback TCP port free when asked.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
