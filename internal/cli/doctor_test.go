package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/engines"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/sim/fakedeepgram"
	"github.com/handset-voice/handset/internal/sim/fakeelevenlabs"
	"github.com/handset-voice/handset/internal/sim/fakehermes"
	"github.com/handset-voice/handset/internal/sim/fakeopenai"
	"github.com/handset-voice/handset/internal/sim/fakeopenaispeech"
	"github.com/handset-voice/handset/internal/sim/fakeopenclaw"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/sim/fakewebhook"
	"github.com/handset-voice/handset/internal/stt/sphinx"
)

// Secrets the doctor tests configure; none may ever appear in doctor's output.
const (
	docHermesKey = "hermes-doctor-key-0123456789"
	docDGKey     = "dg-doctor-secret-key-1"
	docELKey     = "el-doctor-secret-key-2"
	docTWToken   = "tw-doctor-secret-token-3"
	docGWToken   = "gw-doctor-secret-token-4"
	docOAIKey    = "sk-doctor-secret-key-5"
	docVoice     = "voice-doctor-1"
)

// Twilio numbers of the fake account: one pointing at the healthy public URL, one
// elsewhere, one behind a TwiML app, one at an unreachable public URL.
const (
	docNumber      = "+14155550100"
	docNumberElse  = "+14155550111"
	docNumberApp   = "+14155550122"
	docNumberGone  = "+14155550133"
	docNotAnNumber = "+14155550199"
)

// docRig is a healthy Handset configuration (Hermes, Deepgram, ElevenLabs, Twilio, a public
// URL) against the fakes, which the tests then break one thing at a time.
type docRig struct {
	t       *testing.T
	env     []string
	work    string // working folder
	home    string // HOME
	bin     string // the only PATH folder
	public  string // https URL answering /healthz "ok"
	gone    string // https URL nothing answers at
	secrets []string
}

// docFreeURL is a URL at a port nothing listens on.
func docFreeURL(t *testing.T, scheme string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return scheme + "://" + addr
}

func newDocRig(t *testing.T) *docRig {
	t.Helper()
	r := &docRig{t: t, work: t.TempDir(), home: t.TempDir(), bin: t.TempDir(),
		secrets: []string{docHermesKey, docDGKey, docELKey, docTWToken, docGWToken, docOAIKey}}

	// The public URL: Handset behind TLS, as a tunnel would put it.
	pub := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == "/healthz" {
			fmt.Fprintln(w, "ok")
			return
		}
		http.NotFound(w, req)
	}))
	t.Cleanup(pub.Close)
	// Doctor reaches example.com (httptest's certificate names it) on this machine, so the
	// public URL looks like an internet address, as Twilio needs.
	tr := pub.Client().Transport.(*http.Transport).Clone()
	dialer := &net.Dialer{}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && host == "example.com" {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return dialer.DialContext(ctx, network, addr)
	}
	t.Cleanup(tr.CloseIdleConnections)
	old := doctorTransport
	doctorTransport = tr
	t.Cleanup(func() { doctorTransport = old })
	r.public = strings.Replace(pub.URL, "127.0.0.1", "example.com", 1)
	r.gone = strings.Replace(docFreeURL(t, "https"), "127.0.0.1", "example.com", 1)

	h := fakehermes.New(fakehermes.Options{Key: docHermesKey})
	hSrv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); hSrv.Close() })
	dg := fakedeepgram.New(fakedeepgram.Options{Key: docDGKey})
	dgSrv := httptest.NewServer(dg)
	t.Cleanup(func() { dgSrv.Close(); dg.Close() })
	el := fakeelevenlabs.New(fakeelevenlabs.Options{Key: docELKey, Voices: []string{docVoice}})
	elSrv := httptest.NewServer(el)
	t.Cleanup(elSrv.Close)
	tw := faketwilio.New(faketwilio.Options{AuthToken: docTWToken, Numbers: []faketwilio.Number{
		{PhoneNumber: docNumber, VoiceURL: r.public + "/twilio/voice"},
		{PhoneNumber: docNumberElse, VoiceURL: "https://old.example.com/voice"},
		{PhoneNumber: docNumberApp, VoiceURL: r.public + "/twilio/voice", VoiceApplicationSID: "AP" + strings.Repeat("ab", 16)},
		{PhoneNumber: docNumberGone, VoiceURL: r.gone + "/twilio/voice"},
	}})
	twSrv := httptest.NewServer(tw)
	t.Cleanup(twSrv.Close)

	r.env = []string{
		"HOME=" + r.home,
		"PATH=" + r.bin,
		"HANDSET_AGENT=hermes",
		"HANDSET_AGENT_URL=" + hSrv.URL + "/v1",
		"HANDSET_AGENT_KEY=" + docHermesKey,
		"HANDSET_STT=deepgram",
		"DEEPGRAM_API_KEY=" + docDGKey,
		"HANDSET_DEEPGRAM_URL=" + dgSrv.URL,
		"HANDSET_TTS=elevenlabs",
		"ELEVENLABS_API_KEY=" + docELKey,
		"HANDSET_ELEVENLABS_URL=" + elSrv.URL,
		"HANDSET_ELEVENLABS_VOICE=" + docVoice,
		"HANDSET_VAD=energy",
		"HANDSET_DATA_DIR=" + filepath.Join(r.work, "data"),
		"TWILIO_ACCOUNT_SID=" + faketwilio.DefaultAccountSID,
		"TWILIO_AUTH_TOKEN=" + docTWToken,
		"HANDSET_TWILIO_API_URL=" + twSrv.URL,
		"HANDSET_PHONE_NUMBER=" + docNumber,
		"HANDSET_PUBLIC_URL=" + r.public,
	}
	return r
}

