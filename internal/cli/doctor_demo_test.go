package cli

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/engines"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/stt/sphinx"
)

// withDemoProbes points the demo's localhost probes at probes for the test.
func withDemoProbes(t *testing.T, probes ...runtimeProbe) {
	t.Helper()
	saved := demoProbes
	demoProbes = probes
	t.Cleanup(func() { demoProbes = saved })
}

// noRuntimes are probes at which nothing answers: the demo falls back to the echo agent.
func noRuntimes(t *testing.T) []runtimeProbe {
	return []runtimeProbe{
		{runtime: "hermes", label: "Hermes Agent", url: docFreeURL(t, "http")},
		{runtime: "openclaw", label: "OpenClaw", url: docFreeURL(t, "http")},
		{runtime: "openai", label: "Ollama", url: docFreeURL(t, "http")},
	}
}

// TestDoctorAfterDemo: doctor with nothing set up for serve (just after a demo) says so
// plainly and points to `doctor --demo`; and every problem is printed once: no line
// twice, the HANDSET_AGENT fix once.
func TestDoctorAfterDemo(t *testing.T) {
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, WorkDir: t.TempDir(), Environ: []string{"HOME=" + t.TempDir(), "PATH=" + t.TempDir()}}
	if err := runDoctor(context.Background(), env, []string{"--no-network"}); docExitCode(err, &errOut) != 1 {
		t.Errorf("exit: %v", err)
	}
	text := out.String()
	for _, want := range []string{
		"  ! handset serve: nothing is set up for handset serve, which is what doctor checks",
		"handset demo needs none of these settings",
		"fix: to check the demo's set-up instead, run handset doctor --demo",
		"  ✗ HANDSET_AGENT: is required\n",
		"      fix: HANDSET_AGENT (agent.runtime): set it to the agent runtime that answers calls, one of " + registryNames(registry.KindAgent) + "\n",
		"  ✗ HANDSET_STT: is required\n",
		"  ✗ HANDSET_TTS: is required\n",
		"  - provider: HANDSET_STT is not set (see config)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("doctor does not say %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "the agent runtime that answers calls"); n != 1 {
		t.Errorf("the HANDSET_AGENT fix is printed %d times, want once:\n%s", n, text)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if seen[line] {
			t.Errorf("line printed twice: %q\n%s", line, text)
		}
		seen[line] = true
	}
}

// TestDoctorNoCallers: with serve's settings but no carrier and the browser page off, the
// carrier check warns that no one can call, with both fixes; the browser page on, it is the
// browser-only note again.
func TestDoctorNoCallers(t *testing.T) {
	r := newDocRig(t)
	off := append([]string{"HANDSET_PUBLIC_URL="}, noTwilio...)
	res := r.expect(off, 0, "carrier", "calls", doctor.Warn, "set HANDSET_BROWSER=true")
	if !strings.Contains(res.Detail, "no one can call") || !strings.Contains(res.Fix, "TWILIO_AUTH_TOKEN and HANDSET_PUBLIC_URL") {
		t.Errorf("calls: %+v", res)
	}
	_, rep := r.report(off)
	if res := findResult(t, rep, "public_url", "address"); res.Status != doctor.Skip || strings.Contains(res.Detail, "browser") {
		t.Errorf("public_url/address claims browser calls: %+v", res)
	}
	_, rep = r.report(append(off, "HANDSET_BROWSER=true"))
	if res := findResult(t, rep, "carrier", "twilio"); res.Status != doctor.Skip || !strings.Contains(res.Detail, "browser calls only") {
		t.Errorf("with the browser page on: %+v", res)
	}
}

