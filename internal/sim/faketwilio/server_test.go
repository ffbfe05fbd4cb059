package faketwilio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	numA = Number{PhoneNumber: "+14155550100", VoiceURL: "https://old.example.com/voice"}
	numB = Number{PhoneNumber: "+14155550101", VoiceApplicationSID: "AP" + strings.Repeat("ab", 16)}
	numC = Number{PhoneNumber: "+442071838750", FriendlyName: "London"}
)

// start serves a fake built from o and closes it at the end of the test.
func start(t *testing.T, o Options) (*Server, *httptest.Server) {
	t.Helper()
	s := New(o)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// call sends one request with basic auth user:pass ("" user: none) and decodes the JSON.
func call(t *testing.T, ts *httptest.Server, method, path, user, pass string, form url.Values) answer {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, ts.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("%s %s: answer %q is not JSON: %v", method, path, raw, err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	return a
}

// get and post authenticate as the default account.
func get(t *testing.T, ts *httptest.Server, path string) answer {
	t.Helper()
	return call(t, ts, http.MethodGet, path, DefaultAccountSID, DefaultAuthToken, nil)
}

func post(t *testing.T, ts *httptest.Server, path string, form url.Values) answer {
	t.Helper()
	return call(t, ts, http.MethodPost, path, DefaultAccountSID, DefaultAuthToken, form)
}

// wantError checks a Twilio error answer.
func wantError(t *testing.T, a answer, status, code int) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.raw)
	}
	if got := a.body["code"]; got != float64(code) {
		t.Errorf("code %v, want %d: %s", got, code, a.raw)
	}
	if got := a.body["status"]; got != float64(status) {
		t.Errorf("status field %v, want %d", got, status)
	}
	if got, want := a.body["more_info"], fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code); got != want {
		t.Errorf("more_info %v, want %s", got, want)
	}
	if m, _ := a.body["message"].(string); m == "" {
		t.Errorf("no message: %s", a.raw)
	}
}

const (
	acctPath = APIVersion + "/Accounts/" + DefaultAccountSID
	listPath = acctPath + "/IncomingPhoneNumbers.json"
)

func numberPath(sid string) string { return acctPath + "/IncomingPhoneNumbers/" + sid + ".json" }

func TestAuth(t *testing.T) {
	s, ts := start(t, Options{})
	cases := []struct{ name, user, pass string }{
		{"no credentials", "", ""},
		{"wrong token", DefaultAccountSID, "0000"},
		{"wrong account", "AC" + strings.Repeat("0", 32), DefaultAuthToken},
		{"token as user", DefaultAuthToken, DefaultAccountSID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := call(t, ts, http.MethodGet, acctPath+".json", c.user, c.pass, nil)
			wantError(t, a, http.StatusUnauthorized, CodeAuthenticate)
			if a.body["message"] != "Authenticate" {
				t.Errorf("message %v", a.body["message"])
			}
			if h := a.header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Basic") {
				t.Errorf("WWW-Authenticate %q", h)
			}
		})
	}
	reqs := s.Requests()
	if len(reqs) != len(cases) {
		t.Fatalf("%d requests recorded, want %d", len(reqs), len(cases))
	}
	for i, r := range reqs {
		if r.Authenticated || r.Status != 401 || r.Code != CodeAuthenticate || r.User != cases[i].user {
			t.Errorf("request %d recorded as %+v", i, r)
		}
	}
	// Good credentials for another account's resources are refused too.
	other := APIVersion + "/Accounts/AC" + strings.Repeat("1", 32) + ".json"
	wantError(t, get(t, ts, other), http.StatusUnauthorized, CodeAuthenticate)
}

