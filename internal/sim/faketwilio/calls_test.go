package faketwilio

import (
	"context"
	"encoding/json"
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

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/carrier/carriertest"
	"github.com/handset-voice/handset/internal/carrier/twilio"
	"github.com/handset-voice/handset/internal/clock"
	"github.com/handset-voice/handset/internal/sim/twiliocaller"
	"github.com/handset-voice/handset/internal/voice"
)

// handset is a small Handset for the fake to call: the real Twilio carrier on /twilio/…
// (signature checks, TwiML, Media Streams), plus test endpoints: /cb records status
// callbacks, /twiml/{name} answers the documents a test sets, and /ws/{mode} is a bare
// Media Streams server ("close" ends the stream after start, "hold" waits for stop). Every
// request is recorded with whether its X-Twilio-Signature covers the URL as requested.
type handset struct {
	t     *testing.T
	srv   *httptest.Server
	token string
	legs  chan *leg
	wss   chan *wsConn

	mu     sync.Mutex
	hits   []hit
	docs   map[string]doc
	cbCode int
	all    []*leg
}

type hit struct {
	Method, URL string // URL as requested, query included
	Form        url.Values
	Sig         string
	SigOK       bool
}

type doc struct {
	status int
	ctype  string
	body   string
}

// leg is one call the carrier admitted; Handset ends it with cancel.
type leg struct {
	info   voice.LegInfo
	cancel context.CancelFunc
	done   chan struct{}
	runErr error // valid once done is closed

	mu     sync.Mutex
	frames int
	dtmf   []string
}

func (l *leg) Audio([]byte)      { l.mu.Lock(); l.frames++; l.mu.Unlock() }
func (l *leg) Mark(string)       {}
func (l *leg) DTMF(d string)     { l.mu.Lock(); l.dtmf = append(l.dtmf, d); l.mu.Unlock() }
func (l *leg) Malformed(_ error) {}

func (l *leg) counts() (frames int, dtmf []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.frames, slices.Clone(l.dtmf)
}

// wsConn is one stream the bare /ws server accepted.
type wsConn struct {
	mode    string
	start   map[string]any
	gotStop bool // valid once done is closed
	done    chan struct{}
}

func newHandset(t *testing.T) *handset {
	t.Helper()
	h := &handset{t: t, token: DefaultAuthToken, legs: make(chan *leg, 1024), wss: make(chan *wsConn, 64),
		docs: map[string]doc{}, cbCode: http.StatusNoContent}
	tw := twilio.New(twilio.Options{AuthToken: h.token, Admit: h.admit, Memory: carriertest.NewMemory()})
	mux := http.NewServeMux()
	tw.Register(mux)
	mux.HandleFunc("/cb", func(w http.ResponseWriter, _ *http.Request) {
		h.mu.Lock()
		code := h.cbCode
		h.mu.Unlock()
		w.WriteHeader(code)
	})
	mux.HandleFunc("/twiml/{name}", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		d, ok := h.docs[r.PathValue("name")]
		h.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", cmpOr(d.ctype, "text/xml"))
		w.WriteHeader(cmpInt(d.status, http.StatusOK))
		_, _ = w.Write([]byte(d.body))
	})
	mux.HandleFunc("/ws/{mode}", h.bareStream)
	h.srv = httptest.NewServer(h.record(mux))
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() { // Handset's side of any leg still up ends with the test
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, l := range h.all {
			l.cancel()
		}
	})
	return h
}

func cmpInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (h *handset) url(path string) string { return h.srv.URL + path }

func (h *handset) wsURL(mode string) string {
	return "ws" + strings.TrimPrefix(h.srv.URL, "http") + "/ws/" + mode
}

func (h *handset) setDoc(name string, d doc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.docs[name] = d
}

// record notes every request and checks its signature before the handler runs.
func (h *handset) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme := "http"
		if r.Header.Get("Upgrade") != "" {
			scheme = "ws"
		}
		full := scheme + "://" + r.Host + r.URL.RequestURI()
		hit := hit{Method: r.Method, URL: full, Sig: r.Header.Get(twiliocaller.SignatureHeader)}
		var signed url.Values
		if r.Method == http.MethodPost {
			_ = r.ParseForm()
			hit.Form, signed = r.PostForm, r.PostForm
		} else {
			hit.Form = r.URL.Query()
		}
		hit.SigOK = twilio.ValidSignature(h.token, full, signed, hit.Sig)
		h.mu.Lock()
		h.hits = append(h.hits, hit)
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// hitsOn lists the recorded requests whose path is path.
func (h *handset) hitsOn(path string) []hit {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []hit
	for _, x := range h.hits {
		if u, _ := url.Parse(x.URL); u.Path == path {
			out = append(out, x)
		}
	}
	return out
}