// noTwilio are the settings that turn Twilio off (an empty variable counts as unset).
var noTwilio = []string{"TWILIO_ACCOUNT_SID=", "TWILIO_AUTH_TOKEN=", "HANDSET_PHONE_NUMBER="}

// run runs doctor with the rig's settings and extra on top, and returns the exit code Main
// would give with what it printed.
func (r *docRig) run(extra []string, args ...string) (code int, stdout, stderr string) {
	r.t.Helper()
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, Environ: override(r.env, extra), WorkDir: r.work}
	err := runDoctor(context.Background(), env, args)
	code = docExitCode(err, &errOut)
	return code, out.String(), errOut.String()
}

// docExitCode maps runDoctor's error to an exit code as Main does.
func docExitCode(err error, stderr *bytes.Buffer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errReported):
		return 1
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "handset doctor: %s\nhint: %s\n", ue.msg, ue.hint)
		return 2
	}
	fmt.Fprintf(stderr, "handset doctor: %s\n", err)
	return 1
}

// report runs doctor --json, checks the invariants every run must hold (valid JSON, no
// secret anywhere, a fix for every warning and failure, the exit code agreeing with the
// results) and returns the report.
func (r *docRig) report(extra []string, args ...string) (int, doctorReport) {
	r.t.Helper()
	code, out, errOut := r.run(extra, append([]string{"--json"}, args...)...)
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		r.t.Fatalf("--json output is not JSON (%v):\n%s\nstderr: %s", err, out, errOut)
	}
	r.noSecrets(out + errOut)
	for _, res := range rep.Results {
		if (res.Status == doctor.Fail || res.Status == doctor.Warn) && res.Fix == "" {
			r.t.Errorf("%s/%s is %s without a fix: %s", res.Section, res.Name, res.Status, res.Detail)
		}
	}
	if want := map[bool]int{true: 0, false: 1}[rep.OK]; code != want || rep.OK == doctor.Failed(rep.Results) {
		r.t.Errorf("exit code %d, ok %v, failed %v: they disagree", code, rep.OK, doctor.Failed(rep.Results))
	}
	return code, rep
}

func (r *docRig) noSecrets(out string) {
	r.t.Helper()
	for _, s := range r.secrets {
		if strings.Contains(out, s) {
			r.t.Errorf("a secret (%.6s…) is in doctor's output:\n%s", s, out)
		}
	}
}

// findResult returns the result section/name, failing the test when there is none.
func findResult(t *testing.T, rep doctorReport, section, name string) doctor.Result {
	t.Helper()
	for _, res := range rep.Results {
		if res.Section == section && res.Name == name {
			return res
		}
	}
	t.Fatalf("no result %s/%s in:\n%s", section, name, dumpResults(rep.Results))
	return doctor.Result{}
}

func dumpResults(rs []doctor.Result) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %-10s %-22s %-4s %s | fix: %s\n", r.Section, r.Name, r.Status, r.Detail, r.Fix)
	}
	return b.String()
}

// expect breaks the rig with extra and checks that doctor names the problem (section,
// name, status), that the fix says fixHas, and the exit code; then that the text output
// shows the same result with its marker and its "fix:" line.
func (r *docRig) expect(extra []string, wantCode int, section, name string, status doctor.Status, fixHas string) doctor.Result {
	r.t.Helper()
	code, rep := r.report(extra)
	res := findResult(r.t, rep, section, name)
	if res.Status != status || code != wantCode {
		r.t.Fatalf("%s/%s: status %s (want %s), exit %d (want %d)\n%s", section, name, res.Status, status, code, wantCode, dumpResults(rep.Results))
	}
	if !strings.Contains(res.Fix, fixHas) {
		r.t.Errorf("%s/%s: fix %q does not say %q", section, name, res.Fix, fixHas)
	}
	code, out, errOut := r.run(extra)
	r.noSecrets(out + errOut)
	if code != wantCode {
		r.t.Errorf("text mode exit %d, want %d", code, wantCode)
	}
	marker := map[doctor.Status]string{doctor.OK: "✓", doctor.Warn: "!", doctor.Fail: "✗", doctor.Skip: "-"}[status]
	line := "  " + marker + " " + name + ": "
	i := strings.Index(out, line)
	if i < 0 || !strings.Contains(out[:i], section+"\n") {
		r.t.Fatalf("text output does not show %q under %q:\n%s", line, section, out)
	}
	if status == doctor.Fail || status == doctor.Warn {
		rest := out[i:]
		if nl := strings.Index(rest, "\n"); nl < 0 || !strings.HasPrefix(rest[nl+1:], "      fix: "+res.Fix+"\n") {
			r.t.Errorf("the fix is not on the line after %q:\n%s", line, out)
		}
	}
	return res
}

