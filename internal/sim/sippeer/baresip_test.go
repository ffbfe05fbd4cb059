package sippeer

import (
	"context"
	"encoding/binary"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio"
	"github.com/handset-voice/handset/internal/audio/wav"
	"github.com/handset-voice/handset/internal/testpeer"
)

// speechSource writes the speech WAV baresip plays, at 8 kHz; missing recordings are a
// missing peer.
func speechSource(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "speech.wav")
	if err := WriteSpeechWAV(path, audio.Format{Encoding: audio.PCM16, Rate: 8000}); err != nil {
		testpeer.Missing(t, testpeer.Speech, err)
	}
	return path
}

// toneShare is the share of pcm's energy at hz (Goertzel over the whole signal), 0 to 1.
func toneShare(pcm []int16, rate int, hz float64) float64 {
	w := 2 * math.Pi * hz / float64(rate)
	var s1, s2, total float64
	for _, v := range pcm {
		x := float64(v)
		s1, s2 = x+2*math.Cos(w)*s1-s2, s1
		total += x * x
	}
	if total == 0 {
		return 0
	}
	power := s1*s1 + s2*s2 - 2*math.Cos(w)*s1*s2
	return 2 * power / (float64(len(pcm)) * total)
}

// readPCM reads a 16-bit WAV recording.
func readPCM(t *testing.T, path string) ([]int16, int) {
	t.Helper()
	f, data, err := wav.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Encoding != audio.PCM16 {
		t.Fatalf("%s is %v, want 16-bit PCM", path, f.Encoding)
	}
	pcm := make([]int16, len(data)/2)
	for i := range pcm {
		pcm[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
	}
	return pcm, f.Rate
}

// A call from baresip to a sipp answerer: established, and the recording holds the
// answerer's tone.
func TestBaresipCallsSippAndRecordsItsAudio(t *testing.T) {
	testpeer.Slow(t, "runs a baresip call in real time")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	uas, err := StartSipp(t, UASAnswer, "", SippOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := StartBaresip(t, BaresipOptions{Source: speechSource(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Dial("sip:handset@" + uas.Addr()); err != nil {
		t.Fatal(err)
	}
	established, err := b.WaitEstablished(ctx)
	if err != nil {
		t.Fatalf("%v\n%s", err, b.Log())
	}
	time.Sleep(1500 * time.Millisecond) // the call itself: sipp plays one second of tone
	if err := b.Hangup(); err != nil {
		t.Fatal(err)
	}
	closed, err := b.WaitClosed(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !closed.At.After(established.At) {
		t.Errorf("closed at %v, not after established at %v", closed.At, established.At)
	}
	// sipp starts its audio once it has the ACK: the first packet follows the answer
	// closely, and never by as much as the second the call lasted
	if d, err := b.AnswerToFirstRTP(); err != nil || d < -time.Second || d > time.Second {
		t.Errorf("answer to first RTP: %v, %v", d, err)
	} else {
		t.Logf("answer to first RTP: %v", d)
	}
	r, err := uas.Wait(ctx)
	if err != nil || r.Successful != 1 {
		t.Errorf("sipp: %d successful calls (%v)\n%s", r.Successful, err, r.Errors)
	}
	rec, err := b.Recording()
	if err != nil {
		t.Fatalf("%v\n%s", err, b.Log())
	}
	pcm, rate := readPCM(t, rec)
	if len(pcm) < rate/2 {
		t.Fatalf("recording %s holds %d samples, want at least half a second", rec, len(pcm))
	}
	share := toneShare(pcm, rate, 440)
	t.Logf("recording: %d samples at %d Hz, 440 Hz share %.2f, 1 kHz share %.2f", len(pcm), rate, share, toneShare(pcm, rate, 1000))
	if share < 0.3 {
		t.Errorf("440 Hz holds %.2f of the recording's energy, want the tone sipp played (> 0.3)", share)
	}
}

// sipp calls an auto-answering baresip and sends digits, as RFC 4733 events and as SIP
// INFO: baresip reports each digit once.
func TestSippSendsDTMFToBaresip(t *testing.T) {
	testpeer.Slow(t, "runs sipp and baresip calls in real time")
	for _, scenario := range []Scenario{UACDTMF, UACInfoDTMF} {
		t.Run(string(scenario), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			b, err := StartBaresip(t, BaresipOptions{Source: speechSource(t), AutoAnswer: true})
			if err != nil {
				t.Fatal(err)
			}
			const digits = "5#9"
			r, err := RunSipp(ctx, t, scenario, b.Addr(), SippOptions{Service: "baresip", Digits: digits, Hold: shortHold})
			if err != nil || r.Successful != 1 {
				t.Fatalf("sipp: %d successful calls (%v)\n%s\n%s", r.Successful, err, r.Errors, b.Log())
			}
			var got string
			for _, ev := range b.Events() {
				if ev.Type == "CALL_DTMF_START" {
					got += ev.Param
				}
			}
			if got != digits {
				t.Errorf("baresip heard digits %q, want %q\nevents: %v", got, digits, b.Events())
			}
		})
	}
}

// One baresip calls another over TLS with SRTP (SDES keys in the SDP): the call is
// established, both ends say SRTP is on, and the callee records the caller's tone.
func TestBaresipCallsOverTLSWithSRTP(t *testing.T) {
	testpeer.Slow(t, "runs a baresip call in real time")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	cert, key, err := WriteTestCertificate(dir)
	if err != nil {
		t.Fatal(err)
	}
	tone := filepath.Join(dir, "tone.wav")
	if err := WriteToneWAV(tone, audio.Format{Encoding: audio.PCM16, Rate: 8000}, 3*time.Second, 440); err != nil {
		t.Fatal(err)
	}
	callee, err := StartBaresip(t, BaresipOptions{Source: speechSource(t), User: "callee", TLSCert: cert, TLSKey: key, SRTP: true, AutoAnswer: true})
	if err != nil {
		t.Fatal(err)
	}
	caller, err := StartBaresip(t, BaresipOptions{Source: tone, CAFile: cert, SRTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := caller.Dial("sip:callee@" + callee.TLSAddr() + ";transport=tls"); err != nil {
		t.Fatal(err)
	}
	if _, err := caller.WaitEstablished(ctx); err != nil {
		t.Fatalf("%v\ncaller:\n%s\ncallee:\n%s", err, caller.Log(), callee.Log())
	}
	time.Sleep(1500 * time.Millisecond)
	if err := caller.Hangup(); err != nil {
		t.Fatal(err)
	}
	if _, err := callee.WaitClosed(ctx); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*Baresip{"caller": caller, "callee": callee} {
		if !strings.Contains(b.Log(), "SRTP is Enabled") {
			t.Errorf("the %s never turned SRTP on:\n%s", name, b.Log())
		}
	}
	rec, err := callee.Recording()
	if err != nil {
		t.Fatal(err)
	}
	if pcm, rate := readPCM(t, rec); toneShare(pcm, rate, 440) < 0.3 {
		t.Errorf("the callee did not hear the caller's tone through SRTP")
	}
}

// Two baresips that offer only G.722 talk wideband: the callee's recording is at 16 kHz
// and holds the caller's tone.
func TestBaresipCallsInG722(t *testing.T) {
	testpeer.Slow(t, "runs a baresip call in real time")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tone := filepath.Join(t.TempDir(), "tone.wav")
	if err := WriteToneWAV(tone, audio.Format{Encoding: audio.PCM16, Rate: 16000}, 3*time.Second, 1000); err != nil {
		t.Fatal(err)
	}
	speech := filepath.Join(t.TempDir(), "speech16k.wav")
	if err := WriteSpeechWAV(speech, audio.Format{Encoding: audio.PCM16, Rate: 16000}); err != nil {
		testpeer.Missing(t, testpeer.Speech, err)
	}
	wideband := []string{"G722"}
	callee, err := StartBaresip(t, BaresipOptions{Source: speech, User: "callee", Codecs: wideband, AutoAnswer: true})
	if err != nil {
		t.Fatal(err)
	}
	caller, err := StartBaresip(t, BaresipOptions{Source: tone, Codecs: wideband})
	if err != nil {
		t.Fatal(err)
	}
	if err := caller.Dial(callee.URI()); err != nil {
		t.Fatal(err)
	}
	if _, err := caller.WaitEstablished(ctx); err != nil {
		t.Fatalf("%v\n%s", err, caller.Log())
	}
	time.Sleep(1500 * time.Millisecond)
	if err := caller.Hangup(); err != nil {
		t.Fatal(err)
	}
	if _, err := callee.WaitClosed(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := callee.Recording()
	if err != nil {
		t.Fatal(err)
	}
	pcm, rate := readPCM(t, rec)
	if rate != 16000 {
		t.Errorf("recording at %d Hz, want G.722's 16000", rate)
	}
	if share := toneShare(pcm, rate, 1000); share < 0.3 {
		t.Errorf("1 kHz holds %.2f of the callee's recording, want the caller's tone", share)
	}
}
