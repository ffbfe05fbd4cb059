package twilio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/voice"
)

// restFake serves a fake Twilio account and returns a client of it.
func restFake(t *testing.T, o faketwilio.Options, tweak ...func(*RESTOptions)) (*faketwilio.Server, *REST) {
	t.Helper()
	fake := faketwilio.New(o)
	ts := httptest.NewServer(fake)
	t.Cleanup(ts.Close)
	ro := RESTOptions{BaseURL: ts.URL, AccountSID: fake.AccountSID(), AuthToken: fake.AuthToken()}
	for _, f := range tweak {
		f(&ro)
	}
	r, err := NewREST(ro)
	if err != nil {
		t.Fatal(err)
	}
	return fake, r
}

// providerErr asserts err is a Twilio *voice.ProviderError of kind and returns it.
func providerErr(t *testing.T, err error, kind voice.ErrorKind) *voice.ProviderError {
	t.Helper()
	var pe *voice.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *voice.ProviderError", err, err)
	}
	if pe.Provider != "twilio" || pe.Kind != kind {
		t.Fatalf("error %v: provider %q kind %v, want twilio %v", err, pe.Provider, pe.Kind, kind)
	}
	return pe
}

// apiErr asserts err carries Twilio's error code.
func apiErr(t *testing.T, err error, status, code int) *APIError {
	t.Helper()
	var ae *APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v carries no *APIError", err)
	}
	if ae.Status != status || ae.Code != code {
		t.Fatalf("APIError %+v, want status %d code %d", ae, status, code)
	}
	return ae
}

// noSecret fails when the token shows anywhere in err.
func noSecret(t *testing.T, err error, token string) {
	t.Helper()
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err)} {
		if strings.Contains(s, token) {
			t.Errorf("error shows the auth token: %s", s)
		}
	}
}

var (
	sidA = faketwilio.NumberSID("+14155550100")
	appB = "AP" + strings.Repeat("ab", 16)
	nums = []faketwilio.Number{
		{PhoneNumber: "+14155550100", VoiceURL: "https://old.example.com/voice"},
		{PhoneNumber: "+14155550101", VoiceApplicationSID: appB, VoiceURL: "https://ignored.example.com/"},
		{PhoneNumber: "+114155550100"}, // contains +14155550100's digits: partial filters match it too
		{PhoneNumber: "+442071838750", FriendlyName: "London"},
	}
)

func TestNewREST(t *testing.T) {
	const token = "s3cr3t-token-value"
	good := RESTOptions{AccountSID: faketwilio.DefaultAccountSID, AuthToken: token}
	r, err := NewREST(good)
	if err != nil {
		t.Fatal(err)
	}
	if r.BaseURL() != DefaultRESTURL || r.AccountSID() != faketwilio.DefaultAccountSID || r.timeout != DefaultRESTTimeout {
		t.Errorf("defaults: base %q sid %q timeout %v", r.BaseURL(), r.AccountSID(), r.timeout)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(format, r); strings.Contains(s, token) || !strings.Contains(s, r.AccountSID()) {
			t.Errorf("%s of a client: %s", format, s)
		}
	}
	for in, want := range map[string]string{
		"http://127.0.0.1:9/":                "http://127.0.0.1:9",
		"https://proxy.example/twilio/":      "https://proxy.example/twilio",
		"https://api.twilio.com/2010-04-01/": "https://api.twilio.com",
	} {
		o := good
		o.BaseURL = in
		if r, err := NewREST(o); err != nil || r.BaseURL() != want {
			t.Errorf("BaseURL %q: %v, %v; want %q", in, r, err, want)
		}
	}

	cases := []struct {
		name    string
		edit    func(*RESTOptions)
		setting string
	}{
		{"no sid", func(o *RESTOptions) { o.AccountSID = "" }, "TWILIO_ACCOUNT_SID"},
		{"api key sid", func(o *RESTOptions) { o.AccountSID = "SK" + strings.Repeat("a", 32) }, "TWILIO_ACCOUNT_SID"},
		{"short sid", func(o *RESTOptions) { o.AccountSID = "AC1234" }, "TWILIO_ACCOUNT_SID"},
		{"non-hex sid", func(o *RESTOptions) { o.AccountSID = "AC" + strings.Repeat("z", 32) }, "TWILIO_ACCOUNT_SID"},
		{"no token", func(o *RESTOptions) { o.AuthToken = "" }, "TWILIO_AUTH_TOKEN"},
		{"token with newline", func(o *RESTOptions) { o.AuthToken = token + "\n" }, "TWILIO_AUTH_TOKEN"},
		{"ftp url", func(o *RESTOptions) { o.BaseURL = "ftp://api.twilio.com" }, "HANDSET_TWILIO_API_URL"},
		{"relative url", func(o *RESTOptions) { o.BaseURL = "api.twilio.com" }, "HANDSET_TWILIO_API_URL"},
		{"url with password", func(o *RESTOptions) { o.BaseURL = "https://u:hunter2@proxy.example" }, "HANDSET_TWILIO_API_URL"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := good
			c.edit(&o)
			_, err := NewREST(o)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.setting) {
				t.Errorf("error %q does not name %s", err, c.setting)
			}
			noSecret(t, err, token)
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows the URL's password: %v", err)
			}
		})
	}
}

