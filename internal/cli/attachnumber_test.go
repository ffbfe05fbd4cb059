package cli

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/carrier"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/sim/faketwilio"
)

func TestAttachNumberClearsTheTwiMLAppAndNumbersAgrees(t *testing.T) {
	fake, environ := twFake(t, faketwilio.Options{Numbers: twNumbers}, "HANDSET_PUBLIC_URL="+twPublic)
	const number = "+14155550101" // has a TwiML app and an old voice URL
	sid := faketwilio.NumberSID(number)

	// Flags may follow the number, and the number may be written loosely.
	out, stderr, err := twRun(t, runAttachNumber, environ, "+1 (415) 555-0101")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	wantContains(t, "output", out,
		number+" ("+sid+", account "+fake.AccountSID()+"):",
		"voice URL        POST https://old.example.com/voice → POST "+twPublic+"/twilio/voice",
		"TwiML app        "+twApp+" → (cleared)",
		"status callback  (none) → "+twPublic+"/twilio/status",
		"Calls to "+number+" now reach Handset at "+twPublic+"/twilio/voice.",
		"note: set HANDSET_PHONE_NUMBER="+number)
	if stderr != "" {
		t.Errorf("warnings for a good https URL: %s", stderr)
	}

	n, _ := fake.Number(number)
	if n.VoiceURL != twPublic+"/twilio/voice" || n.VoiceMethod != "POST" || n.VoiceApplicationSID != "" ||
		n.StatusCallback != twPublic+"/twilio/status" || n.StatusCallbackMethod != "POST" {
		t.Errorf("the fake holds %+v", n)
	}
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	if last.Method != "POST" || !strings.HasSuffix(last.Path, "/IncomingPhoneNumbers/"+sid+".json") {
		t.Fatalf("last request %+v", last)
	}
	if v, ok := last.Form["VoiceApplicationSid"]; !ok || v[0] != "" {
		t.Errorf("VoiceApplicationSid not cleared in %v", last.Form)
	}
	for _, q := range reqs {
		if !q.Authenticated || q.Status != 200 {
			t.Errorf("request %+v", q)
		}
	}

	out, _, err = twRun(t, runNumbers, environ)
	if err != nil {
		t.Fatal(err)
	}
	b := numberBlock(t, out, number)
	wantContains(t, number, b, "points at Handset", "voice URL: POST "+twPublic+"/twilio/voice")
	if strings.Contains(b, "TwiML app") {
		t.Errorf("the TwiML app is still listed:\n%s", b)
	}

	// Again: nothing left to change.
	out, _, err = twRun(t, runAttachNumber, environ, number)
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "second attach", out, "voice URL        POST "+twPublic+"/twilio/voice (unchanged)")
}