func TestAccount(t *testing.T) {
	_, ts := start(t, Options{FriendlyName: "Acme", Type: "Trial"})
	a := get(t, ts, acctPath+".json")
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.raw)
	}
	want := map[string]any{"sid": DefaultAccountSID, "friendly_name": "Acme", "type": "Trial",
		"status": "active", "uri": acctPath + ".json", "owner_account_sid": DefaultAccountSID}
	for k, v := range want {
		if a.body[k] != v {
			t.Errorf("%s = %v, want %v", k, a.body[k], v)
		}
	}
	if _, err := time.Parse(time.RFC1123Z, a.body["date_created"].(string)); err != nil {
		t.Errorf("date_created: %v", err)
	}
	// Only the .json representation exists.
	wantError(t, get(t, ts, acctPath), http.StatusNotFound, CodeNotFound)
	wantError(t, call(t, ts, http.MethodDelete, acctPath+".json", DefaultAccountSID, DefaultAuthToken, nil),
		http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	wantError(t, get(t, ts, acctPath+"/Nope.json"), http.StatusNotFound, CodeNotFound)
}

func TestNumberDefaults(t *testing.T) {
	s, ts := start(t, Options{Numbers: []Number{numA, numB, numC}})
	a := get(t, ts, numberPath(NumberSID(numA.PhoneNumber)))
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.raw)
	}
	want := map[string]any{"phone_number": "+14155550100", "friendly_name": "(415) 555-0100",
		"voice_url": "https://old.example.com/voice", "voice_method": "POST", "voice_application_sid": "",
		"status_callback": nil, "account_sid": DefaultAccountSID, "sid": NumberSID(numA.PhoneNumber)}
	for k, v := range want {
		if a.body[k] != v {
			t.Errorf("%s = %#v, want %#v", k, a.body[k], v)
		}
	}
	if n, ok := s.Number("+442071838750"); !ok || n.FriendlyName != "London" || !ValidSID(n.SID, "PN") {
		t.Errorf("Number(+44…) = %+v, %v", n, ok)
	}
	if _, ok := s.Number("+10000000000"); ok {
		t.Error("found a number that does not exist")
	}
	wantError(t, get(t, ts, numberPath("PN"+strings.Repeat("0", 32))), http.StatusNotFound, CodeNotFound)
}

// page is a decoded list answer.
type page struct {
	Numbers []struct {
		SID         string `json:"sid"`
		PhoneNumber string `json:"phone_number"`
	} `json:"incoming_phone_numbers"`
	Page     int     `json:"page"`
	PageSize int     `json:"page_size"`
	Start    int     `json:"start"`
	End      int     `json:"end"`
	URI      string  `json:"uri"`
	First    string  `json:"first_page_uri"`
	Next     *string `json:"next_page_uri"`
	Previous *string `json:"previous_page_uri"`
}

