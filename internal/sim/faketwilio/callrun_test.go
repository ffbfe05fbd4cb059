package faketwilio

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/testpeer"
)

func TestCreateValidation(t *testing.T) {
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{})
	ok := h.url("/twilio/voice")
	without := func(k string) url.Values { v := callForm("Url", ok); v.Del(k); return v }
	with := func(kv ...string) url.Values {
		v := callForm("Url", ok)
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	cases := []struct {
		name string
		form url.Values
		code int
		msg  string
	}{
		{"no To", without("To"), CodeNoTo, ""},
		{"bad To", with("To", "4155550199"), CodeInvalidTo, ""},
		{"no From", without("From"), CodeNoFrom, ""},
		{"bad From", with("From", "+1415x"), CodeInvalidFrom, ""},
		{"unverified From", with("From", "+14155550777"), CodeFromNotVerified,
			"The source phone number provided, +14155550777, is not yet verified for your account."},
		{"no Url or Twiml", without("Url"), CodeInvalidCallURL, ""},
		{"relative Url", with("Url", "/twilio/voice"), CodeInvalidCallURL, ""},
		{"ftp Url", with("Url", "ftp://example.com/twiml"), CodeInvalidCallURL, ""},
		{"bad StatusCallback", with("StatusCallback", "example.com/cb"), CodeInvalidURL, ""},
		{"bad Method", with("Method", "PUT"), CodeInvalidMethod, ""},
		{"bad StatusCallbackMethod", with("StatusCallback", ok, "StatusCallbackMethod", "PATCH"), CodeInvalidMethod, ""},
		{"bad event", with("StatusCallback", ok, "StatusCallbackEvent", "answered hungup"), CodeInvalidStatusCallbackEvent, ""},
		{"bad MachineDetection", with("MachineDetection", "enable"), CodeInvalidMachineDetection, ""},
		{"bad Timeout", with("Timeout", "soon"), CodeInvalidTimeout, ""},
		{"zero TimeLimit", with("TimeLimit", "0"), CodeInvalidTimeout, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := post(t, ts, callsPath, c.form)
			wantError(t, a, http.StatusBadRequest, c.code)
			if m, _ := a.body["message"].(string); !strings.HasPrefix(m, c.msg) {
				t.Errorf("message %q, want it to start %q", m, c.msg)
			}
		})
	}
	if n := len(s.Calls()); n != 0 {
		t.Errorf("%d calls created by refused requests", n)
	}
	reqs := s.Requests()
	if len(reqs) != len(cases) || reqs[4].Code != CodeFromNotVerified || reqs[4].Form.Get("From") != "+14155550777" {
		t.Errorf("recorded %d requests: %+v", len(reqs), reqs[4])
	}

	// Accepted oddities: a spaced StatusCallbackEvent, Twiml ignored beside Url, Timeout capped.
	sid := create(t, ts, callForm("Url", h.url("/twiml/none"), "Twiml", "<Response/>", "Timeout", "9999",
		"StatusCallback", h.url("/cb"), "StatusCallbackEvent", "initiated answered"))
	c := waitDone(t, s, sid)
	if c.Twiml != "" || c.Timeout != MaxTimeout || !slices.Equal(c.StatusCallbackEvents, []string{"initiated", "answered"}) ||
		!slices.Equal(c.CallbackStatuses(), []string{"initiated", "in-progress"}) {
		t.Errorf("call %+v", c)
	}
}