func (h *handset) admit(l voice.Leg) (<-chan struct{}, error) {
	ctx, cancel := context.WithCancel(context.Background())
	lg := &leg{info: l.Info(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(lg.done)
		lg.runErr = l.Run(ctx, lg)
	}()
	h.mu.Lock()
	h.all = append(h.all, lg)
	h.mu.Unlock()
	h.legs <- lg
	return lg.done, nil
}

// leg waits for the next call the carrier admits.
func (h *handset) leg(t *testing.T) *leg {
	t.Helper()
	select {
	case l := <-h.legs:
		return l
	case <-time.After(10 * time.Second):
		t.Fatal("no call reached Handset")
		return nil
	}
}

func (h *handset) bareStream(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	wc := &wsConn{mode: r.PathValue("mode"), done: make(chan struct{})}
	defer close(wc.done)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var m map[string]any
		_, data, err := conn.Read(ctx)
		if err != nil {
			return
		}
		_ = json.Unmarshal(data, &m)
		switch m["event"] {
		case "start":
			wc.start, _ = m["start"].(map[string]any)
			h.wss <- wc
			if wc.mode == "close" {
				_ = conn.Close(websocket.StatusNormalClosure, "bot done")
				return
			}
		case "stop":
			wc.gotStop = true
		}
	}
}

func (h *handset) ws(t *testing.T) *wsConn {
	t.Helper()
	select {
	case c := <-h.wss:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no stream reached the bare stream server")
		return nil
	}
}

// startCalls serves a fake that calls h; Close runs before the servers close.
func startCalls(t *testing.T, h *handset, o Options) (*Server, *httptest.Server) {
	t.Helper()
	if o.Numbers == nil {
		o.Numbers = []Number{numA, numC}
	}
	o.HTTPClient = h.srv.Client()
	o.InsecureStreamURL = true
	s := New(o)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(s.Close)
	return s, ts
}

const (
	callsPath = acctPath + "/Calls.json"
	callee    = "+14155550199"
)

func callPath(sid string) string { return acctPath + "/Calls/" + sid + ".json" }

