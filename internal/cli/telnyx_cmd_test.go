package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/carrier/telnyx/telnyxsim"
	"github.com/handset-voice/handset/internal/doctor"
)

// The number commands, setup and doctor against a fake Telnyx account.

// txPublic is the HANDSET_PUBLIC_URL of the Telnyx command tests, and txHook the webhook
// URL Handset takes Telnyx's events at behind it.
const (
	txPublic = "https://voice.example.com"
	txHook   = txPublic + "/telnyx/webhook"
)

// txConnection is Handset's Call Control Application; txOtherConnection another one.
const (
	txConnection      = "1494404757140276705"
	txOtherConnection = "2000000000000000001"
)

// txAPIKey is the fake account's API key; it never appears in any output.
const txAPIKey = "KEYtelnyx-command-tests-0123456789"

// txNumbers is an account with two numbers on Handset's application, one on another
// connection and one on none.
func txNumbers() []telnyxsim.Number {
	return []telnyxsim.Number{
		{PhoneNumber: "+14155550100", ConnectionID: txConnection, ConnectionName: "handset"},
		{PhoneNumber: "+14155550101", ConnectionID: txConnection, ConnectionName: "handset"},
		{PhoneNumber: "+14155550102", ConnectionID: txOtherConnection, ConnectionName: "pbx"},
		{PhoneNumber: "+14155550103"},
	}
}

// txFake serves a fake Telnyx account and returns it with an environment that reaches it.
func txFake(t *testing.T, o telnyxsim.Options, extra ...string) (*telnyxsim.Server, []string) {
	t.Helper()
	o.ConnectionID, o.APIKey = txConnection, txAPIKey
	fake := telnyxsim.New(o)
	ts := httptest.NewServer(fake)
	t.Cleanup(func() { ts.Close(); fake.Close() })
	environ := []string{
		"TELNYX_API_KEY=" + txAPIKey,
		"TELNYX_PUBLIC_KEY=" + fake.PublicKeyBase64(),
		"TELNYX_CONNECTION_ID=" + txConnection,
		"HANDSET_TELNYX_API_URL=" + ts.URL + "/v2",
	}
	return fake, append(environ, extra...)
}

// txNumber is the fake's number e164.
func txNumber(t *testing.T, fake *telnyxsim.Server, e164 string) telnyxsim.Number {
	t.Helper()
	for _, n := range fake.Numbers() {
		if n.PhoneNumber == e164 {
			return n
		}
	}
	t.Fatalf("the fake has no number %s", e164)
	return telnyxsim.Number{}
}

// TestTelnyxNumbersShowsWhereCallsGo: `numbers` on a Telnyx account says, per number,
// whether its calls reach Handset (on the application whose webhook is Handset's), go
// elsewhere (the application points elsewhere), are held by another connection, or go
// nowhere; HANDSET_CARRIER chooses Telnyx as --carrier does.
func TestTelnyxNumbersShowsWhereCallsGo(t *testing.T) {
	fake, environ := txFake(t, telnyxsim.Options{Numbers: txNumbers(), WebhookURL: txHook}, "HANDSET_PUBLIC_URL="+txPublic)
	for _, how := range [][]string{{"--carrier", "telnyx"}, nil} {
		env := environ
		if how == nil {
			env = append(env, "HANDSET_CARRIER=telnyx")
		}
		out, errOut, err := twRun(t, runNumbers, env, how...)
		if err != nil {
			t.Fatalf("numbers %v: %v\n%s", how, err, errOut)
		}
		wantContains(t, "numbers", out, `Telnyx account "handset" (`+txConnection, "4 numbers", "Handset's voice URL: "+txHook)
		wantContains(t, "+14155550100", numberBlock(t, out, "+14155550100"), "POST "+txHook, "points at Handset")
		wantContains(t, "+14155550102", numberBlock(t, out, "+14155550102"),
			"uses a different connection "+txOtherConnection+" (pbx), which overrides the voice URL")
		wantContains(t, "+14155550103", numberBlock(t, out, "+14155550103"), "has no voice URL, so its calls do not reach Handset")
		if strings.Contains(out+errOut, txAPIKey) {
			t.Errorf("the API key is in the output:\n%s", out)
		}
	}

	// Pointed elsewhere, the application takes every one of its numbers with it.
	fake.SetWebhookURL("https://old.example.com/hook")
	out, _, err := twRun(t, runNumbers, environ, "--carrier", "telnyx")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"+14155550100", "+14155550101"} {
		wantContains(t, n, numberBlock(t, out, n), "points elsewhere: https://old.example.com/hook")
	}
}

