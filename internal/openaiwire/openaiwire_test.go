package openaiwire

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/handset-voice/handset/internal/voice"
)

var errorCases = []struct {
	body   string
	status int
	want   string
}{
	{`{"error":{"message":"Incorrect API key provided: sk-ab*****1234.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, 401, "Incorrect API key provided: sk-ab*****1234."},
	{`{"error":{"message":"","type":"server_error","param":null,"code":"overloaded"}}`, 503, "overloaded"},
	{`{"error":"model not loaded"}`, 500, "model not loaded"},
	{`{"detail":"Model 'whisper-1' is not installed locally."}`, 404, "Model 'whisper-1' is not installed locally."},
	{`{"detail":{"error":"validation_error","message":"Voice 'x' not found.","type":"invalid_request_error"}}`, 400, "Voice 'x' not found."},
	{`{"detail":[{"loc":["body","file"],"msg":"Field required","type":"missing"},{"msg":"bad model"}]}`, 422, "Field required; bad model"},
	{`{"message":"top-level message"}`, 400, "top-level message"},
	{`upstream connect error`, 503, "upstream connect error"},
	{`<html><body>502 Bad Gateway</body></html>`, 502, "Bad Gateway"},
	{``, 429, "Too Many Requests"},
	{`{"detail":null}`, 500, "Internal Server Error"},
	{`{"error":{"message":` + `"` + strings.Repeat("é", 400) + `"}}`, 400, strings.Repeat("é", 148) + "…"},
	{`{"error":{"message":"Invalid 'input': string too long.","type":"invalid_request_error","param":"input","code":"string_above_max_length"}}`, 400, "Invalid 'input': string too long."},
	{`{"detail":{"error":"processing_error","message":"CUDA out of memory","type":"server_error"}}`, 500, "CUDA out of memory"},
	{`{"detail":[{"loc":["body","voice"],"msg":"Field required","type":"missing"}]}`, 422, "Field required"},
	{`{"detail":"Unsupported model: tts-2"}`, 400, "Unsupported model: tts-2"},
	{`overloaded`, 503, "overloaded"},
	{`<html>`, 502, "Bad Gateway"},
	{``, 401, "Unauthorized"},
}

func TestErrorMessage(t *testing.T) {
	for _, c := range errorCases {
		if got := ErrorMessage([]byte(c.body), c.status); got != c.want {
			t.Errorf("ErrorMessage(%.60s, %d) = %q, want %q", c.body, c.status, got, c.want)
		}
	}
}

func FuzzErrorMessage(f *testing.F) {
	for _, c := range errorCases {
		f.Add([]byte(c.body), c.status)
	}
	f.Fuzz(func(t *testing.T, body []byte, status int) {
		msg := ErrorMessage(body, status)
		if len(msg) > voice.EchoLimit {
			t.Errorf("message of %d bytes", len(msg))
		}
		if !utf8.ValidString(msg) && json.Valid(body) {
			t.Errorf("invalid UTF-8 message %q from JSON %q", msg, body)
		}
	})
}

func TestModelList(t *testing.T) {
	ids, ok := ModelList([]byte(`{"data":[{"id":"a"},{"id":"b"},{"id":"c"}]}`))
	if !ok || len(ids) != 3 || ids[2] != "c" {
		t.Fatalf("ModelList = %v, %v", ids, ok)
	}
	if _, ok := ModelList([]byte(`{"models":["a"]}`)); ok {
		t.Error("a list in another shape read as OpenAI's")
	}
}
