package plivosim_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/carrier/plivo/plivosim"
)

const (
	ours   = "+14155550100"
	callee = "+15550102000"
)

func ctxOf(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestSignV3Vector: a vector computed by hand from the V3 rule outside Go.
func TestSignV3Vector(t *testing.T) {
	got := plivosim.SignV3("MyAuthToken123", "https://handset.example.com/plivo/answer?handset_machine=hangup&handset_call=c1",
		url.Values{"To": {"15550102000"}, "CallUUID": {"abc-1"}, "From": {"14155550100"}}, "12345678901234567890")
	if want := "UDgZotOUHCBoVY24DpsaPRVvrLqCTmRIN+aMXsuMdyg="; got != want {
		t.Errorf("SignV3 = %s, want %s", got, want)
	}
}

// handset answers the fake's requests with doc for the answer URL and records them.
type handset struct {
	mu   sync.Mutex
	doc  func(path string) string
	seen []*http.Request
	form []url.Values
}

func (h *handset) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	h.mu.Lock()
	h.seen = append(h.seen, r)
	h.form = append(h.form, r.PostForm)
	doc := h.doc
	h.mu.Unlock()
	if doc != nil {
		if d := doc(r.URL.Path); d != "" {
			_, _ = w.Write([]byte(d))
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

type rig struct {
	fake *plivosim.Server
	api  *httptest.Server
	hs   *httptest.Server
	h    *handset
}

func newRig(t *testing.T, o plivosim.Options, doc func(path string) string) *rig {
	h := &handset{doc: doc}
	hs := httptest.NewServer(h)
	o.Numbers = append(o.Numbers, plivosim.Number{Number: ours})
	fake := plivosim.New(o)
	api := httptest.NewServer(fake)
	t.Cleanup(func() { fake.Close(); api.Close(); hs.Close() })
	return &rig{fake: fake, api: api, hs: hs, h: h}
}

// do sends a REST request with the account's credentials and decodes the JSON answer.
func (r *rig) do(t *testing.T, method, path string, form url.Values, out any) int {
	t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, _ := http.NewRequest(method, r.api.URL+"/v1/Account/"+r.fake.AuthID()+"/"+path, body)
	req.SetBasicAuth(r.fake.AuthID(), r.fake.AuthToken())
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		_ = json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

func (r *rig) dial(t *testing.T, extra url.Values) string {
	t.Helper()
	form := url.Values{"from": {"14155550100"}, "to": {"15550102000"}, "answer_url": {r.hs.URL + "/answer?x=1"},
		"hangup_url": {r.hs.URL + "/hangup"}}
	for k, v := range extra {
		form[k] = v
	}
	var out struct {
		RequestUUID string `json:"request_uuid"`
	}
	if st := r.do(t, http.MethodPost, "Call/", form, &out); st != http.StatusCreated || out.RequestUUID == "" {
		t.Fatalf("make call: %d %+v", st, out)
	}
	return out.RequestUUID
}

func ended(c plivosim.Call) bool { return plivosim.Ended(c.Status) }

const stream = `<Response><Stream bidirectional="true" keepCallAlive="true" contentType="audio/x-mulaw;rate=8000" extraHeaders="handsettoken=abc123">wss://h.example.com/plivo/stream</Stream></Response>`

// TestKeepCallAliveIsSet: without keepCallAlive Plivo falls through the document and
// hangs up once the stream opened; with it the call stays.
func TestKeepCallAliveIsSet(t *testing.T) {
	for _, keep := range []bool{true, false} {
		doc := stream
		if !keep {
			doc = strings.Replace(doc, ` keepCallAlive="true"`, "", 1)
		}
		r := newRig(t, plivosim.Options{}, func(p string) string {
			if p == "/answer" {
				return doc
			}
			return ""
		})
		ctx := ctxOf(t)
		id := r.dial(t, nil)
		c, err := r.fake.WaitCall(ctx, id, func(c plivosim.Call) bool { return len(c.Streams) == 1 || ended(c) })
		if err != nil || len(c.Streams) != 1 {
			t.Fatalf("keep %v: no stream: %+v, %v", keep, c, err)
		}
		if keep {
			if ended(c) {
				t.Errorf("keepCallAlive: the call ended %s", c.Status)
			}
			continue
		}
		c, err = r.fake.WaitCall(ctx, id, ended)
		if err != nil || c.Status != plivosim.StatusCompleted || c.HangupSource != "Plivo" {
			t.Errorf("without keepCallAlive: %+v, %v; want Plivo to hang up", c, err)
		}
	}
}

// TestStreamElementReadStrictly: Plivo's refusals and defaults.
func TestStreamElementReadStrictly(t *testing.T) {
	for name, tc := range map[string]struct {
		doc     string
		refused bool
		check   func(plivosim.StreamOrder) bool
	}{
		"url attribute":        {`<Response><Stream url="wss://h.example.com/s" keepCallAlive="true"></Stream></Response>`, true, nil},
		"bidirectional both":   {`<Response><Stream bidirectional="true" audioTrack="both" keepCallAlive="true">wss://h.example.com/s</Stream></Response>`, true, nil},
		"alaw":                 {`<Response><Stream keepCallAlive="true" contentType="audio/x-alaw;rate=8000">wss://h.example.com/s</Stream></Response>`, true, nil},
		"https text":           {`<Response><Stream keepCallAlive="true">https://h.example.com/s</Stream></Response>`, true, nil},
		"not Response":         {`<Document><Stream keepCallAlive="true">wss://h.example.com/s</Stream></Document>`, true, nil},
		"default content type": {`<Response><Stream keepCallAlive="true">wss://h.example.com/s</Stream></Response>`, false, func(o plivosim.StreamOrder) bool { return o.ContentType == "audio/x-l16;rate=8000" }},
		"bad extra headers dropped": {`<Response><Stream keepCallAlive="true" extraHeaders="token=a-b">wss://h.example.com/s</Stream></Response>`, false,
			func(o plivosim.StreamOrder) bool { return o.ExtraHeaders == "" && o.Headers == nil }},
		"long extra headers dropped": {`<Response><Stream keepCallAlive="true" extraHeaders="t=` + strings.Repeat("a", 511) + `">wss://h.example.com/s</Stream></Response>`, false,
			func(o plivosim.StreamOrder) bool { return o.ExtraHeaders == "" }},
		"extra headers read": {stream, false, func(o plivosim.StreamOrder) bool { return o.Headers["handsettoken"] == "abc123" && o.Bidirectional }},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, plivosim.Options{}, func(p string) string {
				if p == "/answer" {
					return tc.doc
				}
				return ""
			})
			ctx := ctxOf(t)
			id := r.dial(t, nil)
			c, err := r.fake.WaitCall(ctx, id, func(c plivosim.Call) bool { return len(c.Streams) == 1 || ended(c) })
			if err != nil {
				t.Fatal(err)
			}
			if tc.refused {
				if len(c.Streams) != 0 || len(c.Errors) == 0 {
					t.Errorf("accepted: %+v", c)
				}
				return
			}
			if len(c.Streams) != 1 || !tc.check(c.Streams[0]) {
				t.Errorf("stream %+v, errors %v", c.Streams, c.Errors)
			}
		})
	}
}

// TestCallbacksSignedAndShaped: every request to Handset is V3-signed with a fresh nonce
// and carries Plivo's parameters; the request id comes before the CallUUID.
func TestCallbacksSignedAndShaped(t *testing.T) {
	r := newRig(t, plivosim.Options{}, func(p string) string {
		if p == "/answer" {
			return `<Response><Wait length="1"/></Response>`
		}
		return ""
	})
	ctx := ctxOf(t)
	id := r.dial(t, url.Values{"ring_url": {r.hs.URL + "/ring"}})
	c, err := r.fake.WaitCall(ctx, id, ended)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, cb := range c.Callbacks {
		kinds = append(kinds, cb.Kind)
	}
	if strings.Join(kinds, ",") != "ring,answer,hangup" {
		t.Fatalf("callbacks %v", kinds)
	}
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	nonces := map[string]bool{}
	for i, req := range r.h.seen {
		form := r.h.form[i]
		nonce := req.Header.Get(plivosim.NonceHeader)
		full := r.hs.URL + req.URL.RequestURI()
		if nonce == "" || nonces[nonce] || req.Header.Get(plivosim.SignatureHeader) != plivosim.SignV3(r.fake.AuthToken(), full, form, nonce) {
			t.Errorf("%s: nonce %q, signature %q", req.URL.Path, nonce, req.Header.Get(plivosim.SignatureHeader))
		}
		nonces[nonce] = true
		if form.Get("RequestUUID") != id || form.Get("CallUUID") != c.CallUUID || form.Get("From") != "14155550100" || form.Get("To") != "15550102000" {
			t.Errorf("%s: params %v", req.URL.Path, form)
		}
	}
	last := r.h.form[len(r.h.form)-1]
	if last.Get("CallStatus") != "completed" || last.Get("Event") != "Hangup" || last.Get("HangupCauseName") == "" || last.Get("BillDuration") == "" {
		t.Errorf("hangup params %v", last)
	}
}

// TestMachineVerdictAfterTheAnswer: the verdict is POSTed to machine_detection_url after
// the answer document was fetched.
func TestMachineVerdictAfterTheAnswer(t *testing.T) {
	r := newRig(t, plivosim.Options{Callee: func(string) plivosim.Callee { return plivosim.Callee{Machine: true} }}, func(p string) string {
		if p == "/answer" {
			return `<Response><Wait length="3600"/></Response>`
		}
		return ""
	})
	ctx := ctxOf(t)
	id := r.dial(t, url.Values{"machine_detection": {"true"}, "machine_detection_url": {r.hs.URL + "/machine"}})
	c, err := r.fake.WaitCall(ctx, id, func(c plivosim.Call) bool { return c.Verdict != "" })
	if err != nil || c.Verdict != "true" {
		t.Fatalf("%+v, %v", c, err)
	}
	if c.Callbacks[0].Kind != "answer" || c.Callbacks[1].Kind != "machine" || c.Callbacks[1].Params.Get("Machine") != "true" {
		t.Errorf("callbacks %+v", c.Callbacks)
	}
	if st := r.do(t, http.MethodPost, "Call/", url.Values{"from": {"14155550100"}, "to": {"15550102000"},
		"answer_url": {r.hs.URL}, "machine_detection": {"maybe"}, "machine_detection_url": {r.hs.URL}}, nil); st != http.StatusBadRequest {
		t.Errorf("an unknown machine_detection value: %d", st)
	}
}

// TestTransferFetchesTheNewDocument: POST Call/{uuid}/ legs=aleg makes the fake fetch
// aleg_url and follow its <Dial>.
func TestTransferFetchesTheNewDocument(t *testing.T) {
	r := newRig(t, plivosim.Options{}, func(p string) string {
		switch p {
		case "/answer":
			return stream
		case "/transfer":
			return `<Response><Dial callerId="+14155550100"><Number>+15550103000</Number></Dial></Response>`
		}
		return ""
	})
	ctx := ctxOf(t)
	id := r.dial(t, nil)
	c, err := r.fake.WaitCall(ctx, id, func(c plivosim.Call) bool { return len(c.Streams) == 1 })
	if err != nil {
		t.Fatal(err)
	}
	if st := r.do(t, http.MethodPost, "Call/"+c.CallUUID+"/", url.Values{"legs": {"aleg"}, "aleg_url": {r.hs.URL + "/transfer?to=x"}, "aleg_method": {"POST"}}, nil); st != http.StatusAccepted {
		t.Fatalf("transfer: %d", st)
	}
	c, err = r.fake.WaitCall(ctx, id, func(c plivosim.Call) bool { return c.TransferredTo != "" })
	if err != nil || c.TransferredTo != "+15550103000" || ended(c) {
		t.Errorf("%+v, %v", c, err)
	}
	if st := r.do(t, http.MethodDelete, "Call/"+c.CallUUID+"/", nil, nil); st != http.StatusNoContent {
		t.Errorf("hangup: %d", st)
	}
	if _, err := r.fake.WaitCall(ctx, id, ended); err != nil {
		t.Fatal(err)
	}
	if st := r.do(t, http.MethodDelete, "Call/"+c.CallUUID+"/", nil, nil); st != http.StatusNotFound {
		t.Errorf("hanging up again: %d, want 404", st)
	}
	if st := r.do(t, http.MethodPost, "Call/"+c.CallUUID+"/", url.Values{"legs": {"aleg"}, "aleg_url": {r.hs.URL}}, nil); st != http.StatusNotFound {
		t.Errorf("transferring an ended call: %d, want 404", st)
	}
}

// TestOpenStreamSeam: OpenStream gets the order and a context that ends with the call.
func TestOpenStreamSeam(t *testing.T) {
	opened := make(chan plivosim.StreamOrder, 1)
	closed := make(chan struct{})
	r := newRig(t, plivosim.Options{OpenStream: func(ctx context.Context, o plivosim.StreamOrder) error {
		opened <- o
		<-ctx.Done()
		close(closed)
		return nil
	}}, func(p string) string {
		if p == "/answer" {
			return stream
		}
		return ""
	})
	ctx := ctxOf(t)
	id := r.dial(t, nil)
	var o plivosim.StreamOrder
	select {
	case o = <-opened:
	case <-ctx.Done():
		t.Fatal("no stream opened")
	}
	if o.URL != "wss://h.example.com/plivo/stream" || o.CallUUID == "" || o.ContentType != "audio/x-mulaw;rate=8000" {
		t.Errorf("order %+v", o)
	}
	if st := r.do(t, http.MethodDelete, "Call/"+o.CallUUID+"/", nil, nil); st != http.StatusNoContent {
		t.Fatalf("hangup: %d", st)
	}
	select {
	case <-closed:
	case <-ctx.Done():
		t.Fatal("the stream's context outlived the call")
	}
	if c, _ := r.fake.WaitCall(ctx, id, ended); c.HangupSource != "API" {
		t.Errorf("%+v", c)
	}
}

// TestRESTErrors: bad credentials and unknown resources answer Plivo's error body.
func TestRESTErrors(t *testing.T) {
	r := newRig(t, plivosim.Options{}, nil)
	req, _ := http.NewRequest(http.MethodGet, r.api.URL+"/v1/Account/"+r.fake.AuthID()+"/", nil)
	req.SetBasicAuth(r.fake.AuthID(), "wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || body["api_id"] == nil || body["error"] == nil {
		t.Errorf("bad credentials: %d %v", resp.StatusCode, body)
	}
	for _, p := range []string{"Number/" + ours + "/", "Number/15550000000/", "Call/nope/?status=live", "Application/1/"} {
		if st := r.do(t, http.MethodGet, p, nil, &body); st != http.StatusNotFound || body["error"] == nil {
			t.Errorf("GET %s: %d %v", p, st, body)
		}
	}
	r.fake.AddFault(plivosim.Fault{Path: "/Number/", Status: 503, Times: 1})
	if st := r.do(t, http.MethodGet, "Number/", nil, nil); st != 503 {
		t.Errorf("fault: %d", st)
	}
	if st := r.do(t, http.MethodGet, "Number/", nil, nil); st != 200 {
		t.Errorf("after the fault: %d", st)
	}
}
