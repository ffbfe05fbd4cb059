package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/browser"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/sim/browsercaller"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
)

const testTwilioToken = "test-auth-token"

// fakesConfig is the configuration of a gateway whose speech and agent providers are fake
// Deepgram, ElevenLabs and OpenAI-compatible servers speaking the vendors' protocols; extra
// adds settings. The fakes stop with the test.
func fakesConfig(t *testing.T, extra ...string) *config.Config {
	t.Helper()
	return fakesConfigHearing(t, nil, extra...)
}

// fakesConfigHearing is fakesConfig whose fake Deepgram hears the caller say transcripts,
// one an utterance.
func fakesConfigHearing(t *testing.T, transcripts []string, extra ...string) *config.Config {
	t.Helper()
	return fakesConfigAnswering(t, transcripts, nil, extra...)
}

// fakesConfigAnswering is fakesConfigHearing whose fake agent answers with reply's text
// (nil: the fake's own replies).
func fakesConfigAnswering(t *testing.T, transcripts []string, reply func([]fakeopenai.Message) string, extra ...string) *config.Config {
	t.Helper()
	stt := fakedeepgram.New(fakedeepgram.Options{Key: "dg-key", Transcripts: transcripts})
	tts := fakeelevenlabs.New(fakeelevenlabs.Options{Key: "el-key"})
	agent := fakeopenai.New(fakeopenai.Options{Key: "agent-key", Reply: reply})
	sttSrv, ttsSrv, agentSrv := httptest.NewServer(stt), httptest.NewServer(tts), httptest.NewServer(agent)
	t.Cleanup(func() {
		agent.Close()
		stt.Close()
		agentSrv.Close()
		sttSrv.Close()
		ttsSrv.Close()
	})
	environ := append([]string{
		"HANDSET_DATA_DIR=" + t.TempDir(),
		"HANDSET_AGENT=openai", "HANDSET_AGENT_URL=" + agentSrv.URL + "/v1", "HANDSET_AGENT_KEY=agent-key",
		"HANDSET_STT=deepgram", "DEEPGRAM_API_KEY=dg-key", "HANDSET_DEEPGRAM_URL=" + sttSrv.URL,
		"HANDSET_TTS=elevenlabs", "ELEVENLABS_API_KEY=el-key", "HANDSET_ELEVENLABS_URL=" + ttsSrv.URL,
		"TWILIO_AUTH_TOKEN=" + testTwilioToken, "HANDSET_FIRST_MESSAGE=Hello, this is Handset.",
		"HANDSET_VAD=energy",
	}, extra...)
	cfg, err := config.Load(config.LoadOptions{WorkDir: t.TempDir(), Environ: environ})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// serveWithFakes opens and serves a gateway on fakesConfig; it returns its base URL, and
// stops with the test.
func serveWithFakes(t *testing.T, extra ...string) string {
	t.Helper()
	return serve(t, fakesConfig(t, extra...))
}

// serve opens and serves a gateway on cfg; it returns its base URL, and stops with the test.
func serve(t *testing.T, cfg *config.Config) string {
	t.Helper()
	gw, _ := serveGateway(t, cfg)
	return "http://" + gw.Addr().String()
}

// serveGateway opens and serves a gateway on cfg; stop (also run when the test ends, once)
// stops serving and closes it.
func serveGateway(t *testing.T, cfg *config.Config) (gw *Gateway, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	gw, err := Open(ctx, cfg, Options{Logger: quiet, Listen: "127.0.0.1:0"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- gw.Serve(ctx, nil) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		gw.Close()
	})
	t.Cleanup(stop)
	return gw, stop
}

// TestBrowserRate: one address starts only so many browser calls in a while; the next is
// closed with the reason, and the phone side is untouched.
func TestBrowserRate(t *testing.T) {
	saved := browserRate
	browserRate = browser.Rate{Burst: 2, Every: time.Hour}
	t.Cleanup(func() { browserRate = saved })
	base := serveWithFakes(t, "HANDSET_BROWSER=true")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 2 {
		c, err := browsercaller.Dial(ctx, base, browsercaller.NewJar())
		if err != nil {
			t.Fatalf("browser call %d: %v", i+1, err)
		}
		_ = c.Hangup()
		<-c.Done()
	}
	_, err := browsercaller.Dial(ctx, base, browsercaller.NewJar())
	var ce websocket.CloseError
	switch {
	case err == nil:
		t.Fatal("a third call within the hour was admitted")
	case !errors.As(err, &ce):
		t.Fatalf("%v, want a close frame", err)
	case ce.Code != websocket.StatusTryAgainLater || !strings.HasPrefix(ce.Reason, "too many calls from your address: try again in "):
		t.Errorf("the refusal: %v", ce)
	}
	phone, err := twiliocaller.Dial(ctx, twiliocaller.Options{BaseURL: base, AuthToken: testTwilioToken, InsecureStreamURL: true})
	if err != nil {
		t.Fatalf("phone call: %v", err)
	}
	err = phone.WaitFor(ctx, func(s twiliocaller.Snapshot) bool {
		for _, m := range s.Marks() {
			if m.Name == "t0-end" && m.Echoed && !m.Cleared {
				return true
			}
		}
		return s.Ended
	})
	if err != nil || phone.Snapshot().Ended {
		t.Errorf("the phone call's greeting was not played (err %v)", err)
	}
	_ = phone.Hangup()
	<-phone.Done()
}

// TestOpenBusyAddress: a gateway that cannot listen says which setting names the address,
// unless its caller chose the address itself.
func TestOpenBusyAddress(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	_, err = Open(context.Background(), fakesConfig(t, "HANDSET_LISTEN="+addr), Options{Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "listen on "+addr+" (HANDSET_LISTEN, or --listen)") {
		t.Errorf("HANDSET_LISTEN busy: %v, want an error naming the address and the setting", err)
	}
	_, err = Open(context.Background(), fakesConfig(t), Options{Logger: quiet, Listen: addr})
	if err == nil || strings.Contains(err.Error(), "HANDSET_LISTEN") {
		t.Errorf("a chosen address busy: %v, want the listener's error alone", err)
	}
}

// TestOpenRefusedSettingLeavesNothingRunning: a configuration built in code skips
// Validate, so the gateway itself refuses a bad HANDSET_TRUSTED_PROXIES; what it had started
// by then (the calls' context, the transcript writer) stops with the refusal, which the
// package's goroutine check holds it to.
func TestOpenRefusedSettingLeavesNothingRunning(t *testing.T) {
	cfg := fakesConfig(t, "HANDSET_LISTEN=127.0.0.1:0")
	cfg.TrustedProxies = "not-an-address"
	_, err := Open(context.Background(), cfg, Options{Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "HANDSET_TRUSTED_PROXIES") {
		t.Fatalf("Open = %v, want the refusal naming HANDSET_TRUSTED_PROXIES", err)
	}
}