func TestAccount(t *testing.T) {
	fake, r := restFake(t, faketwilio.Options{FriendlyName: "Acme voice", Type: "Trial"})
	a, err := r.Account(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Account{SID: fake.AccountSID(), FriendlyName: "Acme voice", Status: "active", Type: "Trial"}
	if a != want {
		t.Errorf("Account = %+v, want %+v", a, want)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || !reqs[0].Authenticated || reqs[0].Method != http.MethodGet ||
		reqs[0].Path != "/2010-04-01/Accounts/"+fake.AccountSID()+".json" {
		t.Errorf("requests %+v", reqs)
	}
}

func TestNumbersFollowsEveryPage(t *testing.T) {
	var many []faketwilio.Number
	for i := range 7 {
		many = append(many, faketwilio.Number{PhoneNumber: fmt.Sprintf("+1415555020%d", i)})
	}
	fake, r := restFake(t, faketwilio.Options{Numbers: many, MaxPageSize: 3})
	got, err := r.Numbers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 {
		t.Fatalf("%d numbers, want 7: %+v", len(got), got)
	}
	for i, n := range got {
		if n.PhoneNumber != many[i].PhoneNumber || n.SID != faketwilio.NumberSID(many[i].PhoneNumber) ||
			n.VoiceMethod != "POST" || n.FriendlyName == "" {
			t.Errorf("number %d = %+v", i, n)
		}
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests for 7 numbers in pages of 3, want 3", len(reqs))
	}
	if ps := reqs[0].Query.Get("PageSize"); ps != "1000" {
		t.Errorf("first page asked PageSize=%q", ps)
	}
	for i, q := range reqs[1:] {
		if q.Query.Get("Page") != fmt.Sprint(i+1) || q.Query.Get("PageToken") == "" {
			t.Errorf("page %d request did not follow next_page_uri: %v", i+1, q.Query)
		}
	}

	// A failure on a later page fails the whole list.
	fake.AddFault(faketwilio.Fault{Path: "IncomingPhoneNumbers.json", Status: 503, After: 1, Times: 1})
	if got, err := r.Numbers(context.Background()); err == nil {
		t.Errorf("a failed second page went unnoticed: %d numbers", len(got))
	} else {
		providerErr(t, err, voice.KindTransient)
	}
	if q := fake.Requests()[4]; q.Status != 503 || q.Query.Get("Page") != "1" {
		t.Errorf("fault hit %+v, want the second page", q)
	}
}

func TestFindNumber(t *testing.T) {
	fake, r := restFake(t, faketwilio.Options{Numbers: nums, MaxPageSize: 1})
	for _, in := range []string{"+14155550100", "+1 (415) 555-0100", "415-555-0100", "1.415.555.0100", "0014155550100"} {
		n, err := r.FindNumber(context.Background(), in)
		if err != nil {
			t.Fatalf("FindNumber(%q): %v", in, err)
		}
		if n.PhoneNumber != "+14155550100" || n.SID != sidA || n.VoiceURL != "https://old.example.com/voice" {
			t.Errorf("FindNumber(%q) = %+v", in, n)
		}
	}
	n, err := r.FindNumber(context.Background(), "+14155550101")
	if err != nil || n.VoiceApplicationSID != appB {
		t.Errorf("FindNumber(+14155550101) = %+v, %v", n, err)
	}
	for _, q := range fake.Requests() {
		if q.Query.Get("PhoneNumber") == "" && q.Query.Get("PageToken") == "" {
			t.Errorf("a found number listed the whole account: %+v", q)
		}
	}

	_, err = r.FindNumber(context.Background(), "+19995550100")
	pe := providerErr(t, err, voice.KindBadInput)
	var nf *NumberNotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, ErrNumberNotFound) || pe.Op != "find number" {
		t.Fatalf("not-found error %v", err)
	}
	if nf.Number != "+19995550100" || len(nf.Have) != len(nums) || nf.Account != fake.AccountSID() {
		t.Errorf("NumberNotFoundError %+v", nf)
	}
	for _, want := range []string{"+19995550100", "+14155550100", "+14155550101", "+442071838750"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not list %s", err, want)
		}
	}

	_, empty := restFake(t, faketwilio.Options{})
	_, err = empty.FindNumber(context.Background(), "+14155550100")
	if !errors.Is(err, ErrNumberNotFound) || !strings.Contains(err.Error(), "no phone numbers") {
		t.Errorf("empty account: %v", err)
	}

	before := len(fake.Requests())
	for _, bad := range []string{"", "hello", "5550100", "+1 415 x", "+0123456789"} {
		_, err := r.FindNumber(context.Background(), bad)
		providerErr(t, err, voice.KindBadInput)
	}
	if len(fake.Requests()) != before {
		t.Error("malformed numbers were sent to Twilio")
	}
}