// TestDoctorHealthy: the healthy configuration passes, every check ok or skipped; the
// text output groups the sections and ends with the summary; dotenv files are reported by
// path and secrets only as set or missing.
func TestDoctorHealthy(t *testing.T) {
	r := newDocRig(t)
	// One key from the project's .env, to see it reported with its origin.
	if err := os.WriteFile(filepath.Join(r.work, ".env"), []byte("DEEPGRAM_API_KEY="+docDGKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.env = slices.DeleteFunc(r.env, func(kv string) bool { return strings.HasPrefix(kv, "DEEPGRAM_API_KEY=") })
	code, rep := r.report(nil)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, dumpResults(rep.Results))
	}
	for _, res := range rep.Results {
		if res.Status != doctor.OK && res.Status != doctor.Skip {
			t.Errorf("%s/%s is %s: %s", res.Section, res.Name, res.Status, res.Detail)
		}
	}
	envFile := filepath.Join(r.work, ".env")
	if len(rep.EnvFiles) != 1 || rep.EnvFiles[0] != envFile {
		t.Errorf("env files %v, want [%s]", rep.EnvFiles, envFile)
	}
	if d := findResult(t, rep, "config", "files").Detail; !strings.Contains(d, envFile) {
		t.Errorf("files: %q does not name %s", d, envFile)
	}
	secrets := findResult(t, rep, "config", "secrets").Detail
	for _, want := range []string{"HANDSET_AGENT_KEY set (environment)", "DEEPGRAM_API_KEY set (env file " + envFile + ":1)", "ELEVENLABS_API_KEY set", "TWILIO_AUTH_TOKEN set"} {
		if !strings.Contains(secrets, want) {
			t.Errorf("secrets: %q does not say %q", secrets, want)
		}
	}
	for _, want := range []struct{ section, name, detail string }{
		{"agent", "api server", "Hermes 0.18.2 (hermes-agent)"},
		{"agent", "key", "accepted"},
		{"agent", "model", "hermes-agent is served"},
		{"agent", "capabilities", "runs API with stop"},
		{"stt", "deepgram key", "accepts the key"},
		{"tts", "elevenlabs voice", docVoice},
		{"vad", "engine", "energy"},
		{"store", "data dir", "does not exist yet"},
		{"carrier", "twilio credentials", faketwilio.DefaultAccountSID},
		{"carrier", "phone number", docNumber},
		{"carrier", "voice webhook", r.public + "/twilio/voice"},
		{"public_url", "reachable", "Handset answers"},
	} {
		if res := findResult(t, rep, want.section, want.name); res.Status != doctor.OK || !strings.Contains(res.Detail, want.detail) {
			t.Errorf("%s/%s: %s %q, want ok saying %q", want.section, want.name, res.Status, res.Detail, want.detail)
		}
	}
	// Skipped because there is nothing to look at on this machine.
	for _, name := range []string{"api server enabled", "gateway status"} {
		if res := findResult(t, rep, "agent", name); res.Status != doctor.Skip {
			t.Errorf("agent/%s: %s %q, want skip", name, res.Status, res.Detail)
		}
	}

	code, out, _ := r.run(nil)
	if code != 0 {
		t.Fatalf("text mode exit %d:\n%s", code, out)
	}
	for _, want := range []string{"config\n  ✓ files: ", "\nagent\n  ✓ api server: ", "\ncarrier\n", "\npublic_url\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	c := doctor.Count(rep.Results)
	if !strings.HasSuffix(out, "\n"+c.String()+"\n") || c.Fail != 0 {
		t.Errorf("text output does not end with the summary %q:\n%s", c.String(), out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colours on a non-terminal")
	}
}

// TestDoctorFindsBreakage breaks one thing at a time; doctor must name it and give its fix.
func TestDoctorFindsBreakage(t *testing.T) {
	r := newDocRig(t)
	aFile := filepath.Join(r.work, "a-file")
	if err := os.WriteFile(aFile, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name          string
		extra         []string
		code          int
		section, item string
		status        doctor.Status
		fix           string
	}{
		{"wrong agent key", []string{"HANDSET_AGENT_KEY=wrong-key-0123456789abcdef"}, 1, "agent", "key", doctor.Fail, "API_SERVER_KEY"},
		{"runtime down", []string{"HANDSET_AGENT_URL=" + docFreeURL(t, "http") + "/v1"}, 1, "agent", "api server", doctor.Fail, "hermes gateway start"},
		{"model missing", []string{"HANDSET_AGENT_MODEL=other-model"}, 1, "agent", "model", doctor.Fail, "HANDSET_AGENT_MODEL to one of hermes-agent"},
		{"wrong deepgram key", []string{"DEEPGRAM_API_KEY=wrong-dg"}, 1, "stt", "deepgram key", doctor.Fail, "set DEEPGRAM_API_KEY"},
		{"deepgram down", []string{"HANDSET_DEEPGRAM_URL=" + docFreeURL(t, "http")}, 1, "stt", "deepgram key", doctor.Fail, "HANDSET_DEEPGRAM_URL"},
		{"wrong elevenlabs key", []string{"ELEVENLABS_API_KEY=wrong-el"}, 1, "tts", "elevenlabs key", doctor.Fail, "set ELEVENLABS_API_KEY"},
		{"missing voice", []string{"HANDSET_ELEVENLABS_VOICE=no-such-voice"}, 1, "tts", "elevenlabs voice", doctor.Fail, "HANDSET_ELEVENLABS_VOICE"},
		{"data dir is a file", []string{"HANDSET_DATA_DIR=" + aFile}, 1, "store", "data dir", doctor.Fail, "HANDSET_DATA_DIR"},
		{"data dir under a file", []string{"HANDSET_DATA_DIR=" + filepath.Join(aFile, "data")}, 1, "store", "data dir", doctor.Fail, "HANDSET_DATA_DIR"},
		{"database unreachable", []string{"HANDSET_DATABASE_URL=postgres://u:pw-doctor@127.0.0.1:1/handset?connect_timeout=2"}, 1, "store", "database", doctor.Fail, "HANDSET_DATABASE_URL"},
		{"quiet hours", []string{"HANDSET_QUIET_HOURS=9pm-8am"}, 1, "store", "jobs", doctor.Fail, "refuses to start"},
		{"allow-list", []string{"HANDSET_TRANSFER_ALLOW=sales"}, 1, "store", "jobs", doctor.Fail, "refuses to start"},
		{"call allow-list", []string{"HANDSET_CALL_ALLOW=+1415*,friends"}, 1, "store", "jobs", doctor.Fail, "refuses to start"},
		{"twilio wrong token", []string{"TWILIO_AUTH_TOKEN=wrong-token-doctor"}, 1, "carrier", "twilio credentials", doctor.Fail, "Auth Token"},
		{"api key sid instead of the account's", []string{"TWILIO_ACCOUNT_SID=SK" + strings.Repeat("0a", 16)}, 1, "carrier", "twilio credentials", doctor.Fail, "Twilio settings"},
		{"twilio down", []string{"HANDSET_TWILIO_API_URL=" + docFreeURL(t, "http")}, 1, "carrier", "twilio credentials", doctor.Fail, "HANDSET_TWILIO_API_URL"},
		{"number missing", []string{"HANDSET_PHONE_NUMBER=" + docNotAnNumber}, 1, "carrier", "phone number", doctor.Fail, "HANDSET_PHONE_NUMBER"},
		{"number unset", []string{"HANDSET_PHONE_NUMBER="}, 0, "carrier", "phone number", doctor.Warn, "HANDSET_PHONE_NUMBER"},
		{"webhook elsewhere", []string{"HANDSET_PHONE_NUMBER=" + docNumberElse}, 1, "carrier", "voice webhook", doctor.Fail, "handset attach-number " + docNumberElse},
		{"twiml app", []string{"HANDSET_PHONE_NUMBER=" + docNumberApp}, 1, "carrier", "voice webhook", doctor.Fail, "handset attach-number " + docNumberApp},
		{"public url unreachable", []string{"HANDSET_PUBLIC_URL=" + r.gone, "HANDSET_PHONE_NUMBER=" + docNumberGone}, 0, "public_url", "reachable", doctor.Warn, "start handset serve"},
		{"public url answers something else", append([]string{"HANDSET_PUBLIC_URL=" + r.public + "/elsewhere"}, noTwilio...), 1, "public_url", "reachable", doctor.Fail, "point the tunnel"},
		{"public url unset with twilio", []string{"HANDSET_PUBLIC_URL="}, 1, "public_url", "address", doctor.Fail, "HANDSET_PUBLIC_URL"},
		{"public url not https with twilio", []string{"HANDSET_PUBLIC_URL=http://voice.example.com"}, 1, "public_url", "address", doctor.Fail, "https"},
		{"public url on this machine with twilio", []string{"HANDSET_PUBLIC_URL=https://127.0.0.1:8443"}, 1, "public_url", "address", doctor.Warn, "public https address"},
		{"bad setting", []string{"HANDSET_STT=deepgramm"}, 1, "config", "HANDSET_STT", doctor.Fail, "set HANDSET_STT (stt.provider) in environment to deepgram"},
		{"unknown name", []string{"HANDSET_SST=deepgram"}, 0, "config", "HANDSET_SST", doctor.Warn, "rename it HANDSET_STT"},
		{"no runtime", []string{"HANDSET_AGENT="}, 1, "config", "HANDSET_AGENT", doctor.Fail, "hermes, openclaw"},
		{"no agent key", []string{"HANDSET_AGENT_KEY="}, 1, "config", "HANDSET_AGENT_KEY", doctor.Fail, "API_SERVER_KEY"},
		{"no stt", []string{"HANDSET_STT="}, 1, "config", "HANDSET_STT", doctor.Fail, registryNames(registry.KindSTT)},
		{"vad files missing", []string{"HANDSET_VAD=webrtc", "HANDSET_ENGINES_DIR=" + r.home}, 1, "vad", "engine", doctor.Fail, "engines.sh"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r.t = t
			r.secrets = append(r.secrets[:6:6], "pw-doctor")
			r.expect(c.extra, c.code, c.section, c.item, c.status, c.fix)
		})
	}
	r.t = t

	t.Run("engine not linked or model missing", func(t *testing.T) {
		r.t = t
		res := r.expect([]string{"HANDSET_STT=sphinx", "HANDSET_SPHINX_MODEL=" + filepath.Join(r.home, "no-model")}, 1, "stt", "sphinx", doctor.Fail, "")
		want := engines.SetupHint
		if sphinx.Available() {
			want = "no-model" // linked: the model check names the missing folder
		}
		if !strings.Contains(res.Fix, want) {
			t.Errorf("fix %q does not say %q", res.Fix, want)
		}
	})
	t.Run("a wrong key takes the dependent checks with it", func(t *testing.T) {
		r.t = t
		_, rep := r.report([]string{"TWILIO_AUTH_TOKEN=wrong-token-doctor", "ELEVENLABS_API_KEY=wrong-el"})
		for _, it := range [][2]string{{"carrier", "phone number"}, {"carrier", "voice webhook"}, {"tts", "elevenlabs voice"}} {
			if res := findResult(t, rep, it[0], it[1]); res.Status != doctor.Skip {
				t.Errorf("%s/%s: %s %q, want skip", it[0], it[1], res.Status, res.Detail)
			}
		}
	})
	if os.Geteuid() != 0 { // root writes anywhere
		t.Run("data dir read-only", func(t *testing.T) {
			r.t = t
			dir := filepath.Join(t.TempDir(), "ro")
			if err := os.Mkdir(dir, 0o500); err != nil {
				t.Fatal(err)
			}
			r.expect([]string{"HANDSET_DATA_DIR=" + dir}, 1, "store", "data dir", doctor.Fail, "HANDSET_DATA_DIR")
		})
	}
}

// TestDoctorTwilioAccount: a trial account is a warning, a suspended one a failure.
func TestDoctorTwilioAccount(t *testing.T) {
	r := newDocRig(t)
	for _, c := range []struct {
		typ, status string
		want        doctor.Status
		code        int
		fix         string
	}{
		{"Trial", "active", doctor.Warn, 0, "upgrade the account"},
		{"Full", "suspended", doctor.Fail, 1, "reactivate"},
	} {
		tw := faketwilio.New(faketwilio.Options{AuthToken: docTWToken, Type: c.typ, Status: c.status,
			Numbers: []faketwilio.Number{{PhoneNumber: docNumber, VoiceURL: r.public + "/twilio/voice"}}})
		srv := httptest.NewServer(tw)
		r.expect([]string{"HANDSET_TWILIO_API_URL=" + srv.URL}, c.code, "carrier", "twilio credentials", c.want, c.fix)
		srv.Close()
	}
}

// TestDoctorHermesHome: ~/.hermes is read for the API server switch and its key, the
// hermes CLI's gateway status is run when it is on PATH, and a key only ~/.hermes/.env
// supplies is flagged because serve does not read that file.
func TestDoctorHermesHome(t *testing.T) {
	r := newDocRig(t)
	hermesDir := filepath.Join(r.home, ".hermes")
	if err := os.Mkdir(hermesDir, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(name, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	hermesEnv := filepath.Join(hermesDir, ".env")

	write(hermesEnv, "OPENAI_API_KEY=unrelated\n", 0o600)
	r.expect(nil, 0, "agent", "api server enabled", doctor.Warn, "handset setup --enable-hermes")

	write(hermesEnv, "API_SERVER_ENABLED=true\nAPI_SERVER_KEY=short\n", 0o600)
	r.expect(nil, 1, "agent", "api server enabled", doctor.Fail, "--generate-key")

	write(hermesEnv, "API_SERVER_ENABLED=true\nAPI_SERVER_KEY="+docHermesKey+"\n", 0o600)
	code, rep := r.report([]string{"HANDSET_AGENT_KEY="})
	if res := findResult(t, rep, "agent", "api server enabled"); res.Status != doctor.OK || !strings.Contains(res.Detail, "API_SERVER_ENABLED=true in "+hermesEnv) {
		t.Errorf("api server enabled: %+v", res)
	}
	if res := findResult(t, rep, "agent", "key"); res.Status != doctor.OK {
		t.Errorf("the key from ~/.hermes/.env was not used: %+v", res)
	}
	if len(rep.EnvFiles) != 1 || rep.EnvFiles[0] != hermesEnv {
		t.Errorf("env files %v, want ~/.hermes/.env reported by path", rep.EnvFiles)
	}
	if res := findResult(t, rep, "config", "~/.hermes/.env"); res.Status != doctor.Warn || !strings.Contains(res.Detail, "HANDSET_AGENT_KEY (via API_SERVER_KEY)") ||
		!strings.Contains(res.Fix, "--env-file "+hermesEnv) || code != 0 {
		t.Errorf("the key only doctor sees is not flagged: %+v (exit %d)", res, code)
	}
	// A project .env wins over ~/.hermes/.env.
	write(filepath.Join(r.work, ".env"), "API_SERVER_KEY=project-key-0123456789abc\n", 0o600)
	r.secrets = append(r.secrets, "project-key-0123456789abc")
	r.expect([]string{"HANDSET_AGENT_KEY="}, 1, "agent", "key", doctor.Fail, "API_SERVER_KEY")
	if err := os.Remove(filepath.Join(r.work, ".env")); err != nil {
		t.Fatal(err)
	}
	r.expect([]string{"HANDSET_AGENT_KEY=another-key-0123456789"}, 1, "agent", "api server enabled", doctor.Warn, "same key")

	write(filepath.Join(hermesDir, "config.yaml"), "platforms:\n  api_server:\n    enabled: true\n", 0o600)
	write(hermesEnv, "# nothing here\n", 0o600)
	_, rep = r.report(nil)
	if res := findResult(t, rep, "agent", "api server enabled"); res.Status != doctor.OK || !strings.Contains(res.Detail, "config.yaml") {
		t.Errorf("config.yaml's switch was not seen: %+v", res)
	}

	// The hermes CLI, when on PATH, is asked for the gateway's status.
	hermesCLI := filepath.Join(r.bin, "hermes")
	write(hermesCLI, "#!/bin/sh\n[ \"$1 $2\" = \"gateway status\" ] || exit 9\necho 'Gateway: not running'\nexit 3\n", 0o755)
	r.expect(nil, 0, "agent", "gateway status", doctor.Warn, "hermes gateway start")
	write(hermesCLI, "#!/bin/sh\necho\necho \"Gateway: running (HOME=$HOME)\"\n", 0o755)
	_, rep = r.report(nil)
	if res := findResult(t, rep, "agent", "gateway status"); res.Status != doctor.OK || res.Detail != "Gateway: running (HOME="+r.home+")" {
		t.Errorf("gateway status: %+v", res)
	}
	// With the runtime down and nothing enabling the API server, the fix is to enable it.
	write(filepath.Join(hermesDir, "config.yaml"), "platforms: {}\n", 0o600)
	r.expect([]string{"HANDSET_AGENT_URL=" + docFreeURL(t, "http") + "/v1"}, 1, "agent", "api server", doctor.Fail, "handset setup --enable-hermes")
}

// TestDoctorOpenClaw: the gateway's token and agent roster, the main-agent warning, and the
// HTTP endpoint switch.
func TestDoctorOpenClaw(t *testing.T) {
	r := newDocRig(t)
	start := func(agents ...fakeopenclaw.Agent) string {
		gw := fakeopenclaw.New(fakeopenclaw.Options{Token: docGWToken, Agents: agents})
		srv := httptest.NewServer(gw)
		t.Cleanup(func() { gw.Close(); srv.Close() })
		return srv.URL
	}
	two := start(fakeopenclaw.Agent{ID: "main"}, fakeopenclaw.Agent{ID: "support"})
	one := start()
	base := []string{"HANDSET_AGENT=openclaw", "HANDSET_AGENT_KEY=", "OPENCLAW_GATEWAY_TOKEN=" + docGWToken, "HANDSET_AGENT_URL=" + two}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }

	code, rep := r.report(with("HANDSET_AGENT_MODEL=openclaw/support"))
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, dumpResults(rep.Results))
	}
	if res := findResult(t, rep, "agent", "agent"); res.Status != doctor.OK || !strings.Contains(res.Detail, `"support"`) {
		t.Errorf("agent: %+v", res)
	}
	if res := findResult(t, rep, "agent", "gateway"); res.Status != doctor.OK || !strings.Contains(res.Detail, "main, support") {
		t.Errorf("gateway: %+v", res)
	}

	r.expect(with(), 1, "agent", "agent", doctor.Fail, "HANDSET_AGENT_MODEL=openclaw/<agent>")
	r.expect(with("HANDSET_AGENT_MODEL=openclaw/sales"), 1, "agent", "agent", doctor.Fail, "HANDSET_AGENT_MODEL=openclaw/<agent>")
	r.expect(with("HANDSET_AGENT_URL="+one), 0, "agent", "agent", doctor.Warn, "HANDSET_AGENT_MODEL=openclaw/<agent>")
	_, rep = r.report(with("HANDSET_AGENT_URL="+one, "HANDSET_AGENT_MODEL=openclaw/main"))
	if res := findResult(t, rep, "agent", "agent"); res.Status != doctor.OK {
		t.Errorf("main named explicitly should be ok: %+v", res)
	}
	r.expect(with("OPENCLAW_GATEWAY_TOKEN=wrong-gw-token"), 1, "agent", "gateway", doctor.Fail, "OPENCLAW_GATEWAY_TOKEN")
	r.expect(with("HANDSET_AGENT_URL="+docFreeURL(t, "http")), 1, "agent", "gateway", doctor.Fail, "openclaw gateway")

	// The HTTP transport: GET /v1/models on the gateway's port tells whether the endpoint is on.
	gw := fakeopenclaw.New(fakeopenclaw.Options{Token: docGWToken, Agents: []fakeopenclaw.Agent{{ID: "main"}, {ID: "support"}}})
	enabled := true
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, req *http.Request) {
		switch {
		case !enabled:
			http.NotFound(w, req)
		case req.Header.Get("Authorization") != "Bearer "+docGWToken:
			http.Error(w, `{"error":{"message":"Unauthorized"}}`, http.StatusUnauthorized)
		default:
			fmt.Fprint(w, `{"object":"list","data":[{"id":"openclaw"},{"id":"openclaw/main"},{"id":"openclaw/support"}]}`)
		}
	})
	mux.Handle("/", gw)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { gw.Close(); srv.Close() })
	httpT := with("HANDSET_AGENT_URL="+srv.URL, "HANDSET_AGENT_TRANSPORT=http", "HANDSET_AGENT_MODEL=openclaw/support")
	_, rep = r.report(httpT)
	if res := findResult(t, rep, "agent", "http endpoint"); res.Status != doctor.OK {
		t.Errorf("http endpoint: %+v", res)
	}
	enabled = false
	r.expect(httpT, 1, "agent", "http endpoint", doctor.Fail, "gateway.http.endpoints.chatCompletions.enabled")
}