// callForm is a create form from numA to callee plus kv pairs (repeats allowed).
func callForm(kv ...string) url.Values {
	v := url.Values{"To": {callee}, "From": {numA.PhoneNumber}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

var allEvents = []string{"StatusCallbackEvent", "initiated", "StatusCallbackEvent", "ringing",
	"StatusCallbackEvent", "answered", "StatusCallbackEvent", "completed"}

func withEvents(kv ...string) []string { return append(slices.Clone(allEvents), kv...) }

// create places a call and returns its sid.
func create(t *testing.T, ts *httptest.Server, form url.Values) string {
	t.Helper()
	a := post(t, ts, callsPath, form)
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	return a.body["sid"].(string)
}

func waitCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func waitDone(t *testing.T, s *Server, sid string) Call {
	t.Helper()
	c, err := s.WaitDone(waitCtx(t), sid)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOutboundCallStreamsIntoHandset(t *testing.T) {
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{Answer: func(string) Answer { return Answer{Hold: 700 * time.Millisecond} }})
	voiceURL := h.url("/twilio/voice?tenant=acme&note=a%20b")
	cbURL := h.url("/cb?leg=1")
	a := post(t, ts, callsPath, callForm(withEvents("Url", voiceURL, "StatusCallback", cbURL)...))
	if a.status != http.StatusCreated {
		t.Fatalf("create: %d %s", a.status, a.raw)
	}
	sid, _ := a.body["sid"].(string)
	if !ValidSID(sid, "CA") {
		t.Fatalf("sid %q", sid)
	}
	want := map[string]any{"status": "queued", "direction": "outbound-api", "to": callee, "from": numA.PhoneNumber,
		"account_sid": DefaultAccountSID, "duration": nil, "answered_by": nil, "end_time": nil,
		"uri": callPath(sid), "phone_number_sid": NumberSID(numA.PhoneNumber), "api_version": "2010-04-01"}
	for k, v := range want {
		if a.body[k] != v {
			t.Errorf("created %s = %#v, want %#v", k, a.body[k], v)
		}
	}
	if _, err := time.Parse(time.RFC1123Z, a.body["date_created"].(string)); err != nil {
		t.Errorf("date_created: %v", err)
	}

	lg := h.leg(t)
	c := waitDone(t, s, sid)
	if c.Status != StatusCompleted || c.HangupBy != HangupCallee || c.Streams != 1 || c.Duration != time.Second ||
		!slices.Equal(c.Verbs, []string{"Connect"}) || len(c.Errors) != 0 || c.AnsweredBy != "" {
		t.Errorf("call %+v", c)
	}
	<-lg.done
	if frames, _ := lg.counts(); frames < 10 || lg.runErr != nil {
		t.Errorf("Handset's leg: %d frames of silence, Run = %v (want a clean stop)", frames, lg.runErr)
	}
	if lg.info.CarrierRef != sid || lg.info.Direction != voice.Outbound || lg.info.To != callee {
		t.Errorf("leg info %+v", lg.info)
	}

	// The TwiML request is signed over the full URL, query included.
	hooks := h.hitsOn("/twilio/voice")
	if len(hooks) != 1 {
		t.Fatalf("%d voice webhooks", len(hooks))
	}
	hook := hooks[0]
	if hook.URL != voiceURL || !hook.SigOK || hook.Method != http.MethodPost {
		t.Errorf("webhook %s %s signed ok=%v", hook.Method, hook.URL, hook.SigOK)
	}
	if twilio.ValidSignature(h.token, h.url("/twilio/voice"), hook.Form, hook.Sig) {
		t.Error("the signature does not cover the query string")
	}
	for k, v := range map[string]string{"CallSid": sid, "AccountSid": DefaultAccountSID, "From": numA.PhoneNumber,
		"To": callee, "Caller": numA.PhoneNumber, "Called": callee, "CallStatus": "in-progress",
		"Direction": "outbound-api", "ApiVersion": "2010-04-01"} {
		if got := hook.Form.Get(k); got != v {
			t.Errorf("webhook %s = %q, want %q", k, got, v)
		}
	}
	if hook.Form.Has("AnsweredBy") {
		t.Error("AnsweredBy sent without machine detection")
	}
	if ws := h.hitsOn("/twilio/stream"); len(ws) != 1 || !ws[0].SigOK {
		t.Errorf("stream upgrade %+v", ws)
	}

	cbs := h.hitsOn("/cb")
	statuses := []string{"initiated", "ringing", "in-progress", "completed"}
	if len(cbs) != len(statuses) {
		t.Fatalf("%d status callbacks, want %d: %+v", len(cbs), len(statuses), cbs)
	}
	for i, cb := range cbs {
		f := cb.Form
		if cb.URL != cbURL || !cb.SigOK || f.Get("CallStatus") != statuses[i] || f.Get("SequenceNumber") != strconv.Itoa(i) ||
			f.Get("CallbackSource") != "call-progress-events" || f.Get("Direction") != "outbound-api" ||
			f.Get("CallSid") != sid || f.Get("ApiVersion") != "2010-04-01" || f.Has("AnsweredBy") {
			t.Errorf("callback %d: %s signed ok=%v %v", i, cb.URL, cb.SigOK, f)
		}
		if _, err := time.Parse(time.RFC1123Z, f.Get("Timestamp")); err != nil {
			t.Errorf("callback %d Timestamp: %v", i, err)
		}
		if has := f.Has("CallDuration"); has != (i == 3) {
			t.Errorf("callback %d has CallDuration: %v", i, has)
		}
	}
	if last := cbs[3].Form; last.Get("CallDuration") != "1" || last.Get("Duration") != "1" {
		t.Errorf("completed callback CallDuration=%q Duration=%q", last.Get("CallDuration"), last.Get("Duration"))
	}
	if got := c.CallbackStatuses(); !slices.Equal(got, statuses) {
		t.Errorf("recorded callbacks %v", got)
	}
	for _, cb := range c.Callbacks {
		if cb.Status != http.StatusNoContent || cb.Err != "" {
			t.Errorf("callback %s answered %d %s", cb.Event, cb.Status, cb.Err)
		}
	}

	got := get(t, ts, callPath(sid))
	if got.status != 200 || got.body["status"] != "completed" || got.body["duration"] != "1" ||
		got.body["start_time"] == nil || got.body["end_time"] == nil || got.body["answered_by"] != nil {
		t.Errorf("fetched %d %s", got.status, got.raw)
	}
	if reqs := s.Requests(); len(reqs) != 2 || reqs[0].Status != 201 || reqs[0].Form.Get("Url") != voiceURL {
		t.Errorf("requests %+v", reqs)
	}
}

func TestUnansweredOutcomes(t *testing.T) {
	outcomes := map[string]Outcome{"+14155550201": OutcomeBusy, "+14155550202": OutcomeNoAnswer, "+14155550203": OutcomeFailed}
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{Answer: func(to string) Answer { return Answer{Outcome: outcomes[to]} }})
	h.setDoc("never", doc{body: "<Response><Hangup/></Response>"})
	sip := map[Outcome]string{OutcomeBusy: "486", OutcomeNoAnswer: "487", OutcomeFailed: "500"}
	for to, outcome := range outcomes {
		t.Run(string(outcome), func(t *testing.T) {
			cb := h.url("/cb?to=" + url.QueryEscape(to))
			form := callForm(withEvents("Url", h.url("/twiml/never"), "StatusCallback", cb)...)
			form.Set("To", to)
			sid := create(t, ts, form)
			c := waitDone(t, s, sid)
			want := []string{"initiated", "ringing", string(outcome)}
			if c.Status != string(outcome) || !slices.Equal(c.CallbackStatuses(), want) || c.Streams != 0 ||
				len(c.Webhooks) != 0 || c.Duration != 0 || !c.Answered.IsZero() || c.HangupBy != "" {
				t.Errorf("call %+v", c)
			}
			final := c.Callbacks[2]
			if final.Event != "completed" || final.Params.Get("CallDuration") != "0" || final.Params.Get("SipResponseCode") != sip[outcome] {
				t.Errorf("final callback %+v", final)
			}
			if got := get(t, ts, callPath(sid)); got.body["status"] != string(outcome) || got.body["duration"] != "0" {
				t.Errorf("fetched %s", got.raw)
			}
		})
	}
	if hooks := h.hitsOn("/twiml/never"); len(hooks) != 0 {
		t.Errorf("an unanswered call fetched its TwiML: %+v", hooks)
	}
}

func TestRingTimeoutAndDefaultCallbacks(t *testing.T) {
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{Answer: func(string) Answer { return Answer{RingFor: time.Minute} }})
	// Without StatusCallbackEvent Twilio reports only the end.
	sid := create(t, ts, callForm("Twiml", "<Response><Hangup/></Response>", "Timeout", "1", "StatusCallback", h.url("/cb")))
	c := waitDone(t, s, sid)
	if c.Status != StatusNoAnswer || !slices.Equal(c.CallbackStatuses(), []string{"no-answer"}) || c.Timeout != time.Second {
		t.Errorf("call %+v", c)
	}
	if seq := c.Callbacks[0].Params.Get("SequenceNumber"); seq != "0" {
		t.Errorf("first callback SequenceNumber %q", seq)
	}
}