func TestSetVoiceURL(t *testing.T) {
	fake, r := restFake(t, faketwilio.Options{Numbers: nums})
	ctx := context.Background()
	sidB := faketwilio.NumberSID("+14155550101")
	const voiceURL, statusURL = "https://voice.example.com/twilio/voice", "https://voice.example.com/twilio/status"

	n, err := r.SetVoiceURL(ctx, sidB, voiceURL, statusURL)
	if err != nil {
		t.Fatal(err)
	}
	want := Number{SID: sidB, PhoneNumber: "+14155550101", FriendlyName: "(415) 555-0101",
		VoiceURL: voiceURL, VoiceMethod: "POST", StatusCallback: statusURL}
	if n != want {
		t.Errorf("SetVoiceURL = %+v, want %+v", n, want)
	}
	if held, _ := fake.Number(sidB); held.VoiceApplicationSID != "" || held.VoiceURL != voiceURL || held.StatusCallbackMethod != "POST" {
		t.Errorf("fake holds %+v", held)
	}
	reqs := fake.Requests()
	form := reqs[len(reqs)-1].Form
	if form.Get("VoiceUrl") != voiceURL || form.Get("VoiceMethod") != "POST" || form.Get("StatusCallback") != statusURL ||
		form.Get("StatusCallbackMethod") != "POST" {
		t.Errorf("form %v", form)
	}
	if v, ok := form["VoiceApplicationSid"]; !ok || len(v) != 1 || v[0] != "" {
		t.Errorf("VoiceApplicationSid not cleared: %v", form)
	}

	// Without a status callback the number keeps its own.
	if _, err := r.SetVoiceURL(ctx, sidB, "https://other.example.com/v", ""); err != nil {
		t.Fatal(err)
	}
	reqs = fake.Requests()
	if form := reqs[len(reqs)-1].Form; form.Has("StatusCallback") || form.Has("StatusCallbackMethod") {
		t.Errorf("empty status callback was sent: %v", form)
	}
	if held, _ := fake.Number(sidB); held.StatusCallback != statusURL {
		t.Errorf("status callback lost: %+v", held)
	}

	// Twilio's own refusals are bad input, with its code and message.
	_, err = r.SetVoiceURL(ctx, sidA, "/relative", "")
	providerErr(t, err, voice.KindBadInput)
	if ae := apiErr(t, err, 400, faketwilio.CodeInvalidURL); !strings.Contains(err.Error(), ae.Message) ||
		!strings.Contains(err.Error(), "21502") {
		t.Errorf("error %q lacks Twilio's code and message", err)
	}
	_, err = r.SetVoiceURL(ctx, "PN"+strings.Repeat("0", 32), voiceURL, "")
	providerErr(t, err, voice.KindBadInput)
	apiErr(t, err, 404, ErrorCodeNotFound)

	before := len(fake.Requests())
	_, err = r.SetVoiceURL(ctx, "+14155550100", voiceURL, "")
	providerErr(t, err, voice.KindBadInput)
	if len(fake.Requests()) != before {
		t.Error("a phone number was sent as a SID")
	}
}

