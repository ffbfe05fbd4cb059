package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/sim/faketwilio"
)

// twPublic is the HANDSET_PUBLIC_URL of the Twilio command tests.
const twPublic = "https://voice.example.com"

var twApp = "AP" + strings.Repeat("ab", 16)

// twNumbers is an account with one number of each kind.
var twNumbers = []faketwilio.Number{
	{PhoneNumber: "+14155550100", VoiceURL: twPublic + "/twilio/voice", StatusCallback: twPublic + "/twilio/status"},
	{PhoneNumber: "+14155550101", VoiceURL: "https://old.example.com/voice", VoiceApplicationSID: twApp},
	{PhoneNumber: "+14155550102", VoiceURL: "https://elsewhere.example.com/hook"},
	{PhoneNumber: "+14155550103"},
	{PhoneNumber: "+442071838750", VoiceURL: "HTTPS://Voice.Example.com:443/twilio/voice/", VoiceMethod: "GET", FriendlyName: "London"},
}

// twFake serves a fake Twilio account and returns it with an environment that reaches it.
func twFake(t *testing.T, o faketwilio.Options, extra ...string) (*faketwilio.Server, []string) {
	t.Helper()
	fake := faketwilio.New(o)
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	environ := []string{
		"TWILIO_ACCOUNT_SID=" + fake.AccountSID(),
		"TWILIO_AUTH_TOKEN=" + fake.AuthToken(),
		"HANDSET_TWILIO_API_URL=" + ts.URL,
	}
	return fake, append(environ, extra...)
}

// twRun runs one command function in-process.
func twRun(t *testing.T, run func(context.Context, Env, []string) error, environ []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := Env{Stdout: &out, Stderr: &errOut, Environ: environ, WorkDir: t.TempDir()}
	err = run(t.Context(), env, args)
	return out.String(), errOut.String(), err
}