// TestDoctorOtherRuntimes: the OpenAI-compatible runtime (key, model), the webhook (reached
// without POSTing a turn), echo, and OpenAI speech.
func TestDoctorOtherRuntimes(t *testing.T) {
	r := newDocRig(t)
	oai := fakeopenai.New(fakeopenai.Options{Key: docOAIKey, Models: []string{"model-a", "model-b"}})
	oaiSrv := httptest.NewServer(oai)
	t.Cleanup(func() { oai.Close(); oaiSrv.Close() })
	openai := []string{"HANDSET_AGENT=openai", "HANDSET_AGENT_URL=" + oaiSrv.URL + "/v1", "HANDSET_AGENT_KEY=" + docOAIKey, "HANDSET_AGENT_MODEL=model-a"}
	code, rep := r.report(openai)
	if code != 0 || findResult(t, rep, "agent", "model").Status != doctor.OK {
		t.Fatalf("openai runtime: exit %d\n%s", code, dumpResults(rep.Results))
	}
	r.expect(append(openai, "HANDSET_AGENT_MODEL=model-z"), 0, "agent", "model", doctor.Warn, "HANDSET_AGENT_MODEL")
	r.expect(append(openai, "HANDSET_AGENT_KEY=sk-wrong"), 1, "agent", "api", doctor.Fail, "HANDSET_AGENT_KEY")

	hook := fakewebhook.New(fakewebhook.Options{})
	hookSrv := httptest.NewServer(hook)
	t.Cleanup(func() { hook.Close(); hookSrv.Close() })
	webhook := []string{"HANDSET_AGENT=webhook", "HANDSET_AGENT_URL=" + hookSrv.URL + "/turn", "HANDSET_AGENT_KEY="}
	code, rep = r.report(webhook)
	if res := findResult(t, rep, "agent", "webhook"); code != 0 || res.Status != doctor.OK {
		t.Errorf("webhook: exit %d %+v", code, res)
	}
	if n := len(hook.Requests()); n != 0 {
		t.Errorf("doctor sent the webhook %d turn(s)", n)
	}
	r.expect([]string{"HANDSET_AGENT=webhook", "HANDSET_AGENT_URL=" + docFreeURL(t, "http") + "/turn", "HANDSET_AGENT_KEY="}, 1, "agent", "webhook", doctor.Fail, "start your webhook server")

	code, rep = r.report([]string{"HANDSET_AGENT=echo"})
	if res := findResult(t, rep, "agent", "runtime"); code != 0 || res.Status != doctor.OK {
		t.Errorf("echo: exit %d %+v", code, res)
	}

	speech := fakeopenaispeech.New(fakeopenaispeech.Options{Key: docOAIKey})
	speechSrv := httptest.NewServer(speech)
	t.Cleanup(func() { speech.Close(); speechSrv.Close() })
	openaiSpeech := []string{"HANDSET_STT=openai", "HANDSET_TTS=openai", "OPENAI_API_KEY=" + docOAIKey, "HANDSET_OPENAI_URL=" + speechSrv.URL + "/v1"}
	code, rep = r.report(openaiSpeech)
	if code != 0 || findResult(t, rep, "stt", "openai model").Status != doctor.OK || findResult(t, rep, "tts", "openai key").Status != doctor.OK {
		t.Errorf("openai speech: exit %d\n%s", code, dumpResults(rep.Results))
	}
	r.expect(append(openaiSpeech, "OPENAI_API_KEY=sk-wrong-speech"), 1, "stt", "openai key", doctor.Fail, "OPENAI_API_KEY")
	r.expect(append(openaiSpeech, "HANDSET_OPENAI_TTS_MODEL=tts-9"), 0, "tts", "openai model", doctor.Warn, "HANDSET_OPENAI_TTS_MODEL")
}