func TestErrorClasses(t *testing.T) {
	// The default timeout: a tight one would turn a slow answer on a loaded machine into
	// KindTimeout, which is not the class under test.
	fake, r := restFake(t, faketwilio.Options{Numbers: nums})
	ctx := context.Background()
	token := fake.AuthToken()
	cases := []struct {
		status int
		kind   voice.ErrorKind
		code   int
	}{
		{401, voice.KindAuth, 20003},
		{403, voice.KindAuth, 20003},
		{404, voice.KindBadInput, 20404},
		{400, voice.KindBadInput, 400},
		{429, voice.KindQuota, 20429},
		{500, voice.KindTransient, 20500},
		{503, voice.KindTransient, 20500},
	}
	for _, c := range cases {
		fake.AddFault(faketwilio.Fault{Status: c.status, Times: 1})
		_, err := r.Account(ctx)
		pe := providerErr(t, err, c.kind)
		if pe.Status != c.status || pe.Op != "get account" {
			t.Errorf("%d: %+v", c.status, pe)
		}
		apiErr(t, err, c.status, c.code)
		noSecret(t, err, token)
	}

	// A proxy's HTML page instead of Twilio's JSON.
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprint(w, "<html><body><h1>502 Bad Gateway</h1></body></html>")
	}))
	defer html.Close()
	hr, _ := NewREST(RESTOptions{BaseURL: html.URL, AccountSID: fake.AccountSID(), AuthToken: token})
	_, err := hr.Numbers(ctx)
	providerErr(t, err, voice.KindTransient)
	if ae := apiErr(t, err, 502, 0); !strings.Contains(ae.Message, "Bad Gateway") {
		t.Errorf("message %q", ae.Message)
	}

	// JSON that is not the resource.
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"incoming_phone_numbers": "nope"`)
	}))
	defer garbage.Close()
	gr, _ := NewREST(RESTOptions{BaseURL: garbage.URL, AccountSID: fake.AccountSID(), AuthToken: token})
	_, err = gr.Numbers(ctx)
	providerErr(t, err, voice.KindProtocol)

	// A next_page_uri that leads back to itself.
	loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"incoming_phone_numbers": [], "next_page_uri": %q}`, r.URL.RequestURI())
	}))
	defer loop.Close()
	lr, _ := NewREST(RESTOptions{BaseURL: loop.URL, AccountSID: fake.AccountSID(), AuthToken: token})
	_, err = lr.Numbers(ctx)
	providerErr(t, err, voice.KindProtocol)

	// Nobody listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	dr, _ := NewREST(RESTOptions{BaseURL: dead, AccountSID: fake.AccountSID(), AuthToken: token})
	_, err = dr.Account(ctx)
	providerErr(t, err, voice.KindTransient)
	noSecret(t, err, token)
}

func TestWrongCredentials(t *testing.T) {
	fake, _ := restFake(t, faketwilio.Options{})
	ts := httptest.NewServer(fake)
	defer ts.Close()
	const wrong = "ffffffffffffffffffffffffffffffff"
	r, err := NewREST(RESTOptions{BaseURL: ts.URL, AccountSID: fake.AccountSID(), AuthToken: wrong})
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range []func() error{
		func() error { _, err := r.Account(context.Background()); return err },
		func() error { _, err := r.Numbers(context.Background()); return err },
		func() error { _, err := r.FindNumber(context.Background(), "+14155550100"); return err },
		func() error {
			_, err := r.SetVoiceURL(context.Background(), sidA, "https://x.example/v", "")
			return err
		},
	} {
		err := call()
		pe := providerErr(t, err, voice.KindAuth)
		if pe.Status != 401 {
			t.Errorf("status %d", pe.Status)
		}
		ae := apiErr(t, err, 401, ErrorCodeAuthenticate)
		if ae.Message != "Authenticate" || ae.MoreInfo != "https://www.twilio.com/docs/errors/20003" {
			t.Errorf("APIError %+v", ae)
		}
		noSecret(t, err, wrong)
		noSecret(t, err, fake.AuthToken())
	}
	for _, q := range fake.Requests() {
		if q.User != fake.AccountSID() || q.Authenticated {
			t.Errorf("request %+v", q)
		}
	}
}

func TestTimeouts(t *testing.T) {
	fake, r := restFake(t, faketwilio.Options{Numbers: nums, MaxPageSize: 1},
		func(o *RESTOptions) { o.Timeout = 100 * time.Millisecond })
	fake.AddFault(faketwilio.Fault{Delay: time.Minute})
	began := time.Now()
	_, err := r.Account(context.Background())
	pe := providerErr(t, err, voice.KindTimeout)
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("timed out after %v, want about 100ms", d)
	}
	if !pe.Retryable() || !strings.Contains(err.Error(), "100ms") {
		t.Errorf("timeout error %v", err)
	}
	noSecret(t, err, fake.AuthToken())

	// The timeout is per request: four pages of 600 ms each are fine under a 2 s timeout,
	// though together they take longer (the delays are lower bounds, so they always do).
	// Each page has 1.4 s to spare for a loaded machine.
	slow, rs := restFake(t, faketwilio.Options{Numbers: nums, MaxPageSize: 1},
		func(o *RESTOptions) { o.Timeout = 2 * time.Second })
	slow.AddFault(faketwilio.Fault{Path: "IncomingPhoneNumbers.json", Delay: 600 * time.Millisecond})
	if got, err := rs.Numbers(context.Background()); err != nil || len(got) != len(nums) {
		t.Errorf("slow pages: %d numbers, %v", len(got), err)
	}

	// The caller's own deadline and cancellation.
	fake.ClearFaults()
	fake.AddFault(faketwilio.Fault{Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = r.Numbers(ctx)
	providerErr(t, err, voice.KindTimeout)
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err = r.FindNumber(ctx, "+14155550100")
	providerErr(t, err, voice.KindCanceled)
}
