package fakewebhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func serve(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	fake := New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(func() { fake.Close(); srv.Close() })
	return fake, srv
}

func post(t *testing.T, ctx context.Context, url, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func turn(text string) string {
	return `{"call_id":"c1","turn":1,"caller_hash":"h","carrier":"twilio","direction":"inbound","text":"` +
		text + `","history":[{"role":"user","content":"` + text + `"}]}`
}

func TestModes(t *testing.T) {
	tests := []struct {
		opts       Options
		text       string
		wantType   string
		wantBody   string
		wantStatus int
	}{
		{Options{}, "hi there", "text/plain; charset=utf-8", "You said: hi there.", 200},
		{Options{}, "JSON hi", "application/json", `{"text":"You said: JSON hi."}` + "\n", 200},
		{Options{Mode: ModeJSON, JSONField: "reply", Hangup: true}, "bye", "application/json", `{"hangup":true,"reply":"You said: bye."}` + "\n", 200},
		{Options{}, "SSE hi", "text/event-stream", "data: You \n\ndata: said: \n\ndata: SSE \n\ndata: hi.\n\ndata: [DONE]\n\n", 200},
		{Options{Mode: ModeSSE, SSEJSON: true}, "ok", "text/event-stream", `data: {"text":"You "}` + "\n\n" + `data: {"text":"said: "}` + "\n\n" + `data: {"text":"ok."}` + "\n\ndata: [DONE]\n\n", 200},
		{Options{Mode: ModeSSE}, "PLAIN hi", "text/plain; charset=utf-8", "You said: PLAIN hi.", 200},
		{Options{}, "please FAIL500", "", "", 500},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			_, srv := serve(t, tt.opts)
			resp, body := post(t, t.Context(), srv.URL, turn(tt.text), nil)
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if tt.wantStatus != 200 {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != tt.wantType {
				t.Errorf("Content-Type %q, want %q", ct, tt.wantType)
			}
			if body != tt.wantBody {
				t.Errorf("body %q, want %q", body, tt.wantBody)
			}
		})
	}
}

func TestRecordsRequests(t *testing.T) {
	fake, srv := serve(t, Options{Reply: func(r Request) string { return "turn " + r.CallID }})
	_, body := post(t, t.Context(), srv.URL, turn("hello"), map[string]string{"X-Test": "1"})
	if body != "turn c1" {
		t.Errorf("body %q", body)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.CallID != "c1" || r.Turn != 1 || r.CallerHash != "h" || r.Carrier != "twilio" ||
		r.Direction != "inbound" || r.Text != "hello" || len(r.History) != 1 ||
		r.History[0] != (Message{Role: "user", Content: "hello"}) {
		t.Errorf("decoded %+v", r)
	}
	if len(r.Fields) != 7 || r.Header.Get("X-Test") != "1" || r.Status != 200 || !r.Done || r.Aborted {
		t.Errorf("recorded %+v", r)
	}
}

func TestKey(t *testing.T) {
	fake, srv := serve(t, Options{Key: "k"})
	if resp, _ := post(t, t.Context(), srv.URL, turn("hi"), nil); resp.StatusCode != 401 {
		t.Errorf("no key: status %d", resp.StatusCode)
	}
	if resp, _ := post(t, t.Context(), srv.URL, turn("hi"), map[string]string{"Authorization": "Bearer k"}); resp.StatusCode != 200 {
		t.Errorf("key: status %d", resp.StatusCode)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("%d requests recorded", n)
	}
}

func TestBadJSON(t *testing.T) {
	_, srv := serve(t, Options{})
	if resp, _ := post(t, t.Context(), srv.URL, `{"turn":"one"}`, nil); resp.StatusCode != 400 {
		t.Errorf("status %d", resp.StatusCode)
	}
}

func TestHangUntilClientLeaves(t *testing.T) {
	fake, srv := serve(t, Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(turn("HANG")))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	if err := fake.AwaitRequests(wctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("HANG answered")
	}
	if err := fake.AwaitAborted(wctx, 1); err != nil {
		t.Fatal(err)
	}
}

func TestSlowPieces(t *testing.T) {
	_, srv := serve(t, Options{SlowEvery: time.Millisecond})
	_, body := post(t, t.Context(), srv.URL, turn("go SLOW"), nil)
	if body != "You said: go SLOW." {
		t.Errorf("body %q", body)
	}
}

func TestMagicWordsWholeWords(t *testing.T) {
	got := magicWords("SSE, JSONx FAIL500! sse HANG")
	if !got[MagicSSE] || got[MagicJSON] || !got[MagicFail500] || !got[MagicHang] || len(got) != 3 {
		t.Errorf("magic words %v", got)
	}
}

func TestBadJSONAnswerBreaksOff(t *testing.T) {
	_, srv := serve(t, Options{})
	resp, body := post(t, t.Context(), srv.URL, turn("tell me BADJSON"), nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var v any
	if err := json.Unmarshal([]byte(body), &v); err == nil {
		t.Errorf("answer %q is valid JSON", body)
	}
}
