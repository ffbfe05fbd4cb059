package elevenlabs

import (
	"encoding/json"
	"testing"
)

var detailCases = []struct {
	body, want string
}{
	{`{"detail":{"status":"invalid_api_key","message":"Invalid API key"}}`, "Invalid API key"},
	{`{"detail":{"status":"quota_exceeded"}}`, "quota_exceeded"},
	{`{"detail":[{"loc":["body","text"],"msg":"field required","type":"value_error.missing"},{"msg":"bad model"}]}`, "field required; bad model"},
	{`{"detail":"Not Found"}`, "Not Found"},
	{`{"detail":null}`, ""},
	{`{"error":"other shape"}`, ""},
	{`<html>502 Bad Gateway</html>`, ""},
	{``, ""},
	{`{"detail":42}`, ""},
}

func TestDetailMessage(t *testing.T) {
	for _, c := range detailCases {
		if got := detailMessage([]byte(c.body)); got != c.want {
			t.Errorf("detailMessage(%s) = %q, want %q", c.body, got, c.want)
		}
	}
}

func FuzzDetailMessage(f *testing.F) {
	for _, c := range detailCases {
		f.Add([]byte(c.body))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if msg := detailMessage(b); msg != "" && !json.Valid(b) {
			t.Errorf("message %q taken from invalid JSON %q", msg, b)
		}
	})
}