func TestCallInstanceErrors(t *testing.T) {
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{})
	unknown := "CA" + strings.Repeat("0", 32)
	wantError(t, get(t, ts, callPath(unknown)), http.StatusNotFound, CodeNotFound)
	wantError(t, post(t, ts, callPath(unknown), url.Values{"Status": {"completed"}}), http.StatusNotFound, CodeNotFound)
	wantError(t, get(t, ts, acctPath+"/Calls/"+unknown), http.StatusNotFound, CodeNotFound)
	wantError(t, get(t, ts, callsPath), http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	other := APIVersion + "/Accounts/AC" + strings.Repeat("1", 32) + "/Calls.json"
	wantError(t, post(t, ts, other, callForm("Url", h.url("/twilio/voice"))), http.StatusUnauthorized, CodeAuthenticate)
	wantError(t, call(t, ts, http.MethodPost, callsPath, "", "", callForm("Url", h.url("/twilio/voice"))),
		http.StatusUnauthorized, CodeAuthenticate)

	sid := create(t, ts, callForm("Twiml", `<Response><Pause length="0"/></Response>`))
	for _, form := range []url.Values{{"Status": {"busy"}}, {"Url": {"nope"}}, {"Url": {h.url("/x")}, "Method": {"PUT"}}} {
		if a := post(t, ts, callPath(sid), form); a.status != http.StatusBadRequest {
			t.Errorf("update %v: %d %s", form, a.status, a.raw)
		}
	}
	wantError(t, call(t, ts, http.MethodPut, callPath(sid), DefaultAccountSID, DefaultAuthToken, url.Values{}),
		http.StatusMethodNotAllowed, CodeMethodNotAllowed)
	if _, ok := s.Call(unknown); ok {
		t.Error("Call found an unknown sid")
	}
	if _, err := s.WaitCall(waitCtx(t), unknown, func(Call) bool { return true }); err == nil {
		t.Error("WaitCall accepted an unknown sid")
	}
	c := waitDone(t, s, sid)
	if _, err := s.WaitCall(waitCtx(t), sid, func(c Call) bool { return c.Status == StatusBusy }); err == nil {
		t.Error("WaitCall on a finished call with an unmet condition did not fail")
	}
	if c.Status != StatusCompleted || c.Streams != 0 {
		t.Errorf("call %+v", c)
	}
}

func TestCallFaults(t *testing.T) {
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{})
	s.AddFault(Fault{Method: http.MethodPost, Path: "/Calls.json", Status: http.StatusInternalServerError, Times: 1})
	wantError(t, post(t, ts, callsPath, callForm("Twiml", "<Response/>")), http.StatusInternalServerError, CodeInternalError)
	if n := len(s.Calls()); n != 0 {
		t.Fatalf("a faulted create made %d calls", n)
	}
	sid := create(t, ts, callForm("Twiml", "<Response/>"))
	s.AddFault(Fault{Path: "/Calls/" + sid, Status: http.StatusServiceUnavailable, Times: 1})
	wantError(t, get(t, ts, callPath(sid)), http.StatusServiceUnavailable, CodeInternalError)
	if a := get(t, ts, callPath(sid)); a.status != 200 {
		t.Errorf("after the fault: %d", a.status)
	}
	waitDone(t, s, sid)
}

func TestTwiMLErrors(t *testing.T) {
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{})
	h.setDoc("garbage", doc{body: "<Response><Say>unclosed"})
	h.setDoc("html", doc{body: "<html/>"})
	h.setDoc("broken", doc{status: 500, body: "oops"})
	h.setDoc("text", doc{ctype: "text/plain", body: "<Response/>"})
	h.setDoc("loop", doc{body: "<Response><Redirect>/twiml/loop</Redirect></Response>"})
	h.setDoc("odd", doc{body: `<Response><Gather/><Connect><Room/></Connect>` +
		`<Connect><Stream url="` + h.wsURL("nope") + `x/y"/></Connect><Connect><Stream url="wss://example.com/s?t=1"/></Connect>` +
		`<Dial></Dial><Pause length="0"/><Redirect>nope</Redirect></Response>`})
	cases := []struct {
		name  string
		form  url.Values
		codes []int
		verbs []string
	}{
		{"unparsable", callForm("Url", h.url("/twiml/garbage")), []int{CodeDocumentParse}, nil},
		{"not Response", callForm("Url", h.url("/twiml/html")), []int{CodeDocumentParse}, nil},
		{"500", callForm("Url", h.url("/twiml/broken")), []int{CodeHTTPRetrieval}, nil},
		{"404", callForm("Url", h.url("/twiml/missing")), []int{CodeHTTPRetrieval}, nil},
		{"unreachable", callForm("Url", "http://127.0.0.1:1/twiml"), []int{CodeHTTPRetrieval}, nil},
		{"text/plain", callForm("Url", h.url("/twiml/text")), []int{CodeInvalidContentType}, nil},
		{"inline garbage", callForm("Twiml", "<Response"), []int{CodeDocumentParse}, nil},
		{"redirect loop", callForm("Url", h.url("/twiml/loop")), []int{CodeDocumentParse}, nil},
		{"unsupported", callForm("Url", h.url("/twiml/odd")),
			[]int{CodeUnsupportedVerb, CodeUnsupportedVerb, CodeStreamHandshake, CodeStreamHandshake, CodeUnsupportedVerb, CodeHTTPRetrieval},
			[]string{"Gather", "Connect", "Connect", "Connect", "Dial", "Pause", "Redirect"}},
		{"relative redirect in inline TwiML", callForm("Twiml", "<Response><Redirect>/x</Redirect></Response>"),
			[]int{CodeHTTPRetrieval}, []string{"Redirect"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.form.Set("StatusCallback", h.url("/cb"))
			sid := create(t, ts, c.form)
			call := waitDone(t, s, sid)
			var codes []int
			for _, e := range call.Errors {
				codes = append(codes, e.Code)
			}
			if !slices.Equal(codes, c.codes) || call.Status != StatusCompleted || call.HangupBy != HangupTwiML ||
				!slices.Equal(call.CallbackStatuses(), []string{"completed"}) {
				t.Errorf("errors %v (want %v), call %+v", codes, c.codes, call)
			}
			if c.verbs != nil && !slices.Equal(call.Verbs, c.verbs) {
				t.Errorf("verbs %v, want %v", call.Verbs, c.verbs)
			}
		})
	}
	if c := s.Calls()[7]; len(c.Webhooks) != maxDocuments {
		t.Errorf("a redirect loop fetched %d documents, want %d", len(c.Webhooks), maxDocuments)
	}
}