func getPage(t *testing.T, ts *httptest.Server, path string) page {
	t.Helper()
	a := get(t, ts, path)
	if a.status != 200 {
		t.Fatalf("GET %s: %d %s", path, a.status, a.raw)
	}
	var p page
	if err := json.Unmarshal([]byte(a.raw), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestListPaging(t *testing.T) {
	var nums []Number
	for i := range 5 {
		nums = append(nums, Number{PhoneNumber: fmt.Sprintf("+1415555010%d", i)})
	}
	_, ts := start(t, Options{Numbers: nums, MaxPageSize: 2})

	var got []string
	path := listPath + "?PageSize=1000"
	for i := 0; ; i++ {
		p := getPage(t, ts, path)
		if p.Page != i || p.PageSize != 2 || p.Start != 2*i {
			t.Errorf("page %d: page=%d page_size=%d start=%d", i, p.Page, p.PageSize, p.Start)
		}
		if p.End != p.Start+len(p.Numbers)-1 {
			t.Errorf("page %d: end=%d with start %d and %d items", i, p.End, p.Start, len(p.Numbers))
		}
		if !strings.HasPrefix(p.URI, listPath+"?") || !strings.Contains(p.URI, fmt.Sprintf("Page=%d", i)) {
			t.Errorf("page %d: uri %q", i, p.URI)
		}
		if !strings.Contains(p.First, "Page=0") {
			t.Errorf("first_page_uri %q", p.First)
		}
		if (i == 0) != (p.Previous == nil) {
			t.Errorf("page %d: previous_page_uri %v", i, p.Previous)
		}
		for _, n := range p.Numbers {
			got = append(got, n.PhoneNumber)
		}
		if p.Next == nil {
			if i != 2 {
				t.Errorf("paging ended after page %d, want 3 pages", i)
			}
			break
		}
		if i > 5 {
			t.Fatal("paging does not end")
		}
		path = *p.Next
	}
	want := "+14155550100 +14155550101 +14155550102 +14155550103 +14155550104"
	if strings.Join(got, " ") != want {
		t.Errorf("numbers over pages %v, want %s", got, want)
	}

	// Page without a token counts from the start; the default page size is 50.
	if p := getPage(t, ts, listPath+"?PageSize=2&Page=2"); len(p.Numbers) != 1 || p.Numbers[0].PhoneNumber != "+14155550104" {
		t.Errorf("Page=2: %+v", p.Numbers)
	}
	if p := getPage(t, ts, listPath+"?Page=9"); len(p.Numbers) != 0 || p.Next != nil {
		t.Errorf("page past the end: %+v", p)
	}
	_, big := start(t, Options{Numbers: nums})
	if p := getPage(t, big, listPath); p.PageSize != DefaultPageSize || len(p.Numbers) != 5 || p.Next != nil {
		t.Errorf("default page: size %d, %d numbers, next %v", p.PageSize, len(p.Numbers), p.Next)
	}
}

func TestListFilter(t *testing.T) {
	_, ts := start(t, Options{Numbers: []Number{numA, numB, numC}, MaxPageSize: 1})
	cases := []struct{ filter, want string }{
		{"+14155550100", "+14155550100"},
		{"+1 (415) 555-0101", "+14155550101"},
		{"415555010*", "+14155550100 +14155550101"},
		{"2071838750", "+442071838750"},
		{"+19999999999", ""},
	}
	for _, c := range cases {
		var got []string
		path := listPath + "?" + url.Values{"PhoneNumber": {c.filter}}.Encode()
		for range 5 {
			p := getPage(t, ts, path)
			for _, n := range p.Numbers {
				got = append(got, n.PhoneNumber)
			}
			if p.Next == nil {
				break
			}
			if !strings.Contains(*p.Next, url.Values{"PhoneNumber": {c.filter}}.Encode()) {
				t.Errorf("next_page_uri %q drops the filter", *p.Next)
			}
			path = *p.Next
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("PhoneNumber=%q: %v, want %q", c.filter, got, c.want)
		}
	}
	wantError(t, post(t, ts, listPath+"x", url.Values{}), http.StatusNotFound, CodeNotFound)
}

func TestUpdate(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, ts := start(t, Options{Numbers: []Number{numA, numB}, Now: func() time.Time { return now }})
	sidB := NumberSID(numB.PhoneNumber)
	before, _ := s.Number(sidB)

	form := url.Values{"VoiceUrl": {"https://voice.example.com/twilio/voice"}, "VoiceMethod": {"post"},
		"VoiceApplicationSid": {""}, "StatusCallback": {"https://voice.example.com/twilio/status"},
		"StatusCallbackMethod": {"POST"}}
	now = now.Add(time.Hour)
	a := post(t, ts, numberPath(sidB), form)
	if a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.raw)
	}
	want := map[string]any{"voice_url": "https://voice.example.com/twilio/voice", "voice_method": "POST",
		"voice_application_sid": "", "status_callback": "https://voice.example.com/twilio/status",
		"phone_number": numB.PhoneNumber, "date_updated": now.Format(time.RFC1123Z)}
	for k, v := range want {
		if a.body[k] != v {
			t.Errorf("answer %s = %#v, want %#v", k, a.body[k], v)
		}
	}
	after, _ := s.Number(sidB)
	if after.VoiceURL != form.Get("VoiceUrl") || after.VoiceApplicationSID != "" || after.VoiceMethod != "POST" ||
		after.FriendlyName != before.FriendlyName || !after.DateCreated.Equal(before.DateCreated) {
		t.Errorf("after update: %+v (before %+v)", after, before)
	}

	// Absent fields are left alone; an empty one clears.
	if a := post(t, ts, numberPath(sidB), url.Values{"VoiceMethod": {"GET"}}); a.status != 200 {
		t.Fatalf("status %d: %s", a.status, a.raw)
	}
	if n, _ := s.Number(sidB); n.VoiceMethod != "GET" || n.VoiceURL != form.Get("VoiceUrl") || n.StatusCallback == "" {
		t.Errorf("partial update: %+v", n)
	}
	if a := post(t, ts, numberPath(sidB), url.Values{"VoiceUrl": {""}}); a.status != 200 || a.body["voice_url"] != nil {
		t.Errorf("clearing VoiceUrl: %d voice_url=%#v", a.status, a.body["voice_url"])
	}

	reqs := s.Requests()
	if len(reqs) != 3 || reqs[0].Form.Get("VoiceUrl") != form.Get("VoiceUrl") || reqs[0].Method != "POST" ||
		!reqs[0].Authenticated || reqs[0].User != DefaultAccountSID || reqs[0].Status != 200 {
		t.Errorf("recorded %+v", reqs)
	}
}