// wantContains fails for each want missing from s.
func wantContains(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// numberBlock is the part of the numbers listing about one number.
func numberBlock(t *testing.T, out, number string) string {
	t.Helper()
	for _, block := range strings.Split(out, "\n\n") {
		if strings.Contains(block, " "+number+" ") {
			return block
		}
	}
	t.Fatalf("no block for %s in:\n%s", number, out)
	return ""
}

func TestNumbersMarksWhereCallsGo(t *testing.T) {
	_, environ := twFake(t, faketwilio.Options{Numbers: twNumbers, FriendlyName: "Acme"},
		"HANDSET_PUBLIC_URL="+twPublic+"/", "HANDSET_PHONE_NUMBER=+14155550102")
	out, _, err := twRun(t, runNumbers, environ)
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "header", out, `Twilio account "Acme" (`+faketwilio.DefaultAccountSID+", Full, active): 5 numbers",
		"Handset's voice URL: "+twPublic+"/twilio/voice")
	wantContains(t, "+14155550100", numberBlock(t, out, "+14155550100"),
		"voice URL: POST "+twPublic+"/twilio/voice", "points at Handset", "status callback: "+twPublic+"/twilio/status")
	wantContains(t, "+14155550101", numberBlock(t, out, "+14155550101"),
		"TwiML app: "+twApp, "uses a TwiML app "+twApp+", which overrides the voice URL")
	b := numberBlock(t, out, "+14155550102")
	wantContains(t, "+14155550102", b, "* +14155550102", "[HANDSET_PHONE_NUMBER]",
		"points elsewhere: https://elsewhere.example.com/hook")
	wantContains(t, "+14155550103", numberBlock(t, out, "+14155550103"), "voice URL: (none)", "has no voice URL")
	wantContains(t, "+442071838750", numberBlock(t, out, "+442071838750"), "London", "with GET; Handset answers POST only")
	wantContains(t, "hints", out, "run `handset attach-number +14155550102` to send its calls to Handset")
	if strings.Count(out, "[HANDSET_PHONE_NUMBER]") != 1 {
		t.Errorf("HANDSET_PHONE_NUMBER marked %d times", strings.Count(out, "[HANDSET_PHONE_NUMBER]"))
	}

	out, _, err = twRun(t, runNumbers, environ, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Account struct {
			SID, Status, Type string
			FriendlyName      string `json:"friendly_name"`
		} `json:"account"`
		HandsetVoiceURL  string `json:"handset_voice_url"`
		PhoneNumber      string `json:"phone_number"`
		PhoneNumberFound bool   `json:"phone_number_found"`
		Numbers          []struct {
			PhoneNumber   string `json:"phone_number"`
			SID           string `json:"sid"`
			VoiceURL      string `json:"voice_url"`
			VoiceApp      string `json:"voice_application_sid"`
			IsPhoneNumber bool   `json:"is_handset_phone_number"`
			Voice         string `json:"voice"`
			VoiceNote     string `json:"voice_note"`
		} `json:"numbers"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	if rep.Account.SID != faketwilio.DefaultAccountSID || rep.Account.FriendlyName != "Acme" ||
		rep.HandsetVoiceURL != twPublic+"/twilio/voice" || rep.PhoneNumber != "+14155550102" || !rep.PhoneNumberFound {
		t.Errorf("report %+v", rep)
	}
	states := map[string]string{}
	for _, n := range rep.Numbers {
		states[n.PhoneNumber] = n.Voice
		if n.IsPhoneNumber != (n.PhoneNumber == "+14155550102") || n.SID == "" || n.VoiceNote == "" {
			t.Errorf("number %+v", n)
		}
	}
	want := map[string]string{"+14155550100": "handset", "+14155550101": "twiml_app", "+14155550102": "elsewhere",
		"+14155550103": "none", "+442071838750": "handset_get"}
	if fmt.Sprint(states) != fmt.Sprint(want) {
		t.Errorf("states %v, want %v", states, want)
	}
	if strings.Contains(out, faketwilio.DefaultAuthToken) {
		t.Error("--json shows the auth token")
	}
}

func TestNumbersPagesAndHints(t *testing.T) {
	var many []faketwilio.Number
	for i := range 5 {
		many = append(many, faketwilio.Number{PhoneNumber: fmt.Sprintf("+1415555030%d", i),
			VoiceURL: "https://h.example.com/twilio/voice"})
	}
	_, environ := twFake(t, faketwilio.Options{Numbers: many, MaxPageSize: 2}, "HANDSET_PHONE_NUMBER=+19995550100")
	out, _, err := twRun(t, runNumbers, environ)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range many {
		wantContains(t, "listing", numberBlock(t, out, n.PhoneNumber),
			"looks like a Handset voice URL; set HANDSET_PUBLIC_URL to check it is this Handset")
	}
	wantContains(t, "hints", out, "HANDSET_PUBLIC_URL is not set",
		"HANDSET_PHONE_NUMBER +19995550100 is not a number of this account")

	_, environ = twFake(t, faketwilio.Options{Status: "suspended"})
	out, _, err = twRun(t, runNumbers, environ)
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "empty account", out, "0 numbers", "has no phone numbers: buy one", "the account is suspended")
}

func TestNumbersWrongToken(t *testing.T) {
	fake, environ := twFake(t, faketwilio.Options{Numbers: twNumbers})
	const wrong = "0badc0ffee0badc0ffee0badc0ffee00"
	environ = override(environ, []string{"TWILIO_AUTH_TOKEN=" + wrong})
	_, _, err := twRun(t, runNumbers, environ)
	if err == nil {
		t.Fatal("a wrong token listed the numbers")
	}
	wantContains(t, "error", err.Error(), "auth token (TWILIO_AUTH_TOKEN", "was rejected", "console.twilio.com",
		fake.AccountSID(), "20003")
	if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), fake.AuthToken()) {
		t.Errorf("error shows a token: %v", err)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		t.Error("a rejected token is not a usage error")
	}
}

func TestNumbersWithoutCredentials(t *testing.T) {
	cases := map[string]struct {
		environ []string
		wants   []string
	}{
		"neither":  {nil, []string{"TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "console.twilio.com"}},
		"no token": {[]string{"TWILIO_ACCOUNT_SID=" + faketwilio.DefaultAccountSID}, []string{"TWILIO_AUTH_TOKEN"}},
		"bad sid":  {[]string{"TWILIO_ACCOUNT_SID=AC123", "TWILIO_AUTH_TOKEN=x"}, []string{"TWILIO_ACCOUNT_SID", "AC123", "32 hexadecimal"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := twRun(t, runNumbers, c.environ)
			if err == nil {
				t.Fatal("ran without credentials")
			}
			wantContains(t, "error", err.Error(), c.wants...)
		})
	}
}

func TestNumbersUsage(t *testing.T) {
	_, _, err := twRun(t, runNumbers, nil, "+14155550100")
	var ue *usageError
	if !errors.As(err, &ue) {
		t.Fatalf("extra argument: %v, want a usage error", err)
	}
	_, _, err = twRun(t, runNumbers, nil, "--nope")
	if !errors.As(err, &ue) {
		t.Fatalf("unknown flag: %v, want a usage error", err)
	}
}