func TestAttachNumberFlagsAndJSON(t *testing.T) {
	fake, environ := twFake(t, faketwilio.Options{Numbers: twNumbers}, "HANDSET_PHONE_NUMBER=+14155550100")
	const hook = "https://tunnel.example.net/twilio/voice"
	out, stderr, err := twRun(t, runAttachNumber, environ, "+14155550102", "--url", hook,
		"--status-callback", "https://tunnel.example.net/twilio/status", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep struct {
		PhoneNumber string `json:"phone_number"`
		SID         string `json:"sid"`
		Before      struct {
			VoiceURL string `json:"voice_url"`
		} `json:"before"`
		After struct {
			VoiceURL       string `json:"voice_url"`
			VoiceMethod    string `json:"voice_method"`
			StatusCallback string `json:"status_callback"`
		} `json:"after"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if rep.PhoneNumber != "+14155550102" || rep.SID != faketwilio.NumberSID("+14155550102") ||
		rep.Before.VoiceURL != "https://elsewhere.example.com/hook" || rep.After.VoiceURL != hook ||
		rep.After.VoiceMethod != "POST" || rep.After.StatusCallback != "https://tunnel.example.net/twilio/status" {
		t.Errorf("report %+v", rep)
	}
	notes := strings.Join(rep.Notes, "\n")
	wantContains(t, "notes", notes, "HANDSET_PHONE_NUMBER is +14155550100",
		"set HANDSET_PUBLIC_URL=https://tunnel.example.net so Handset checks Twilio's signatures")

	// Without HANDSET_PUBLIC_URL or --status-callback the status callback is left alone.
	if _, _, err := twRun(t, runAttachNumber, environ, "--url", hook, "+14155550100"); err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if form := reqs[len(reqs)-1].Form; form.Has("StatusCallback") {
		t.Errorf("status callback sent: %v", form)
	}
	if n, _ := fake.Number("+14155550100"); n.StatusCallback != twPublic+"/twilio/status" || n.VoiceURL != hook {
		t.Errorf("number %+v", n)
	}
}

func TestAttachNumberLoopbackURL(t *testing.T) {
	fake, environ := twFake(t, faketwilio.Options{Numbers: twNumbers})
	out, stderr, err := twRun(t, runAttachNumber, environ, "+14155550103", "--url", "http://127.0.0.1:8080/twilio/voice")
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "warnings", stderr, "warning: Twilio cannot reach http://127.0.0.1:8080/twilio/voice", "is this machine")
	wantContains(t, "output", out, "(none) → POST http://127.0.0.1:8080/twilio/voice")
	if n, _ := fake.Number("+14155550103"); n.VoiceURL != "http://127.0.0.1:8080/twilio/voice" {
		t.Errorf("number %+v", n)
	}
	_, stderr, err = twRun(t, runAttachNumber, environ, "+14155550103", "--url", "https://h.example.com/voice")
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, "warnings", stderr, "Handset answers Twilio at /twilio/voice")
}

func TestAttachNumberUnknownNumber(t *testing.T) {
	fake, environ := twFake(t, faketwilio.Options{Numbers: twNumbers}, "HANDSET_PUBLIC_URL="+twPublic)
	_, _, err := twRun(t, runAttachNumber, environ, "+19995550100")
	if err == nil {
		t.Fatal("attached a number the account does not have")
	}
	wantContains(t, "error", err.Error(), "+19995550100 is not a phone number of Twilio account "+fake.AccountSID(),
		"+14155550100", "+14155550101", "+14155550102", "+14155550103", "+442071838750", "handset numbers")
	for _, q := range fake.Requests() {
		if q.Method != "GET" {
			t.Errorf("an unknown number changed something: %+v", q)
		}
	}
	var ue *usageError
	if errors.As(err, &ue) {
		t.Error("an unknown number is not a usage error")
	}
}

func TestAttachNumberWrongToken(t *testing.T) {
	fake, environ := twFake(t, faketwilio.Options{Numbers: twNumbers}, "HANDSET_PUBLIC_URL="+twPublic)
	const wrong = "0badc0ffee0badc0ffee0badc0ffee00"
	_, _, err := twRun(t, runAttachNumber, override(environ, []string{"TWILIO_AUTH_TOKEN=" + wrong}), "+14155550100")
	if err == nil {
		t.Fatal("a wrong token attached the number")
	}
	wantContains(t, "error", err.Error(), "auth token (TWILIO_AUTH_TOKEN, from environment) was rejected",
		"console.twilio.com", "Auth Token")
	if strings.Contains(err.Error(), wrong) || strings.Contains(err.Error(), fake.AuthToken()) {
		t.Errorf("error shows a token: %v", err)
	}
	if n, _ := fake.Number("+14155550100"); n.VoiceURL != twNumbers[0].VoiceURL {
		t.Error("the number changed")
	}
}

func TestAttachNumberUsageErrors(t *testing.T) {
	_, environ := twFake(t, faketwilio.Options{Numbers: twNumbers})
	withPublic := append(environ[:len(environ):len(environ)], "HANDSET_PUBLIC_URL="+twPublic)
	cases := []struct {
		name    string
		environ []string
		args    []string
		wants   []string
	}{
		{"no number", withPublic, nil, []string{"missing NUMBER"}},
		{"two numbers", withPublic, []string{"+14155550100", "+14155550101"}, []string{"one NUMBER at a time"}},
		{"not a number", withPublic, []string{"call-me"}, []string{"not a phone number", "E.164"}},
		{"no url", environ, []string{"+14155550100"}, []string{"pass --url, or set HANDSET_PUBLIC_URL", "HANDSET_PUBLIC_URL to the public https address"}},
		{"relative url", environ, []string{"+14155550100", "--url", "/twilio/voice"}, []string{"not an absolute http(s) URL"}},
		{"ftp url", environ, []string{"+14155550100", "--url", "ftp://h.example.com/twilio/voice"}, []string{"not an absolute http(s) URL"}},
		{"public http url", environ, []string{"+14155550100", "--url", "http://voice.example.com/twilio/voice"},
			[]string{"refusing --url http://voice.example.com/twilio/voice", "unencrypted", "use https://"}},
		{"http status callback", withPublic, []string{"--status-callback", "http://voice.example.com/twilio/status", "+14155550100"},
			[]string{"refusing --status-callback"}},
		{"credentials in url", environ, []string{"+14155550100", "--url", "https://u:p4ss@h.example.com/twilio/voice"},
			[]string{"user name or password"}},
		{"unknown flag", withPublic, []string{"+14155550100", "--nope"}, []string{"nope"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := twRun(t, runAttachNumber, c.environ, c.args...)
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v (%T), want a usage error", err, err)
			}
			wantContains(t, "message and hint", ue.msg+"\nhint: "+ue.hint, c.wants...)
			if strings.Contains(ue.msg+ue.hint, "p4ss") {
				t.Errorf("usage error shows the URL's password: %s", ue.msg)
			}
		})
	}
	// A usage error exits 2 through Main's handling; check the hint of the missing number.
	_, _, err := twRun(t, runAttachNumber, withPublic)
	var ue *usageError
	if errors.As(err, &ue) && !strings.Contains(ue.hint, "handset attach-number +14155550100") {
		t.Errorf("hint %q has no example", ue.hint)
	}
}

// The number commands open the carrier the settings give an account; without one, its
// error names the settings to set.
func TestAttachNumberCarrierFromConfig(t *testing.T) {
	open := func(cfg *config.Config) (carrier.Carrier, error) { return chosenCarrier(cfg).Numbers.Open(cfg) }
	cfg := config.Default()
	if _, err := open(cfg); err == nil || !strings.Contains(err.Error(), "TWILIO_ACCOUNT_SID") ||
		!strings.Contains(err.Error(), "TWILIO_AUTH_TOKEN") {
		t.Errorf("no credentials: %v", err)
	}
	cfg.Twilio.AccountSID = faketwilio.DefaultAccountSID
	if _, err := open(cfg); err == nil || !strings.Contains(err.Error(), "TWILIO_AUTH_TOKEN is not set") {
		t.Errorf("no token: %v", err)
	}
	cfg.Twilio.AuthToken = config.NewSecret("tok")
	cfg.Twilio.AccountSID = ""
	if _, err := open(cfg); err == nil || !strings.Contains(err.Error(), "TWILIO_ACCOUNT_SID is not set") {
		t.Errorf("no sid: %v", err)
	}
	cfg.Twilio.AccountSID = faketwilio.DefaultAccountSID
	c, err := open(cfg)
	if err != nil || c.Name() != "twilio" || chosenCarrier(cfg).Numbers.AccountID(cfg) != faketwilio.DefaultAccountSID {
		t.Errorf("good config: %v, %v", c, err)
	}
}