func TestUpdateValidation(t *testing.T) {
	s, ts := start(t, Options{Numbers: []Number{numA}})
	sid := NumberSID(numA.PhoneNumber)
	cases := []struct {
		name string
		form url.Values
		code int
	}{
		{"relative VoiceUrl", url.Values{"VoiceUrl": {"/twilio/voice"}}, CodeInvalidURL},
		{"ftp VoiceUrl", url.Values{"VoiceUrl": {"ftp://example.com/voice"}}, CodeInvalidURL},
		{"host-less VoiceUrl", url.Values{"VoiceUrl": {"https:///voice"}}, CodeInvalidURL},
		{"bad StatusCallback", url.Values{"VoiceUrl": {"https://ok.example.com/v"}, "StatusCallback": {"nope"}}, CodeInvalidURL},
		{"PUT VoiceMethod", url.Values{"VoiceUrl": {"https://ok.example.com/v"}, "VoiceMethod": {"PUT"}}, CodeInvalidMethod},
		{"bad StatusCallbackMethod", url.Values{"StatusCallbackMethod": {"DELETE"}}, CodeInvalidMethod},
		{"bad application", url.Values{"VoiceApplicationSid": {"AP123"}}, CodeInvalidApplication},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, post(t, ts, numberPath(sid), c.form), http.StatusBadRequest, c.code)
			if n, _ := s.Number(sid); n.VoiceURL != numA.VoiceURL || n.VoiceMethod != "POST" || n.StatusCallback != "" {
				t.Errorf("a refused update changed the number: %+v", n)
			}
		})
	}
	unknown := "PN" + strings.Repeat("9", 32)
	wantError(t, post(t, ts, numberPath(unknown), url.Values{"VoiceUrl": {"https://ok.example.com/v"}}),
		http.StatusNotFound, CodeNotFound)
	wantError(t, post(t, ts, numberPath("+14155550100"), url.Values{}), http.StatusNotFound, CodeNotFound)
	wantError(t, call(t, ts, http.MethodPut, numberPath(sid), DefaultAccountSID, DefaultAuthToken, url.Values{}),
		http.StatusMethodNotAllowed, CodeMethodNotAllowed)
}

