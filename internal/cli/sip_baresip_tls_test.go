//go:build embedded

package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/audio/echo"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// A real SIP phone (baresip) calls `handset serve` over TLS with SRTP mandatory on both
// sides: Handset refuses plain RTP (HANDSET_SIP_SRTP=required), so the call only exists if
// the keys were agreed; the question baresip plays through SRTP reaches the agent, and the
// greeting sealed by Handset is heard in baresip's recording.
func TestBaresipCallsHandsetOverTLSWithSRTP(t *testing.T) {
	testpeer.Slow(t, "a real-time call between baresip and handset serve over TLS and SRTP")
	const question = "what time do you open tomorrow"
	dir := t.TempDir()
	cert, key, err := sippeer.WriteTestCertificate(dir)
	if err != nil {
		t.Fatal(err)
	}
	tlsPort := freeTCPPort(t)
	r, _ := startServeSIP(t, nil, "HANDSET_STT=sphinx", "HANDSET_TTS=flite", "HANDSET_SPHINX_DECODERS=1",
		"HANDSET_VAD=webrtc", "HANDSET_ENGINES_DIR="+repoEngines(t), "HANDSET_FIRST_MESSAGE=Hello, how can I help you today?",
		"HANDSET_SIP_TRANSPORTS=udp,tls", fmt.Sprintf("HANDSET_SIP_TLS_LISTEN=127.0.0.1:%d", tlsPort),
		"HANDSET_SIP_TLS_CERT="+cert, "HANDSET_SIP_TLS_KEY="+key, "HANDSET_SIP_SRTP=required")
	source := filepath.Join(dir, "question.wav")
	speech := fliteSpeech(t, "rms", question, 8000)
	lead, after := make([]int16, 3*8000), make([]int16, 15*8000)
	if err := writePCM16WAV(source, append(append(lead, speech...), after...)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// A phone without SRTP is refused: the keys are the call's condition.
	plain, err := sippeer.StartBaresip(t, sippeer.BaresipOptions{Source: source, User: "plain", CAFile: cert})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Dial(fmt.Sprintf("sip:handset@127.0.0.1:%d;transport=tls", tlsPort)); err != nil {
		t.Fatal(err)
	}
	if ev, err := plain.WaitEstablished(ctx); err == nil || !strings.Contains(ev.Param, "488") {
		t.Fatalf("a plain RTP call with SRTP required: %v (%q), want refused 488\n%s", err, ev.Param, plain.Log())
	}
	b, err := sippeer.StartBaresip(t, sippeer.BaresipOptions{Source: source, CAFile: cert, SRTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Dial(fmt.Sprintf("sip:handset@127.0.0.1:%d;transport=tls", tlsPort)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitEstablished(ctx); err != nil {
		t.Fatalf("%v\nbaresip:\n%s\nhandset:\n%s", err, b.Log(), r.logs.String())
	}
	r.waitEvent(obs.PlayoutDone, func(e obs.Event) bool { return e.Turn == 1 }, 60*time.Second)
	time.Sleep(300 * time.Millisecond) // the last packets of the answer reach baresip
	if err := b.Hangup(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.WaitClosed(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.Log(), "SRTP is Enabled") {
		t.Errorf("baresip never turned SRTP on:\n%s", b.Log())
	}

	reqs := r.agent.Requests()
	if len(reqs) == 0 {
		t.Fatalf("the agent got nothing:\n%s", dumpEvents(r.journal()))
	}
	heardQ := reqs[0].Messages[len(reqs[0].Messages)-1].Content
	t.Logf("baresip said %q over SRTP, the agent got %q", question, heardQ)
	if n := keywordsIn(heardQ, "time", "open", "tomorrow"); n < 2 {
		t.Errorf("the agent got %q: %d of the question's keywords", heardQ, n)
	}
	rec, err := b.Recording()
	if err != nil {
		t.Fatal(err)
	}
	pcm, _ := readPCM16WAV(t, rec)
	if lvl := echo.LevelDB(pcm[:min(len(pcm), 8000)]); lvl < -40 {
		t.Errorf("baresip's recording's first second is at %.1f dBFS: Handset's sealed greeting was not heard", lvl)
	}
	greeting := recognise(t, pcm[:min(len(pcm), 3*8000)])
	t.Logf("PocketSphinx hears the recording's first three seconds as %q", greeting)
	if !strings.HasPrefix(greeting, "hello") {
		t.Errorf("the greeting was not heard through SRTP: %q", greeting)
	}
}