// TestDoctorDemo: `doctor --demo` checks the settings the demo would run with, the agent
// the demo's own probes pick, the speech engines and the port, and exits 0 when the demo can
// run.
func TestDoctorDemo(t *testing.T) {
	r := newDocRig(t)
	port := docFreeURL(t, "http")[len("http://"):]
	// The rig's Deepgram and ElevenLabs fakes stand in for the offline engines, which a
	// build without -tags embedded lacks; the agent is the demo's to pick.
	demo := []string{"HANDSET_AGENT=", "HANDSET_LISTEN=" + port}

	withDemoProbes(t, noRuntimes(t)...)
	code, rep := r.report(demo, "--demo")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, dumpResults(rep.Results))
	}
	if res := findResult(t, rep, "agent", "demo agent"); res.Status != doctor.OK || !strings.HasPrefix(res.Detail, "echo: no Hermes, OpenClaw or Ollama answered") {
		t.Errorf("demo agent: %+v", res)
	}
	if res := findResult(t, rep, "browser", "listen"); res.Status != doctor.OK || !strings.Contains(res.Detail, "http://"+port+"/") {
		t.Errorf("listen: %+v", res)
	}
	if res := findResult(t, rep, "config", "settings"); res.Status != doctor.OK || !strings.Contains(res.Detail, "demo") {
		t.Errorf("settings: %+v", res)
	}
	for _, res := range rep.Results {
		if res.Section == "carrier" || res.Section == "public_url" || res.Name == "handset serve" {
			t.Errorf("--demo checks what serve needs: %s/%s", res.Section, res.Name)
		}
	}

	// The demo finds Hermes (the rig's fake) and doctor checks it as serve's would be.
	agentURL := strings.TrimSuffix(environValue(r.env, "HANDSET_AGENT_URL"), "/v1")
	withDemoProbes(t, runtimeProbe{runtime: "hermes", label: "Hermes Agent", url: agentURL})
	code, rep = r.report(append(demo, "HANDSET_AGENT_URL="), "--demo")
	if res := findResult(t, rep, "agent", "demo agent"); code != 0 || res.Status != doctor.OK || !strings.Contains(res.Detail, "hermes: found Hermes Agent at "+agentURL) {
		t.Errorf("exit %d, demo agent: %+v\n%s", code, res, dumpResults(rep.Results))
	}
	if res := findResult(t, rep, "agent", "key"); res.Status != doctor.OK {
		t.Errorf("the runtime the demo found is not checked: %+v", res)
	}
	// What the demo passes over, and why, is told.
	withDemoProbes(t, append(noRuntimes(t)[:1], runtimeProbe{runtime: "openclaw", label: "OpenClaw", url: agentURL})...)
	_, rep = r.report(append(demo, "HANDSET_AGENT_KEY="), "--demo")
	if res := findResult(t, rep, "agent", "demo agent"); !strings.Contains(res.Detail, "skipped OpenClaw at "+agentURL+": found, but OPENCLAW_GATEWAY_TOKEN is not set") {
		t.Errorf("demo agent: %+v", res)
	}

	// The port taken: the demo cannot start, and the fix names another address.
	withDemoProbes(t, noRuntimes(t)...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct {
		extra         []string
		section, name string
		fix           string
	}{
		{[]string{"HANDSET_LISTEN=" + ln.Addr().String()}, "browser", "listen", "handset demo --listen"},
		{[]string{"HANDSET_STT=deepgrm"}, "config", "HANDSET_STT", "to deepgram"}, // a setting the demo uses, wrong
	} {
		code, rep := r.report(append(demo, c.extra...), "--demo")
		if res := findResult(t, rep, c.section, c.name); code != 1 || res.Status != doctor.Fail || !strings.Contains(res.Fix, c.fix) {
			t.Errorf("%v: exit %d, %+v", c.extra, code, res)
		}
	}

	// --no-network: the probes are not sent.
	_, rep = r.report(demo, "--demo", "--no-network")
	if res := findResult(t, rep, "agent", "demo agent"); res.Status != doctor.Skip || !strings.Contains(res.Detail, "--no-network") {
		t.Errorf("demo agent under --no-network: %+v", res)
	}

	// Speech left unset: the demo's offline engines are what is checked.
	_, rep = r.report(append(demo, "HANDSET_STT=", "HANDSET_TTS="), "--demo")
	stt, tts := findResult(t, rep, "stt", "sphinx"), findResult(t, rep, "tts", "flite")
	if !sphinx.Available() && (stt.Status != doctor.Fail || stt.Fix != engines.SetupHint || tts.Status != doctor.Fail) {
		t.Errorf("engines not linked: stt %+v, tts %+v", stt, tts)
	}
}

// TestDoctorDemoWithNothingSet: right after a demo, with no settings at all, --demo reports
// no problem with settings: the demo needs none.
func TestDoctorDemoWithNothingSet(t *testing.T) {
	withDemoProbes(t, noRuntimes(t)...)
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, WorkDir: t.TempDir(),
		Environ: []string{"HOME=" + t.TempDir(), "PATH=" + t.TempDir(), "HANDSET_LISTEN=127.0.0.1:0", "HANDSET_ENGINES_DIR=" + repoEngines(t)}}
	err := runDoctor(context.Background(), env, []string{"--demo"})
	text := out.String()
	for _, want := range []string{"  ✓ settings: every setting the demo uses is valid\n", "  ✓ demo agent: echo: ", "  ✓ listen: 127.0.0.1:0: "} {
		if !strings.Contains(text, want) {
			t.Errorf("doctor --demo does not say %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "HANDSET_AGENT") || strings.Contains(text, "nothing is set up") {
		t.Errorf("doctor --demo asks for serve's settings:\n%s", text)
	}
	if sphinx.Available() && err != nil {
		t.Errorf("the demo can run here, but doctor --demo failed (%v):\n%s", err, text)
	}
}