func TestFaults(t *testing.T) {
	s, ts := start(t, Options{})
	s.AddFault(Fault{Path: "/Accounts/", Status: http.StatusServiceUnavailable, Times: 2})
	for range 2 {
		wantError(t, get(t, ts, acctPath+".json"), http.StatusServiceUnavailable, CodeInternalError)
	}
	if a := get(t, ts, acctPath+".json"); a.status != 200 {
		t.Errorf("fault outlived its Times: %d", a.status)
	}
	s.AddFault(Fault{Method: http.MethodPost, Status: http.StatusTooManyRequests, After: 1, Times: 1})
	if a := get(t, ts, acctPath+".json"); a.status != 200 {
		t.Errorf("a POST fault hit a GET: %d", a.status)
	}
	if a := post(t, ts, acctPath+"/x.json", url.Values{}); a.status != http.StatusNotFound {
		t.Errorf("After let %d through", a.status)
	}
	wantError(t, post(t, ts, acctPath+"/x.json", url.Values{}), http.StatusTooManyRequests, CodeTooManyRequests)

	s.AddFault(Fault{Method: http.MethodGet, Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+acctPath+".json", nil)
	req.SetBasicAuth(DefaultAccountSID, DefaultAuthToken)
	began := time.Now()
	if resp, err := ts.Client().Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("a stalled request answered")
	}
	// The stall is a minute: half of it tells one that waited it out from one that ended
	// with the client, on however loaded a machine.
	if d := time.Since(began); d > 30*time.Second {
		t.Errorf("stall lasted %v after the client gave up", d)
	}
	s.ClearFaults()
	if a := get(t, ts, acctPath+".json"); a.status != 200 {
		t.Errorf("after ClearFaults: %d", a.status)
	}
	// The stalled request is recorded (status 0) once its handler returns (the deadline is
	// a safety net).
	deadline := time.Now().Add(30 * time.Second)
	for {
		reqs := s.Requests()
		n := 0
		for _, r := range reqs {
			if r.Status == 0 {
				n++
			}
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stalled request not recorded: %+v", reqs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestConcurrentUse(t *testing.T) {
	var nums []Number
	for i := range 20 {
		nums = append(nums, Number{PhoneNumber: fmt.Sprintf("+1415555%04d", i)})
	}
	s, ts := start(t, Options{Numbers: nums, MaxPageSize: 3})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			sid := NumberSID(nums[i].PhoneNumber)
			url := url.Values{"VoiceUrl": {fmt.Sprintf("https://h%d.example.com/twilio/voice", i)}}
			if a := post(t, ts, numberPath(sid), url); a.status != 200 {
				t.Errorf("update %d: %d", i, a.status)
			}
			getPage(t, ts, listPath)
			_ = s.Numbers()
			_ = s.Requests()
		})
	}
	wg.Wait()
	for i, n := range s.Numbers() {
		if want := fmt.Sprintf("https://h%d.example.com/twilio/voice", i); n.VoiceURL != want {
			t.Errorf("number %d: %q, want %q", i, n.VoiceURL, want)
		}
	}
	if got := len(s.Requests()); got != 40 {
		t.Errorf("%d requests recorded, want 40", got)
	}
}

func TestNewRefusesNonsense(t *testing.T) {
	cases := map[string]Options{
		"account sid":    {AccountSID: "AC123"},
		"number":         {Numbers: []Number{{PhoneNumber: "4155550100"}}},
		"number sid":     {Numbers: []Number{{PhoneNumber: "+14155550100", SID: "PN1"}}},
		"repeated":       {Numbers: []Number{numA, numA}},
		"repeated sid":   {Numbers: []Number{numA, {PhoneNumber: "+14155550199", SID: NumberSID(numA.PhoneNumber)}}},
		"leading zero":   {Numbers: []Number{{PhoneNumber: "+04155550100"}}},
		"too short":      {Numbers: []Number{{PhoneNumber: "+1415"}}},
		"not all digits": {Numbers: []Number{{PhoneNumber: "+1415555010x"}}},
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("New accepted it")
				}
			}()
			New(o)
		})
	}
}

func TestHelpers(t *testing.T) {
	if got := FriendlyName("+14155550100"); got != "(415) 555-0100" {
		t.Errorf("FriendlyName = %q", got)
	}
	if got := FriendlyName("+442071838750"); got != "+442071838750" {
		t.Errorf("FriendlyName = %q", got)
	}
	if sid := NumberSID("+14155550100"); !ValidSID(sid, "PN") || sid != NumberSID("+14155550100") || sid == NumberSID("+14155550101") {
		t.Errorf("NumberSID = %q", sid)
	}
	for sid, ok := range map[string]bool{
		DefaultAccountSID: true, "AC" + strings.Repeat("G", 32): false, "PN" + strings.Repeat("a", 32): false,
		"AC" + strings.Repeat("a", 31): false,
	} {
		if ValidSID(sid, "AC") != ok {
			t.Errorf("ValidSID(%q) = %v", sid, !ok)
		}
	}
}