func TestMachineDetection(t *testing.T) {
	cases := []struct {
		mode, by, want string
	}{
		{"DetectMessageEnd", "machine_end_beep", "machine_end_beep"},
		{"DetectMessageEnd", "machine_start", "machine_end_other"},
		{"Enable", "machine_end_beep", "machine_start"},
		{"Enable", "", "human"},
		{"Enable", "fax", "fax"},
		{"", "machine_start", ""}, // no detection asked: no verdict reported
	}
	for _, tc := range cases {
		t.Run(tc.mode+"/"+tc.by, func(t *testing.T) {
			h := newHandset(t)
			s, ts := startCalls(t, h, Options{Answer: func(string) Answer { return Answer{AnsweredBy: tc.by} }})
			h.setDoc("amd", doc{body: `<Response><Say>Hello</Say><Hangup/></Response>`})
			form := callForm(withEvents("Url", h.url("/twiml/amd"), "StatusCallback", h.url("/cb"))...)
			if tc.mode != "" {
				form.Set("MachineDetection", tc.mode)
			}
			sid := create(t, ts, form)
			c := waitDone(t, s, sid)
			if c.AnsweredBy != tc.want || c.MachineDetection != tc.mode || !slices.Equal(c.Verbs, []string{"Say", "Hangup"}) {
				t.Errorf("call %+v", c)
			}
			hooks := h.hitsOn("/twiml/amd")
			if len(hooks) != 1 || !hooks[0].SigOK || hooks[0].Form.Get("AnsweredBy") != tc.want || hooks[0].Form.Has("AnsweredBy") != (tc.want != "") {
				t.Errorf("webhook %+v", hooks)
			}
			for _, cb := range c.Callbacks {
				afterAnswer := cb.Event == "answered" || cb.Event == "completed"
				if got := cb.Params.Get("AnsweredBy"); got != map[bool]string{true: tc.want, false: ""}[afterAnswer] {
					t.Errorf("%s callback AnsweredBy %q", cb.Event, got)
				}
			}
			want := any(nil)
			if tc.want != "" {
				want = tc.want
			}
			if got := get(t, ts, callPath(sid)); got.body["answered_by"] != want {
				t.Errorf("answered_by %#v, want %#v", got.body["answered_by"], want)
			}
		})
	}
}

