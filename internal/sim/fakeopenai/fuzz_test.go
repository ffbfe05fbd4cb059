package fakeopenai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzChat: any request body gets a well-formed answer (an error envelope, a completion, or
// an event stream of JSON chunks) and is recorded; nothing panics or holds.
func FuzzChat(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"LONG"}]}]}`,
		`{"model":"x","messages":[]}`, `{"model":`, `null`,
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"STALL KEEPALIVE SLOW"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fake := New(Options{Models: []string{"m"}})
		fake.Close() // HANG and STALL give up at once
		w := httptest.NewRecorder()
		fake.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body)))
		reqs := fake.Requests()
		if len(reqs) != 1 || !reqs[0].Done || reqs[0].Aborted || reqs[0].Status != w.Code {
			t.Fatalf("record %+v for status %d", reqs, w.Code)
		}
		out := w.Body.Bytes()
		if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			if !json.Valid(out) {
				t.Fatalf("status %d: body is not JSON: %q", w.Code, out)
			}
			return
		}
		for _, ev := range strings.Split(strings.TrimSuffix(string(out), "\n\n"), "\n\n") {
			data, ok := strings.CutPrefix(ev, "data: ")
			if ev == ": keepalive" {
				continue
			}
			if !ok || strings.Contains(data, "\n") || (data != "[DONE]" && !json.Valid([]byte(data))) {
				t.Fatalf("bad event %q", ev)
			}
		}
	})
}