// TestAttachWarnsItMovesEveryNumberOnTheApplication: attaching a Telnyx number puts it on
// Handset's application and points the application (API version 2) at Handset, which
// moves every other number on it too: attach-number says which, in text and in --json;
// alone on the application, it warns of nothing; and when the list cannot be read, it
// says so instead of staying silent.
func TestAttachWarnsItMovesEveryNumberOnTheApplication(t *testing.T) {
	fake, environ := txFake(t, telnyxsim.Options{Numbers: txNumbers(), WebhookURL: "https://old.example.com/hook", WebhookAPIVersion: "1"},
		"HANDSET_PUBLIC_URL="+txPublic)
	out, errOut, err := twRun(t, runAttachNumber, environ, "+1 415 555 0103", "--carrier", "telnyx")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if n := txNumber(t, fake, "+14155550103"); n.ConnectionID != txConnection {
		t.Errorf("the number is on connection %q, want %s", n.ConnectionID, txConnection)
	}
	if got := fake.WebhookURL(); got != txHook {
		t.Errorf("the application's webhook_event_url is %q, want %s", got, txHook)
	}
	if v := appliedAPIVersion(t, fake); v != "2" {
		t.Errorf("attach set webhook_api_version %q, want 2", v)
	}
	wantContains(t, "attach output", out, "voice URL        (none) → POST "+txHook, "Calls to +14155550103 now reach Handset at "+txHook)
	var warning string
	for _, l := range strings.Split(errOut, "\n") {
		if strings.Contains(l, "now reach Handset too") {
			warning = l
		}
	}
	if !strings.HasPrefix(warning, "warning: ") || !strings.Contains(warning, "+14155550100, +14155550101 now reach Handset too") ||
		strings.Contains(warning, "+14155550102") || !strings.Contains(warning, txConnection) {
		t.Errorf("the warning should name the application's other numbers (not the one on another connection):\n%s", errOut)
	}

	// --json carries the same warning.
	out, _, err = twRun(t, runAttachNumber, environ, "+14155550103", "--carrier", "telnyx", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep attachReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !anyContains(rep.Warnings, "+14155550100, +14155550101 now reach Handset too") || rep.After.VoiceURL != txHook {
		t.Errorf("--json report %+v", rep)
	}

	// Alone on the application: nothing else moved, nothing to warn of.
	_, alone := txFake(t, telnyxsim.Options{Numbers: []telnyxsim.Number{{PhoneNumber: "+14155550100"}}}, "HANDSET_PUBLIC_URL="+txPublic)
	if _, errOut, err := twRun(t, runAttachNumber, alone, "+14155550100", "--carrier", "telnyx"); err != nil || strings.Contains(errOut, "Handset too") {
		t.Errorf("alone on the application: %v\n%s", err, errOut)
	}

	// The other numbers cannot be listed: the attach stands, and the warning says what it
	// could not tell (the first list is the number's own lookup).
	broken, env := txFake(t, telnyxsim.Options{Numbers: txNumbers()}, "HANDSET_PUBLIC_URL="+txPublic)
	broken.AddFault(telnyxsim.Fault{Method: http.MethodGet, Path: "/phone_numbers", After: 1, Status: http.StatusForbidden})
	if _, errOut, err := twRun(t, runAttachNumber, env, "+14155550103", "--carrier", "telnyx"); err != nil ||
		!strings.Contains(errOut, "warning: could not list the other numbers whose calls now reach Handset too") {
		t.Errorf("listing refused: %v\n%s", err, errOut)
	}
	if n := txNumber(t, broken, "+14155550103"); n.ConnectionID != txConnection {
		t.Errorf("the attach did not stand: %+v", n)
	}
}

// appliedAPIVersion is the webhook_api_version of the last application update the fake
// took.
func appliedAPIVersion(t *testing.T, fake *telnyxsim.Server) string {
	t.Helper()
	v := ""
	for _, q := range fake.Requests() {
		if q.Method != http.MethodPatch || !strings.HasPrefix(q.Path, "/v2/call_control_applications/") {
			continue
		}
		var body map[string]string
		if err := json.Unmarshal(q.Body, &body); err != nil {
			t.Fatalf("application update %s: %v", q.Body, err)
		}
		v = body["webhook_api_version"]
	}
	return v
}

func anyContains(list []string, want string) bool {
	for _, s := range list {
		if strings.Contains(s, want) {
			return true
		}
	}
	return false
}

// TestSetupAttachesATelnyxNumber: setup --carrier telnyx --number --url puts the number on
// the project's application pointed at the new Handset, and passes on the warning about
// the application's other numbers.
func TestSetupAttachesATelnyxNumber(t *testing.T) {
	fake, environ := txFake(t, telnyxsim.Options{Numbers: txNumbers(), WebhookURL: "https://old.example.com/hook"})
	env, _ := setupEnv(t, environ...)
	code := Main(t.Context(), []string{"setup", "--runtime", "openai", "--dir", "proj", "--no-check", "--carrier", "telnyx",
		"--number", "+1 415 555 0103", "--url", txPublic, "--yes"}, env)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	if n := txNumber(t, fake, "+14155550103"); n.ConnectionID != txConnection || fake.WebhookURL() != txHook {
		t.Errorf("the number is on %q and the application sends to %q; want %s and %s", n.ConnectionID, fake.WebhookURL(), txConnection, txHook)
	}
	wantContains(t, "setup", output(env), "+14155550100, +14155550101 now reach Handset too")
	if code := Main(t.Context(), []string{"setup", "--runtime", "openai", "--dir", "p2", "--carrier", "telnyx", "--url", "http://voice.example.com",
		"--number", "+14155550103", "--yes"}, env); code != 2 {
		t.Errorf("an http:// URL: exit %d, want 2", code)
	}
	// Checked offline, the project is told the Telnyx checks wait for the network.
	env, _ = setupEnv(t, environ...)
	if code := Main(t.Context(), []string{"setup", "--runtime", "openai", "--dir", "p3", "--carrier", "telnyx"}, env); code != 0 {
		t.Fatalf("exit %d:\n%s", code, output(env))
	}
	wantContains(t, "setup", output(env), "The network checks (agent runtime, speech keys, Telnyx, public URL) did not run")
}

// txDocRig is doctor's healthy rig with Telnyx as the carrier instead of Twilio: the
// application sends version 2 events to the public URL's webhook, and the number is on it.
func txDocRig(t *testing.T) (*docRig, *telnyxsim.Server) {
	t.Helper()
	r := newDocRig(t)
	fake, environ := txFake(t, telnyxsim.Options{WebhookURL: r.public + "/telnyx/webhook", Numbers: []telnyxsim.Number{
		{PhoneNumber: docNumber, ConnectionID: txConnection},
		{PhoneNumber: docNumberElse, ConnectionID: txOtherConnection},
	}})
	r.env = override(r.env, append(append(noTwilio, environ...), "HANDSET_PHONE_NUMBER="+docNumber))
	r.secrets = append(r.secrets, txAPIKey)
	return r, fake
}

// TestDoctorChecksATelnyxAccount: with Telnyx set up, doctor checks the key, the public
// key, the application, its webhook and the number, and does not speak of Twilio, which
// is not set up; each broken piece fails with a fix that names what to do.
func TestDoctorChecksATelnyxAccount(t *testing.T) {
	r, fake := txDocRig(t)
	code, rep := r.report(nil)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, dumpResults(rep.Results))
	}
	for _, want := range []struct{ name, detail string }{
		{"telnyx api key", "the key works"},
		{"telnyx public key", "Ed25519"},
		{"call control application", "webhook API v2"},
		{"telnyx webhook", "events go to " + r.public + "/telnyx/webhook"},
		{"phone number", docNumber},
	} {
		if res := findResult(t, rep, "carrier", want.name); res.Status != doctor.OK || !strings.Contains(res.Detail, want.detail) {
			t.Errorf("carrier/%s: %s %q, want ok saying %q", want.name, res.Status, res.Detail, want.detail)
		}
	}
	for _, res := range rep.Results {
		if res.Section == "carrier" && strings.Contains(strings.ToLower(res.Name+res.Detail), "twilio") {
			t.Errorf("doctor speaks of Twilio, which is not set up: %s %q", res.Name, res.Detail)
		}
	}

	attach := "handset attach-number --carrier telnyx " + docNumber
	r.expect([]string{"TELNYX_API_KEY=KEYwrong"}, 1, "carrier", "telnyx api key", doctor.Fail, "create an API key in the Telnyx Mission Control Portal")
	r.expect([]string{"TELNYX_PUBLIC_KEY=bm90IGEga2V5"}, 1, "carrier", "telnyx public key", doctor.Fail, "public key (not the API key)")
	r.expect([]string{"TELNYX_CONNECTION_ID=1999999999999999999"}, 1, "carrier", "call control application", doctor.Fail, "not a SIP connection")
	r.expect([]string{"HANDSET_PHONE_NUMBER=" + docNumberElse}, 1, "carrier", "phone number", doctor.Fail, "handset attach-number --carrier telnyx "+docNumberElse)

	fake.SetWebhookURL("https://old.example.com/hook")
	res := r.expect(nil, 1, "carrier", "telnyx webhook", doctor.Fail, attach+" (every number on the application follows)")
	if !strings.Contains(res.Detail, "https://old.example.com/hook") {
		t.Errorf("the webhook failure does not say where events go: %q", res.Detail)
	}

	fake.SetWebhookURL(r.public + "/telnyx/webhook")
	fake.SetWebhookAPIVersion("1")
	r.expect(nil, 1, "carrier", "call control application", doctor.Fail, attach+" (it sets version 2)")

	// The fix works: attach-number repairs both, and doctor is healthy again.
	fake.SetWebhookURL("https://old.example.com/hook")
	if _, errOut, err := twRun(t, runAttachNumber, r.env, docNumber, "--carrier", "telnyx"); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if code, rep := r.report(nil); code != 0 {
		t.Errorf("after attach-number, exit %d:\n%s", code, dumpResults(rep.Results))
	}
}