func TestGetMethods(t *testing.T) {
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{})
	h.setDoc("get", doc{body: "<Response><Hangup/></Response>"})
	twiml, cb := h.url("/twiml/get?a=1"), h.url("/cb?b=2")
	sid := create(t, ts, callForm("Url", twiml, "Method", "get", "StatusCallback", cb, "StatusCallbackMethod", "GET"))
	c := waitDone(t, s, sid)
	if len(c.Webhooks) != 1 || c.Webhooks[0].Method != http.MethodGet || c.Webhooks[0].Status != 200 {
		t.Errorf("webhooks %+v", c.Webhooks)
	}
	for _, path := range []string{"/twiml/get", "/cb"} {
		hits := h.hitsOn(path)
		if len(hits) != 1 || hits[0].Method != http.MethodGet || !hits[0].SigOK || hits[0].Form.Get("CallSid") != sid {
			t.Fatalf("%s: %+v", path, hits)
		}
		if q := hits[0].Form; q.Get("a")+q.Get("b") == "" {
			t.Errorf("%s lost its own query: %v", path, q)
		}
	}
	if q := h.hitsOn("/cb")[0].Form; q.Get("CallStatus") != "completed" {
		t.Errorf("GET callback %v", q)
	}
}

// advanceWhen waits until clk has n pending timers, then advances it by d.
func advanceWhen(t *testing.T, clk *clock.Fake, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for clk.Pending() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d timers pending, want %d", clk.Pending(), n)
		}
		time.Sleep(time.Millisecond)
	}
	clk.Advance(d)
}

func TestDurationsOnTheClock(t *testing.T) {
	t0 := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	cases := []struct {
		name      string
		hold      time.Duration
		timeLimit string
		advance   time.Duration
		want      time.Duration
		by        string
	}{
		{"document runs out", time.Hour, "", 5 * time.Second, 5 * time.Second, HangupTwiML},
		{"callee hangs up", 2 * time.Second, "", 2 * time.Second, 2 * time.Second, HangupCallee},
		{"time limit", time.Hour, "3", 3 * time.Second, 3 * time.Second, HangupTimeLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			h := newHandset(t)
			s, ts := startCalls(t, h, Options{Clock: clk, Answer: func(string) Answer {
				return Answer{RingFor: 10 * time.Second, Hold: c.hold}
			}})
			form := callForm("Twiml", `<Response><Say>Hi</Say><Pause length="5"/></Response>`, "StatusCallback", h.url("/cb"))
			if c.timeLimit != "" {
				form.Set("TimeLimit", c.timeLimit)
			}
			sid := create(t, ts, form)
			advanceWhen(t, clk, 1, 10*time.Second) // the ring
			advanceWhen(t, clk, 3, c.advance)      // hold, time limit and the pause
			call := waitDone(t, s, sid)
			if call.Duration != c.want || call.HangupBy != c.by || !call.Answered.Equal(t0.Add(10*time.Second)) ||
				!call.Ended.Equal(t0.Add(10*time.Second+c.advance)) || !call.Created.Equal(t0) {
				t.Errorf("call %+v", call)
			}
			p := call.Callbacks[0].Params
			if p.Get("CallDuration") != fmt.Sprint(int(c.want/time.Second)) || p.Get("Duration") != "1" ||
				p.Get("Timestamp") != twilioTime(t0.Add(10*time.Second+c.advance)) {
				t.Errorf("completed callback %v", p)
			}
			if got := get(t, ts, callPath(sid)); got.body["duration"] != fmt.Sprint(int(c.want/time.Second)) ||
				got.body["start_time"] != twilioTime(t0) {
				t.Errorf("fetched %s", got.raw)
			}
		})
	}
}