func TestTalkDrivesTheCallee(t *testing.T) {
	h := newHandset(t)
	talked := make(chan string, 1)
	s, ts := startCalls(t, h, Options{Answer: func(string) Answer {
		return Answer{Talk: func(ctx context.Context, c *twiliocaller.Call) error {
			talked <- c.CallSid()
			if err := c.DTMF("7"); err != nil {
				return err
			}
			return c.SayAndWait(ctx, twiliocaller.Silence(200*time.Millisecond))
		}}
	}})
	sid := create(t, ts, callForm("Url", h.url("/twilio/voice")))
	lg := h.leg(t)
	c := waitDone(t, s, sid)
	if got := <-talked; got != sid {
		t.Errorf("Talk got call %s, want %s", got, sid)
	}
	<-lg.done
	if frames, dtmf := lg.counts(); !slices.Equal(dtmf, []string{"7"}) || frames < 10 {
		t.Errorf("Handset heard %d frames and keys %v", frames, dtmf)
	}
	if c.HangupBy != HangupCallee || c.Status != StatusCompleted || len(c.Errors) != 0 {
		t.Errorf("call %+v", c)
	}

	// A Talk error is recorded and the callee hangs up.
	s2, ts2 := startCalls(t, h, Options{Answer: func(string) Answer {
		return Answer{Talk: func(context.Context, *twiliocaller.Call) error { return errors.New("callee lost the plot") }}
	}})
	sid = create(t, ts2, callForm("Url", h.url("/twilio/voice")))
	c = waitDone(t, s2, sid)
	if len(c.Errors) != 1 || c.Errors[0].Code != CodeCallee || !strings.Contains(c.Errors[0].Message, "lost the plot") {
		t.Errorf("errors %+v", c.Errors)
	}
}

// holdForever keeps the callee on the line until the stream ends.
func holdForever(string) Answer {
	return Answer{Talk: func(ctx context.Context, _ *twiliocaller.Call) error { <-ctx.Done(); return nil }}
}

// liveStream waits until call sid has a media stream up.
func liveStream(t *testing.T, s *Server, sid string) *twiliocaller.Call {
	t.Helper()
	if _, err := s.WaitCall(waitCtx(t), sid, func(c Call) bool { return c.Streams > 0 }); err != nil {
		t.Fatal(err)
	}
	tc := s.Stream(sid)
	if tc == nil {
		t.Fatal("no live stream")
	}
	return tc
}

func TestRedirectEndsTheStreamAndDials(t *testing.T) {
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{Answer: holdForever})
	sid := create(t, ts, callForm(withEvents("Url", h.url("/twilio/voice"), "StatusCallback", h.url("/cb"))...))
	lg := h.leg(t)
	tc := liveStream(t, s, sid)

	a := post(t, ts, callPath(sid), url.Values{"Twiml": {`<Response><Dial callerId="+14155550100">+14155550142</Dial></Response>`}})
	if a.status != 200 || a.body["sid"] != sid {
		t.Fatalf("redirect: %d %s", a.status, a.raw)
	}
	// By the time the update answers, Twilio has stopped the stream.
	select {
	case <-tc.Done():
	default:
		t.Error("stream still up after the redirect answered")
	}
	if tc.Snapshot().Count(twiliocaller.StopSent) != 1 {
		t.Error("no stop message before the stream closed")
	}
	<-lg.done
	if lg.runErr != nil {
		t.Errorf("Handset's leg ended with %v, want a clean stop", lg.runErr)
	}
	c := waitDone(t, s, sid)
	if c.TransferredTo != "+14155550142" || c.TransferCallerID != "+14155550100" || c.Status != StatusCompleted ||
		!slices.Equal(c.Verbs, []string{"Connect", "Dial"}) || c.HangupBy != HangupTwiML ||
		!strings.Contains(c.Twiml, "Dial") {
		t.Errorf("call %+v", c)
	}
	if got := c.CallbackStatuses(); !slices.Equal(got, []string{"initiated", "ringing", "in-progress", "completed"}) {
		t.Errorf("callbacks %v", got)
	}
	// An ended call cannot be redirected.
	a = post(t, ts, callPath(sid), url.Values{"Twiml": {"<Response><Hangup/></Response>"}})
	wantError(t, a, http.StatusBadRequest, CodeCallNotInProgress)
	if a.body["message"] != "Call is not in-progress. Cannot redirect." {
		t.Errorf("message %v", a.body["message"])
	}
}

