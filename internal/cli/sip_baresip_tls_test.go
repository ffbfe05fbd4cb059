//go:build embedded

package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/sippeer"
	"github.com/handset-voice/handset/internal/testpeer"
)

// A real SIP phone (baresip) calls `handset serve` over TLS with SRTP mandatory on both
// sides: Handset refuses plain RTP (HANDSET_SIP_SRTP=required), so the call only exists if
// the keys were agreed; the question baresip plays through SRTP reaches the agent, and the
// greeting sealed by Handset is heard in baresip's recording.
func TestBaresipCallsHandsetOverTLSWithSRTP(t *testing.T) {
	testpeer.Slow(t, "a real-time call between baresip and handset serve over TLS and SRTP")
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
	source := writeBaresipQuestion(t, dir, 8000)
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
	finishBaresipCall(t, ctx, r, b, 8000, "over SRTP")
	if !strings.Contains(b.Log(), "SRTP is Enabled") {
		t.Errorf("baresip never turned SRTP on:\n%s", b.Log())
	}
}