// TestDoctorVAD: the WebRTC VAD really loads from the engine files.
func TestDoctorVAD(t *testing.T) {
	r := newDocRig(t)
	_, rep := r.report([]string{"HANDSET_VAD=webrtc", "HANDSET_ENGINES_DIR=" + repoEngines(t)})
	if res := findResult(t, rep, "vad", "engine"); res.Status != doctor.OK || !strings.HasPrefix(res.Detail, "webrtc") {
		t.Errorf("webrtc: %+v", res)
	}
	_, rep = r.report([]string{"HANDSET_VAD=", "HANDSET_ENGINES_DIR=" + repoEngines(t)})
	if res := findResult(t, rep, "vad", "engine"); res.Status != doctor.OK {
		t.Errorf("best available: %+v", res)
	}
	r.expect([]string{"HANDSET_VAD=", "HANDSET_ENGINES_DIR=" + t.TempDir()}, 0, "vad", "engine", doctor.Warn, "engines.sh")
}

// TestDoctorNoNetwork: --no-network skips every probe of a server, so even a dead runtime
// passes, while local checks still run.
func TestDoctorNoNetwork(t *testing.T) {
	r := newDocRig(t)
	code, rep := r.report([]string{"HANDSET_AGENT_URL=" + docFreeURL(t, "http") + "/v1", "DEEPGRAM_API_KEY=wrong"}, "--no-network")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, dumpResults(rep.Results))
	}
	for _, it := range [][2]string{{"agent", "api server"}, {"agent", "key"}, {"stt", "deepgram key"}, {"tts", "elevenlabs voice"},
		{"carrier", "twilio credentials"}, {"carrier", "voice webhook"}, {"public_url", "reachable"}, {"agent", "gateway status"}} {
		if res := findResult(t, rep, it[0], it[1]); res.Status != doctor.Skip || !strings.Contains(res.Detail, "--no-network") {
			t.Errorf("%s/%s: %+v, want skipped for --no-network", it[0], it[1], res)
		}
	}
	for _, it := range [][2]string{{"config", "settings"}, {"store", "data dir"}, {"vad", "engine"}, {"public_url", "address"}} {
		if res := findResult(t, rep, it[0], it[1]); res.Status != doctor.OK {
			t.Errorf("%s/%s ran not: %+v", it[0], it[1], res)
		}
	}
	// Local problems are still found.
	aFile := filepath.Join(r.work, "a-file")
	if err := os.WriteFile(aFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _ := r.report([]string{"HANDSET_DATA_DIR=" + aFile}, "--no-network"); code != 1 {
		t.Errorf("a local failure under --no-network: exit %d, want 1", code)
	}
}