func TestRedirectToURLWithDialNumber(t *testing.T) {
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{Answer: holdForever})
	h.setDoc("transfer", doc{body: `<Response><Say>Transferring</Say><Dial><Number>+442071838751</Number></Dial></Response>`})
	sid := create(t, ts, callForm("Url", h.url("/twilio/voice")))
	liveStream(t, s, sid)
	target := h.url("/twiml/transfer?reason=human")
	if a := post(t, ts, callPath(sid), url.Values{"Url": {target}, "Method": {"POST"}}); a.status != 200 {
		t.Fatalf("redirect: %d %s", a.status, a.raw)
	}
	c := waitDone(t, s, sid)
	if c.TransferredTo != "+442071838751" || c.URL != target || !slices.Equal(c.Verbs, []string{"Connect", "Say", "Dial"}) ||
		len(c.Webhooks) != 2 || c.Webhooks[1].URL != target {
		t.Errorf("call %+v", c)
	}
	if hooks := h.hitsOn("/twiml/transfer"); len(hooks) != 1 || !hooks[0].SigOK || hooks[0].URL != target {
		t.Errorf("redirect fetch %+v", hooks)
	}
}

func TestHangup(t *testing.T) {
	h := newHandset(t)
	ring := map[string]time.Duration{"+14155550301": time.Minute}
	s, ts := startCalls(t, h, Options{Answer: func(to string) Answer {
		a := holdForever(to)
		a.RingFor = ring[to]
		return a
	}})

	// In progress: Status=completed stops the stream and completes the call.
	sid := create(t, ts, callForm(withEvents("Url", h.url("/twilio/voice"), "StatusCallback", h.url("/cb"))...))
	lg := h.leg(t)
	tc := liveStream(t, s, sid)
	// canceled does not touch an answered call.
	if a := post(t, ts, callPath(sid), url.Values{"Status": {"canceled"}}); a.status != 200 || a.body["status"] != "in-progress" {
		t.Errorf("cancel of a live call: %d %s", a.status, a.raw)
	}
	a := post(t, ts, callPath(sid), url.Values{"Status": {"completed"}})
	if a.status != 200 || a.body["status"] != "completed" {
		t.Errorf("hangup answered %d %s", a.status, a.raw)
	}
	<-tc.Done()
	<-lg.done
	c := waitDone(t, s, sid)
	if c.Status != StatusCompleted || c.HangupBy != HangupAPI || tc.Snapshot().Count(twiliocaller.StopSent) != 1 {
		t.Errorf("call %+v", c)
	}
	wantError(t, post(t, ts, callPath(sid), url.Values{"Status": {"completed"}}), http.StatusBadRequest, CodeCallNotInProgress)

	// Ringing: Status=canceled ends it before anyone answers.
	form := callForm(withEvents("Url", h.url("/twilio/voice"), "StatusCallback", h.url("/cb"))...)
	form.Set("To", "+14155550301")
	sid = create(t, ts, form)
	if _, err := s.WaitCall(waitCtx(t), sid, func(c Call) bool { return c.Status == StatusRinging }); err != nil {
		t.Fatal(err)
	}
	if a := post(t, ts, callPath(sid), url.Values{"Status": {"canceled"}}); a.status != 200 || a.body["status"] != "canceled" {
		t.Errorf("cancel answered %d %s", a.status, a.raw)
	}
	c = waitDone(t, s, sid)
	if c.Status != StatusCanceled || c.HangupBy != HangupAPI || len(c.Webhooks) != 0 ||
		!slices.Equal(c.CallbackStatuses(), []string{"initiated", "ringing", "canceled"}) {
		t.Errorf("canceled call %+v", c)
	}

	// A redirect before the answer replaces the document that runs when it comes. The ring
	// is on a fake clock, so the answer comes only once the redirect is in.
	clk := clock.NewFake(time.Now())
	s2, ts2 := startCalls(t, h, Options{Clock: clk, Answer: func(string) Answer { return Answer{RingFor: time.Minute} }})
	sid = create(t, ts2, callForm("Url", h.url("/twilio/voice")))
	if a := post(t, ts2, callPath(sid), url.Values{"Twiml": {`<Response><Dial>+14155550143</Dial></Response>`}}); a.status != 200 ||
		a.body["status"] == StatusInProgress {
		t.Errorf("early redirect: %d %s", a.status, a.raw)
	}
	advanceWhen(t, clk, 1, time.Minute) // the ring
	if c := waitDone(t, s2, sid); c.TransferredTo != "+14155550143" || c.Streams != 0 || len(c.Webhooks) != 0 {
		t.Errorf("early-redirected call %+v", c)
	}
}