// TestManyConcurrentCalls places 500 calls from several clients at once; every tenth
// streams into Handset, and those fifty callees hang up together once all fifty streams
// are live at once; the rest are transferred at once.
func TestManyConcurrentCalls(t *testing.T) {
	testpeer.Slow(t, "500 calls")
	const clients, perClient = 10, 50
	const wantStreams = clients * perClient / 10
	var (
		mu   sync.Mutex
		live int
	)
	allLive := make(chan struct{})
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{Answer: func(to string) Answer {
		return Answer{RingFor: 20 * time.Millisecond, Talk: func(ctx context.Context, _ *twiliocaller.Call) error {
			mu.Lock()
			if live++; live == wantStreams {
				close(allLive)
			}
			mu.Unlock()
			select {
			case <-allLive:
			case <-ctx.Done():
			}
			return nil
		}}
	}})
	var wg sync.WaitGroup
	sids := make(chan string, clients*perClient)
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				form := callForm("StatusCallback", h.url("/cb"), "StatusCallbackEvent", "answered", "StatusCallbackEvent", "completed")
				form.Set("To", fmt.Sprintf("+1415556%02d%02d", c, i))
				if i%10 == 0 {
					form.Set("Url", h.url("/twilio/voice"))
				} else {
					form.Set("Twiml", `<Response><Dial>+14155550100</Dial></Response>`)
				}
				a := post(t, ts, callsPath, form)
				if a.status != http.StatusCreated {
					t.Errorf("create: %d %s", a.status, a.raw)
					return
				}
				sids <- a.body["sid"].(string)
				_ = s.Calls()
			}
		})
	}
	wg.Wait()
	close(sids)
	select {
	case <-allLive:
	case <-time.After(60 * time.Second): // a safety net: the streams are all created by now
		mu.Lock()
		n := live
		mu.Unlock()
		t.Fatalf("only %d of %d streams were ever live together", n, wantStreams)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	calls, err := s.WaitCalls(ctx, clients*perClient)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for sid := range sids {
		seen[sid] = true
	}
	streams := 0
	for _, c := range calls {
		streams += c.Streams
		if !seen[c.SID] || c.Status != StatusCompleted || len(c.Errors) != 0 ||
			!slices.Equal(c.CallbackStatuses(), []string{"in-progress", "completed"}) {
			t.Errorf("call %+v", c)
			break
		}
	}
	if len(seen) != clients*perClient || streams != wantStreams {
		t.Errorf("%d distinct sids, %d streams", len(seen), streams)
	}
	if n := len(h.hitsOn("/cb")); n != 2*clients*perClient {
		t.Errorf("%d callbacks reached Handset", n)
	}
}

func TestStreamAccessorAndTalkContext(t *testing.T) {
	h := newHandset(t)
	ended := make(chan error, 1)
	s, ts := startCalls(t, h, Options{Answer: func(string) Answer {
		return Answer{Talk: func(ctx context.Context, c *twiliocaller.Call) error {
			<-ctx.Done() // the stream ends under Talk: its context says so
			ended <- ctx.Err()
			return ctx.Err()
		}}
	}})
	sid := create(t, ts, callForm("Url", h.url("/twilio/voice")))
	lg := h.leg(t)
	tc := liveStream(t, s, sid)
	if tc.CallSid() != sid {
		t.Errorf("stream of call %s", tc.CallSid())
	}
	lg.cancel() // Handset hangs up: the call goes on past </Connect>, where the document ends
	if err := <-ended; err == nil {
		t.Error("Talk's context did not end with the stream")
	}
	c := waitDone(t, s, sid)
	if s.Stream(sid) != nil || c.HangupBy != HangupTwiML || !slices.Equal(c.Verbs, []string{"Connect"}) {
		t.Errorf("call %+v", c)
	}
	// The carrier drops the socket when its context ends; Twilio logs that as 31921.
	if len(c.Errors) > 1 || len(c.Errors) == 1 && c.Errors[0].Code != CodeStreamClosed {
		t.Errorf("errors %v", c.Errors)
	}
}
