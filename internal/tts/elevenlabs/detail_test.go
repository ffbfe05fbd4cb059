package elevenlabs

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
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

// A huge detail (a proxy echoing the request) is cut to a few hundred bytes, on a rune.
func TestErrorMessageIsBounded(t *testing.T) {
	huge := strings.Repeat("é", 15_000) // 30 KB a message: the answer is read up to 64 KB
	for _, body := range []string{`{"detail":{"message":"` + huge + `"}}`, `{"detail":"` + huge + `"}`,
		`{"detail":[{"msg":"` + huge + `"},{"msg":"` + huge + `"}]}`} {
		resp := &http.Response{StatusCode: 400, Body: io.NopCloser(strings.NewReader(body))}
		msg := errorMessage(resp)
		if len(msg) > 300 || !strings.HasSuffix(msg, "é…") || !utf8.ValidString(msg) {
			t.Errorf("errorMessage(%.40s…) is %d bytes: %.80q", body, len(msg), msg)
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