func TestHandsetEndsTheStream(t *testing.T) {
	h := newHandset(t)
	s, ts := startCalls(t, h, Options{Answer: holdForever})
	// Handset closing the stream hands the call to what follows </Connect>.
	h.setDoc("bot", doc{body: `<Response><Connect><Stream url="` + h.wsURL("close") + `">` +
		`<Parameter name="tenant" value="acme"/></Stream></Connect><Dial>+14155550144</Dial></Response>`})
	sid := create(t, ts, callForm("Url", h.url("/twiml/bot")))
	ws := h.ws(t)
	c := waitDone(t, s, sid)
	if c.TransferredTo != "+14155550144" || !slices.Equal(c.Verbs, []string{"Connect", "Dial"}) || len(c.Errors) != 0 {
		t.Errorf("call %+v", c)
	}
	params, _ := ws.start["customParameters"].(map[string]any)
	if ws.start["callSid"] != sid || params["tenant"] != "acme" {
		t.Errorf("start %v", ws.start)
	}

	// …or to <Connect action>, resolved against the document's URL.
	h.setDoc("bot2", doc{body: `<Response><Connect action="/twiml/after?step=2"><Stream url="` + h.wsURL("close") + `"/></Connect><Say>never</Say></Response>`})
	h.setDoc("after", doc{body: `<Response><Hangup/></Response>`})
	sid = create(t, ts, callForm("Url", h.url("/twiml/bot2")))
	h.ws(t)
	c = waitDone(t, s, sid)
	if !slices.Equal(c.Verbs, []string{"Connect", "Hangup"}) || len(c.Webhooks) != 2 || c.Webhooks[1].URL != h.url("/twiml/after?step=2") {
		t.Errorf("call %+v", c)
	}
	if hooks := h.hitsOn("/twiml/after"); len(hooks) != 1 || !hooks[0].SigOK {
		t.Errorf("action fetch %+v", hooks)
	}
}

func TestCloseEndsLiveCalls(t *testing.T) {
	h := newHandset(t)
	ring := map[string]time.Duration{"+14155550301": time.Hour}
	s, ts := startCalls(t, h, Options{Answer: func(to string) Answer {
		a := holdForever(to)
		a.RingFor = ring[to]
		return a
	}})
	live := create(t, ts, callForm("Url", h.url("/twilio/voice")))
	liveStream(t, s, live)
	form := callForm("Url", h.url("/twilio/voice"))
	form.Set("To", "+14155550301")
	ringing := create(t, ts, form)
	if _, err := s.WaitCall(waitCtx(t), ringing, func(c Call) bool { return c.Status == StatusRinging }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close() // idempotent
	if c, _ := s.Call(live); !c.Done || c.Status != StatusCompleted || c.HangupBy != HangupClose {
		t.Errorf("live call after Close %+v", c)
	}
	if c, _ := s.Call(ringing); !c.Done || c.Status != StatusCanceled {
		t.Errorf("ringing call after Close %+v", c)
	}
	a := post(t, ts, callsPath, callForm("Url", h.url("/twilio/voice")))
	wantError(t, a, http.StatusServiceUnavailable, CodeInternalError)
	if len(s.Calls()) != 2 {
		t.Errorf("%d calls after a refused create", len(s.Calls()))
	}
}
