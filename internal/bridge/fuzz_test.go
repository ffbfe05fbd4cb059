package bridge

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/voice"
)

// Any body a client sends is read without a panic; what is accepted ends with the user's
// words, holds no empty message, and is filed under a bridge session whose id is plain.
func FuzzParseChat(f *testing.F) {
	for _, seed := range []string{
		`{"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","stream":true,"user":"+1 555 123 4567","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"x"}}]}]}`,
		`{"messages":[{"role":"tool","content":"42"},{"role":"user","content":null}],"call":{"id":"c/1","customer":{"number":"anonymous"}}}`,
		`{"messages":[{"role":"user","content":"x"}],"metadata":{"room":"r\u0000 1"}}`,
		`{"messages":[{"role":"user","content":7}]}`,
		`[]`, `{`, ``,
	} {
		f.Add([]byte(seed), "")
	}
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}]}`), "room-7")
	hash := func(s string) string { return "ch_" + strings.Repeat("a", 24) + "-" + string(rune('a'+len(s)%26)) }
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		req, err := parseChat(body)
		if err != nil {
			return
		}
		turn, err := req.turn()
		if err != nil {
			return
		}
		n := len(turn.history)
		if n == 0 || turn.history[n-1].Role != voice.RoleUser {
			t.Fatalf("accepted a conversation that does not end with the user: %+v", turn.history)
		}
		for _, m := range turn.history {
			if strings.TrimSpace(m.Content) == "" {
				t.Fatalf("accepted an empty message: %+v", turn.history)
			}
		}
		r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
		if !strings.ContainsAny(header, "\r\n\x00") {
			r.Header.Set(HeaderSession, header)
		}
		id := identify(r, req, hash)
		call := string(id.callID)
		if !strings.HasPrefix(call, "bridge-") || len(call) > 120 || !cleanSession.MatchString(strings.TrimPrefix(call, "bridge-")) {
			t.Fatalf("session %q from header %q", call, header)
		}
	})
}