// TestDoctorTimeout: a server that accepts and never answers fails its checks after
// --timeout, all at once rather than one after another.
func TestDoctorTimeout(t *testing.T) {
	r := newDocRig(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		close(held)
		for c := range held {
			c.Close()
		}
	})
	code, rep := r.report([]string{"HANDSET_AGENT_URL=http://" + ln.Addr().String() + "/v1"}, "--timeout", "300ms")
	res := findResult(t, rep, "agent", "api server")
	if code != 1 || res.Status != doctor.Fail || !strings.Contains(res.Detail, "timed out after 300ms") || !strings.Contains(res.Fix, "--timeout") {
		t.Errorf("exit %d, %+v", code, res)
	}
}

// TestDoctorUsageAndLoadErrors: flag mistakes are exit 2; settings that cannot be read are
// a failed check naming the file.
func TestDoctorUsageAndLoadErrors(t *testing.T) {
	r := newDocRig(t)
	for _, args := range [][]string{{"--bogus"}, {"extra-arg"}, {"--timeout", "0s"}} {
		code, _, errOut := r.run(nil, args...)
		if code != 2 || !strings.Contains(errOut, "hint:") {
			t.Errorf("doctor %v: exit %d, want 2 with a hint; stderr:\n%s", args, code, errOut)
		}
	}
	if code, _, _ := r.run(nil, "--help"); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
	// An unknown key is a warning, not a failure.
	if err := os.WriteFile(filepath.Join(r.work, "handset.yaml"), []byte("agent:\n  urll: http://x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := r.expect(nil, 0, "config", "agent.urll", doctor.Warn, "rename it agent.url")
	if !strings.Contains(res.Detail, "handset.yaml:2") {
		t.Errorf("unknown key: %+v", res)
	}
	if err := os.WriteFile(filepath.Join(r.work, "handset.yaml"), []byte("agent:\n  url: [http://x]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.expect(nil, 1, "config", "load", doctor.Fail, "correct the file")
	_, rep := r.report(nil)
	if res := findResult(t, rep, "config", "load"); !strings.Contains(res.Detail, "handset.yaml:2") || !strings.Contains(res.Detail, "agent.url") {
		t.Errorf("load problem: %+v", res)
	}
	r.expect(nil, 1, "config", "load", doctor.Fail, "correct the file")
	_, rep = r.report(nil, "--env-file", "missing.env")
	if res := findResult(t, rep, "config", "load"); !strings.Contains(res.Fix, "missing.env") {
		t.Errorf("missing env file: %+v", res)
	}
}

// TestDoctorJSONHasNoSecrets: the JSON report of a configuration where every key is
// rejected holds no key, in any field.
func TestDoctorJSONHasNoSecrets(t *testing.T) {
	r := newDocRig(t)
	wrong := []string{"HANDSET_AGENT_KEY=wrong-agent-key-abcdefghijk", "DEEPGRAM_API_KEY=wrong-dg-key-abcdef",
		"ELEVENLABS_API_KEY=wrong-el-key-abcdef", "TWILIO_AUTH_TOKEN=wrong-tw-token-abcdef",
		"HANDSET_API_TOKEN=api-token-abcdef-0123456789abcdef", "HANDSET_CALLER_HASH_SECRET=hash-secret-abcdef"}
	for _, kv := range wrong {
		_, v, _ := strings.Cut(kv, "=")
		r.secrets = append(r.secrets, v)
	}
	code, rep := r.report(wrong) // report checks every secret against the whole output
	if code != 1 || len(rep.Results) < 15 {
		t.Errorf("exit %d with %d results", code, len(rep.Results))
	}
	var raw map[string]any
	_, out, _ := r.run(wrong, "--json")
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"ok", "env_files", "results", "summary"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("the JSON report has no %q", k)
		}
	}
	first := raw["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"section", "name", "status", "took_ms"} {
		if _, ok := first[k]; !ok {
			t.Errorf("a JSON result has no %q: %v", k, first)
		}
	}
}
