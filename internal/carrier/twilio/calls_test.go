package twilio

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/sim/faketwilio"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/voice"
)

const (
	callSID = "CA0123456789abcdef0123456789abcdef"
	// callBody is a call resource as Twilio answers it.
	callBody = `{"sid":"` + callSID + `","account_sid":"` + faketwilio.DefaultAccountSID + `",` +
		`"to":"+14155550199","from":"+14155550100","status":"completed","direction":"outbound-api",` +
		`"answered_by":"machine_end_beep","parent_call_sid":null,"duration":"42",` +
		`"date_created":"Tue, 05 May 2026 10:00:00 +0000","start_time":"Tue, 05 May 2026 10:00:01 +0000",` +
		`"end_time":"Tue, 05 May 2026 10:00:45 +0000","price":null}`
)

// seen is one request the canned server got.
type seen struct {
	method, path, user, pass, contentType string
	form                                  url.Values
}

// canned serves status and body to every request, records them, and returns a client.
func canned(t *testing.T, status int, body string) (*REST, func() []seen) {
	t.Helper()
	var mu sync.Mutex
	var got []seen
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		user, pass, _ := r.BasicAuth()
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, user, pass, r.Header.Get("Content-Type"), r.PostForm})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	r, err := NewREST(RESTOptions{BaseURL: ts.URL, AccountSID: faketwilio.DefaultAccountSID, AuthToken: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	return r, func() []seen {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func TestCreateCallSendsTwiliosForm(t *testing.T) {
	r, got := canned(t, http.StatusCreated, strings.Replace(callBody, `"duration":"42"`, `"duration":null`, 1))
	info, err := r.CreateCall(context.Background(), CallRequest{
		To: "+1 (415) 555-0199", From: "4155550100",
		URL:              "https://voice.example.com/twilio/voice?handset_call=c1",
		StatusCallback:   "https://voice.example.com/twilio/status?handset_call=c1",
		MachineDetection: MachineDetectionMessageEnd,
		Timeout:          29500 * time.Millisecond, TimeLimit: 10 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	q := reqs[0]
	if q.method != http.MethodPost || q.path != "/2010-04-01/Accounts/"+faketwilio.DefaultAccountSID+"/Calls.json" ||
		q.user != faketwilio.DefaultAccountSID || q.pass != "tok" || q.contentType != "application/x-www-form-urlencoded" {
		t.Errorf("request %+v", q)
	}
	want := url.Values{
		"To": {"+14155550199"}, "From": {"+14155550100"},
		"Url": {"https://voice.example.com/twilio/voice?handset_call=c1"}, "Method": {"POST"},
		"StatusCallback":       {"https://voice.example.com/twilio/status?handset_call=c1"},
		"StatusCallbackMethod": {"POST"},
		"StatusCallbackEvent":  {"initiated", "ringing", "answered", "completed"},
		"MachineDetection":     {"DetectMessageEnd"}, "Timeout": {"30"}, "TimeLimit": {"600"},
	}
	if q.form.Encode() != want.Encode() {
		t.Errorf("form\n got %v\nwant %v", q.form, want)
	}
	wantInfo := CallInfo{SID: callSID, AccountSID: faketwilio.DefaultAccountSID, To: "+14155550199", From: "+14155550100",
		Status: "completed", Direction: "outbound-api", AnsweredBy: "machine_end_beep",
		DateCreated: time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC), StartTime: time.Date(2026, 5, 5, 10, 0, 1, 0, time.UTC),
		EndTime: time.Date(2026, 5, 5, 10, 0, 45, 0, time.UTC)}
	if !info.DateCreated.Equal(wantInfo.DateCreated) || !info.StartTime.Equal(wantInfo.StartTime) || !info.EndTime.Equal(wantInfo.EndTime) {
		t.Errorf("times %v %v %v", info.DateCreated, info.StartTime, info.EndTime)
	}
	info.DateCreated, info.StartTime, info.EndTime = wantInfo.DateCreated, wantInfo.StartTime, wantInfo.EndTime
	if info != wantInfo {
		t.Errorf("info\n got %+v\nwant %+v", info, wantInfo)
	}

	// Inline TwiML, no callback, no detection: only what was asked is sent.
	if _, err := r.CreateCall(context.Background(), CallRequest{To: "+442071838750", From: "+14155550100",
		Twiml: "<Response><Hangup/></Response>"}); err != nil {
		t.Fatal(err)
	}
	want = url.Values{"To": {"+442071838750"}, "From": {"+14155550100"}, "Twiml": {"<Response><Hangup/></Response>"}}
	if f := got()[1].form; f.Encode() != want.Encode() {
		t.Errorf("minimal form %v", f)
	}
}

func TestCreateCallRefusesBadInput(t *testing.T) {
	r, got := canned(t, http.StatusCreated, callBody)
	good := CallRequest{To: "+14155550199", From: "+14155550100", URL: "https://h.example.com/twilio/voice"}
	cases := map[string]func(*CallRequest){
		"bad To":               func(c *CallRequest) { c.To = "call me" },
		"no country":           func(c *CallRequest) { c.To = "5550199" },
		"bad From":             func(c *CallRequest) { c.From = "" },
		"relative URL":         func(c *CallRequest) { c.URL = "/twilio/voice" },
		"ws URL":               func(c *CallRequest) { c.URL = "wss://h.example.com/twilio/voice" },
		"no TwiML":             func(c *CallRequest) { c.URL = "" },
		"URL and Twiml":        func(c *CallRequest) { c.Twiml = "<Response/>" },
		"bad StatusCallback":   func(c *CallRequest) { c.StatusCallback = "h.example.com/status" },
		"lowercase detection":  func(c *CallRequest) { c.MachineDetection = "enable" },
		"unknown detection":    func(c *CallRequest) { c.MachineDetection = "Async" },
		"negative Timeout":     func(c *CallRequest) { c.Timeout = -time.Second },
		"negative TimeLimit":   func(c *CallRequest) { c.TimeLimit = -time.Second },
		"blank Twiml, no URL":  func(c *CallRequest) { c.URL, c.Twiml = "", "  " },
		"URL without any host": func(c *CallRequest) { c.URL = "https:///voice" },
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			req := good
			edit(&req)
			_, err := r.CreateCall(context.Background(), req)
			providerErr(t, err, voice.KindBadInput)
		})
	}
	if n := len(got()); n != 0 {
		t.Errorf("%d requests sent for bad input", n)
	}
}

func TestFetchCall(t *testing.T) {
	r, got := canned(t, http.StatusOK, strings.Replace(callBody, `"duration":"42"`, `"duration":42`, 1))
	info, err := r.FetchCall(context.Background(), callSID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Duration != 42*time.Second || info.SID != callSID || !CallEnded(info.Status) {
		t.Errorf("info %+v", info)
	}
	if q := got()[0]; q.method != http.MethodGet || q.path != "/2010-04-01/Accounts/"+faketwilio.DefaultAccountSID+"/Calls/"+callSID+".json" {
		t.Errorf("request %+v", q)
	}
	for _, bad := range []string{"", "CA123", "PN0123456789abcdef0123456789abcdef", "CA0123456789abcdef0123456789abcdeg"} {
		_, err := r.FetchCall(context.Background(), bad)
		providerErr(t, err, voice.KindBadInput)
	}
	if n := len(got()); n != 1 {
		t.Errorf("%d requests, want only the good one", n)
	}

	// Answers that are not a call are protocol errors.
	for name, body := range map[string]string{
		"bad time":     strings.Replace(callBody, "Tue, 05 May 2026 10:00:01 +0000", "2026-05-05T10:00:01Z", 1),
		"bad duration": strings.Replace(callBody, `"42"`, `"4.2"`, 1),
		"no sid":       `{"status":"queued"}`,
		"not JSON":     `<Response/>`,
	} {
		r, _ := canned(t, http.StatusOK, body)
		if _, err := r.FetchCall(context.Background(), callSID); err == nil {
			t.Errorf("%s: accepted", name)
		} else {
			providerErr(t, err, voice.KindProtocol)
		}
	}
}

func TestRedirectAndHangupCall(t *testing.T) {
	r, got := canned(t, http.StatusOK, strings.Replace(callBody, `"status":"completed"`, `"status":"in-progress"`, 1))
	twiml := `<Response><Dial>+14155550142</Dial></Response>`
	if info, err := r.RedirectCall(context.Background(), callSID, twiml); err != nil || info.Status != "in-progress" {
		t.Fatalf("redirect: %+v, %v", info, err)
	}
	if err := r.HangupCall(context.Background(), callSID); err != nil {
		t.Fatal(err)
	}
	reqs := got()
	path := "/2010-04-01/Accounts/" + faketwilio.DefaultAccountSID + "/Calls/" + callSID + ".json"
	if len(reqs) != 2 || reqs[0].path != path || reqs[0].form.Encode() != (url.Values{"Twiml": {twiml}}).Encode() ||
		reqs[1].path != path || reqs[1].form.Encode() != "Status=completed" {
		t.Errorf("requests %+v", reqs)
	}
	_, err := r.RedirectCall(context.Background(), callSID, " ")
	providerErr(t, err, voice.KindBadInput)
	providerErr(t, r.HangupCall(context.Background(), "CA1"), voice.KindBadInput)

	body := func(code int) string {
		return `{"code":` + strconv.Itoa(code) + `,"message":"m","more_info":"https://www.twilio.com/docs/errors/` + strconv.Itoa(code) + `"}`
	}
	// A call that is already over counts as hung up.
	for _, c := range []struct{ status, code int }{{404, 20404}, {400, 21220}, {404, 0}} {
		r, _ := canned(t, c.status, body(c.code))
		if err := r.HangupCall(context.Background(), callSID); err != nil {
			t.Errorf("hangup answered %d/%d: %v", c.status, c.code, err)
		}
	}
	// Anything else is an error of its class.
	for _, c := range []struct {
		status, code int
		kind         voice.ErrorKind
	}{{400, 20001, voice.KindBadInput}, {401, 20003, voice.KindAuth}, {429, 20429, voice.KindQuota}, {503, 20500, voice.KindTransient}} {
		r, _ := canned(t, c.status, body(c.code))
		err := r.HangupCall(context.Background(), callSID)
		providerErr(t, err, c.kind)
		apiErr(t, err, c.status, c.code)
	}
	r, _ = canned(t, 400, body(21220))
	_, err = r.RedirectCall(context.Background(), callSID, twiml)
	apiErr(t, err, 400, ErrorCodeCallNotInProgress)
}

func TestCallEnded(t *testing.T) {
	for status, want := range map[string]bool{
		"queued": false, "initiated": false, "ringing": false, "in-progress": false,
		"completed": true, "busy": true, "failed": true, "no-answer": true, "canceled": true, "": false,
	} {
		if CallEnded(status) != want {
			t.Errorf("CallEnded(%q) = %v", status, !want)
		}
	}
}

// handsetForFake serves the carrier with an Admit that runs each leg until the stream
// ends, and a status endpoint; it returns the server and the legs as they are admitted.
func handsetForFake(t *testing.T, token string) (*httptest.Server, <-chan voice.LegInfo) {
	t.Helper()
	legs := make(chan voice.LegInfo, 16)
	mux := http.NewServeMux()
	New(Options{AuthToken: token, Memory: newMapMemory(), Admit: func(l voice.Leg) (<-chan struct{}, error) {
		done := make(chan struct{})
		go func() { defer close(done); _ = l.Run(context.Background(), discard{}) }()
		legs <- l.Info()
		return done, nil
	}}).Register(mux)
	mux.HandleFunc("/cb", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts, legs
}

type discard struct{}

func (discard) Audio([]byte)    {}
func (discard) Mark(string)     {}
func (discard) DTMF(string)     {}
func (discard) Malformed(error) {}

func TestOutboundCallsThroughTheFake(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	numbers := []faketwilio.Number{{PhoneNumber: "+14155550100"}}
	h, legs := handsetForFake(t, faketwilio.DefaultAuthToken)
	hold := func(ctx context.Context, _ *twiliocaller.Call) error { <-ctx.Done(); return nil }
	fake, r := restFake(t, faketwilio.Options{Numbers: numbers, HTTPClient: h.Client(), InsecureStreamURL: true,
		Answer: func(to string) faketwilio.Answer {
			if to == "+14155550188" {
				return faketwilio.Answer{Outcome: faketwilio.OutcomeBusy}
			}
			return faketwilio.Answer{AnsweredBy: "machine_start", Talk: hold}
		}})
	t.Cleanup(fake.Close)

	req := CallRequest{To: "+14155550199", From: "+1 415 555 0100", URL: h.URL + "/twilio/voice?tenant=acme",
		StatusCallback: h.URL + "/cb", MachineDetection: MachineDetectionEnable}
	info, err := r.CreateCall(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != "queued" || info.Direction != "outbound-api" || !validSID(info.SID, "CA") || info.Duration != 0 {
		t.Errorf("created %+v", info)
	}
	leg := <-legs
	if leg.CarrierRef != info.SID || leg.Direction != voice.Outbound {
		t.Errorf("leg %+v", leg)
	}
	live, err := r.FetchCall(ctx, info.SID)
	if err != nil || live.Status != "in-progress" || live.AnsweredBy != "machine_start" || live.StartTime.IsZero() {
		t.Errorf("live call %+v, %v", live, err)
	}
	if _, err := r.RedirectCall(ctx, info.SID, `<Response><Dial>+14155550142</Dial></Response>`); err != nil {
		t.Fatal(err)
	}
	c, err := fake.WaitDone(ctx, info.SID)
	if err != nil || c.TransferredTo != "+14155550142" || c.Streams != 1 {
		t.Errorf("after the redirect %+v, %v", c, err)
	}
	over, err := r.FetchCall(ctx, info.SID)
	if err != nil || over.Status != "completed" || over.EndTime.IsZero() {
		t.Errorf("ended call %+v, %v", over, err)
	}
	if err := r.HangupCall(ctx, info.SID); err != nil {
		t.Errorf("hanging up an ended call: %v", err)
	}
	_, err = r.RedirectCall(ctx, info.SID, `<Response><Hangup/></Response>`)
	providerErr(t, err, voice.KindBadInput)
	apiErr(t, err, 400, ErrorCodeCallNotInProgress)

	// A live call hung up through the API ends its stream.
	second, err := r.CreateCall(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	<-legs
	if err := r.HangupCall(ctx, second.SID); err != nil {
		t.Fatal(err)
	}
	if c, err := fake.WaitDone(ctx, second.SID); err != nil || c.HangupBy != faketwilio.HangupAPI || c.Status != "completed" {
		t.Errorf("hung-up call %+v, %v", c, err)
	}

	busy := req
	busy.To = "+14155550188"
	third, err := r.CreateCall(ctx, busy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fake.WaitDone(ctx, third.SID); err != nil {
		t.Fatal(err)
	}
	if got, err := r.FetchCall(ctx, third.SID); err != nil || got.Status != "busy" || !CallEnded(got.Status) {
		t.Errorf("busy call %+v, %v", got, err)
	}

	// Twilio's refusals arrive classified.
	unknown := "CA" + strings.Repeat("9", 32)
	_, err = r.FetchCall(ctx, unknown)
	apiErr(t, err, 404, ErrorCodeNotFound)
	if err := r.HangupCall(ctx, unknown); err != nil {
		t.Errorf("hanging up an unknown call: %v", err)
	}
	stranger := req
	stranger.From = "+14155550777"
	_, err = r.CreateCall(ctx, stranger)
	providerErr(t, err, voice.KindBadInput)
	if ae := apiErr(t, err, 400, 21210); !strings.Contains(ae.Message, "not yet verified") {
		t.Errorf("message %q", ae.Message)
	}
	fake.AddFault(faketwilio.Fault{Path: "/Calls.json", Status: 503, Times: 1})
	_, err = r.CreateCall(ctx, req)
	if pe := providerErr(t, err, voice.KindTransient); !pe.Retryable() {
		t.Error("a 503 on create is not retryable")
	}
	var ae *APIError
	if !errors.As(err, &ae) || ae.Code != 20500 {
		t.Errorf("fault error %v", err)
	}
}
