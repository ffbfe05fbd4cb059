package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/tts/flite"
)

// serveOnce runs `handset serve` with only the settings given (no .env, no handset.yaml) and
// returns its exit code and what it printed. A serve that starts is stopped once listening.
func serveOnce(t *testing.T, settings ...string) (code int, stderr string) {
	t.Helper()
	var out, errOut syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env := Env{Stdout: &out, Stderr: &errOut, WorkDir: t.TempDir(),
		Environ: append([]string{"HOME=" + t.TempDir(), "HANDSET_DATA_DIR=" + t.TempDir(), "HANDSET_LISTEN=127.0.0.1:0"}, settings...),
		Ready:   func(string) { cancel() }}
	done := make(chan int, 1)
	go func() { done <- Main(ctx, []string{"serve"}, env) }()
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not return:\n%s", errOut.String())
	}
	return code, errOut.String() + out.String()
}

// servable are settings serve starts with, without a carrier or the browser page; no server
// is contacted before a call.
var servable = []string{
	"HANDSET_AGENT=echo",
	"HANDSET_STT=deepgram", "DEEPGRAM_API_KEY=dg-test", "HANDSET_DEEPGRAM_URL=http://127.0.0.1:9",
	"HANDSET_TTS=elevenlabs", "ELEVENLABS_API_KEY=el-test", "HANDSET_ELEVENLABS_URL=http://127.0.0.1:9",
	"HANDSET_VAD=energy",
}

// TestServeReportsEverySettingAtOnce: serve with nothing set names the agent, STT and TTS in
// one go, with one exit code (1) and the way to try Handset without settings.
func TestServeReportsEverySettingAtOnce(t *testing.T) {
	code, out := serveOnce(t)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"handset serve: cannot start: 3 settings to fix:\n",
		"  HANDSET_AGENT (agent.runtime): is required: set it to the agent runtime that answers calls, one of " + registryNames(registry.KindAgent) + "\n",
		"  HANDSET_STT (stt.provider): is required: set it to the speech-to-text provider, one of " + registryNames(registry.KindSTT) + "\n",
		"  HANDSET_TTS (tts.provider): is required: set it to the text-to-speech provider, one of " + registryNames(registry.KindTTS) + "\n",
		"hint: to try Handset first, with no keys and no settings, run `handset demo`",
	} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("output says %q %d times, want once:\n%s", want, n, out)
		}
	}

	// With the agent set, the rest is still reported at once, with the same exit code.
	code, out = serveOnce(t, "HANDSET_AGENT=echo")
	if code != 1 || !strings.Contains(out, "2 settings to fix") || !strings.Contains(out, "HANDSET_STT (stt.provider): is required") ||
		!strings.Contains(out, "HANDSET_TTS (tts.provider): is required") {
		t.Errorf("exit %d:\n%s", code, out)
	}

	// Invalid values and unknown names together: every problem, each name's warning once.
	code, out = serveOnce(t, "HANDSET_AGENT=echo", "HANDSET_SST=sphinx", "HANDSET_STT=deepgrm", "HANDSET_TTS=flite", "HANDSET_VAD=webrtcc")
	for _, want := range []string{
		`msg="HANDSET_SST is not a Handset setting; did you mean HANDSET_STT?" from=environment`,
		`HANDSET_STT (stt.provider): "deepgrm" is not one of ` + registryNames(registry.KindSTT) + ` (did you mean deepgram?) (from environment)`,
		`HANDSET_VAD (vad.engine): "webrtcc" is not one of ` + registryNames(registry.KindVAD) + ` (did you mean webrtc?) (from environment)`,
	} {
		if n := strings.Count(out, want); n != 1 || code != 1 {
			t.Errorf("exit %d; output says %q %d times, want once:\n%s", code, want, n, out)
		}
	}
	if strings.Contains(out, "handset demo") {
		t.Errorf("the demo hint is for settings left unset, not for wrong ones:\n%s", out)
	}
}

// TestServeReportsMissingEnginesWithTheSettings: an offline engine the settings select that
// cannot run here is reported with the other problems, not on a later start.
func TestServeReportsMissingEnginesWithTheSettings(t *testing.T) {
	code, out := serveOnce(t, "HANDSET_STT=sphinx", "HANDSET_SPHINX_MODEL="+t.TempDir()+"/no-model", "HANDSET_TTS=flite", "HANDSET_VAD=energy")
	want := []string{
		"  HANDSET_AGENT (agent.runtime): is required: ",
		`  HANDSET_STT (stt.provider): "sphinx" cannot run here: `,
	}
	if !flite.Available() {
		want = append(want, `  HANDSET_TTS (tts.provider): "flite" cannot run here: not in this binary`)
	}
	if code != 1 || !strings.Contains(out, fmt.Sprintf("cannot start: %d settings to fix:", len(want))) {
		t.Errorf("exit %d:\n%s", code, out)
	}
	for _, w := range want {
		if strings.Count(out, w) != 1 {
			t.Errorf("output does not say %q once:\n%s", w, out)
		}
	}
}

// TestServeWarnsWhenNobodyCanCall: serve that starts with no carrier and the browser page off
// says at start that no one can call it, and how to fix that; the unknown name that was
// probably meant to turn the page on is named too, once.
func TestServeWarnsWhenNobodyCanCall(t *testing.T) {
	code, out := serveOnce(t, append(servable, "HANDSET_BROWSR=true")...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		`msg="HANDSET_BROWSR is not a Handset setting; did you mean HANDSET_BROWSER?"`,
		`msg="no one can call this Handset: no carrier is configured (TWILIO_AUTH_TOKEN is empty, TELNYX_API_KEY is empty, PLIVO_AUTH_TOKEN is empty, HANDSET_SIP_ALLOW (or HANDSET_SIP_REGISTRAR) not set) and the browser call page is off (HANDSET_BROWSER is false)"`,
		"TWILIO_AUTH_TOKEN and HANDSET_PUBLIC_URL",
		"set HANDSET_BROWSER=true",
	} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("output says %q %d times, want once:\n%s", want, n, out)
		}
	}
	for _, on := range [][]string{{"HANDSET_BROWSER=true"}, {"TWILIO_ACCOUNT_SID=AC00000000000000000000000000000000", "TWILIO_AUTH_TOKEN=tw-test"}} {
		code, out := serveOnce(t, append(servable, on...)...)
		if code != 0 || strings.Contains(out, "no one can call") || strings.Contains(out, "not a Handset setting") {
			t.Errorf("%v: exit %d, or a warning that does not apply:\n%s", on, code, out)
		}
	}
}

// TestReportSettingsPassesOtherErrors: only validation problems are listed; others go on.
func TestReportSettingsPassesOtherErrors(t *testing.T) {
	var b bytes.Buffer
	err := context.Canceled
	if got := reportSettings(&b, "serve", err, []string{"an engine"}); got != err || b.Len() != 0 {
		t.Errorf("got %v, printed %q", got, b.String())
	}
}
