package openai

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/handset-voice/handset/internal/voice"
)

func TestParseChunk(t *testing.T) {
	tests := []struct {
		name string
		data string
		want chunk
	}{
		{"content", `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi "},"finish_reason":null}]}`, chunk{Text: "Hi "}},
		{"role only", `{"choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]}`, chunk{}},
		{"role with empty content", `{"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null}}]}`, chunk{}},
		{"null content", `{"choices":[{"index":0,"delta":{"content":null}}]}`, chunk{}},
		{"finish", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"total_tokens":3}}`, chunk{Finish: "stop"}},
		{"content and finish", `{"choices":[{"index":0,"delta":{"content":"end."},"finish_reason":"length"}]}`, chunk{Text: "end.", Finish: "length"}},
		{"usage only", `{"choices":[],"usage":{"total_tokens":3}}`, chunk{}},
		{"reasoning is not spoken", `{"choices":[{"index":0,"delta":{"reasoning_content":"hmm","reasoning":"hmm"}}]}`, chunk{}},
		{"tool calls ignored", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}`, chunk{}},
		{"index 0 wins", `{"choices":[{"index":1,"delta":{"content":"B"}},{"index":0,"delta":{"content":"A"}}]}`, chunk{Text: "A"}},
		{"unicode escapes", `{"choices":[{"index":0,"delta":{"content":"caf\u00e9 \ud83d\udcde"}}]}`, chunk{Text: "café 📞"}},
		{"error object", `{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`,
			chunk{Err: &vendorError{Message: "overloaded", Type: "server_error"}}},
		{"error with numeric code (vLLM)", `{"error":{"object":"error","message":"bad","type":"BadRequestError","code":400}}`,
			chunk{Err: &vendorError{Message: "bad", Type: "BadRequestError", Code: "400"}}},
		{"error as a string", `{"error":"model not loaded"}`, chunk{Err: &vendorError{Message: "model not loaded"}}},
		{"null error", `{"error":null,"choices":[{"index":0,"delta":{"content":"x"}}]}`, chunk{Text: "x"}},
		{"hermes failure chunk", `{"choices":[{"index":0,"delta":{},"finish_reason":"error"}],"error":{"message":"agent crashed","type":"server_error"}}`,
			chunk{Finish: "error", Err: &vendorError{Message: "agent crashed", Type: "server_error"}}},
	}
	for _, tt := range tests {
		got, err := parseChunk([]byte(tt.data))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(chunk{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	for _, bad := range []string{"", "{", "[DONE", `{"choices":{}}`, `{"choices":[{"delta":{"content":5}}]}`, "null x"} {
		if _, err := parseChunk([]byte(bad)); err == nil {
			t.Errorf("parseChunk(%q) succeeded", bad)
		}
	}
}

func TestVendorErrorKind(t *testing.T) {
	tests := []struct {
		e    vendorError
		want voice.ErrorKind
	}{
		{vendorError{Type: "server_error"}, voice.KindTransient},
		{vendorError{}, voice.KindTransient},
		{vendorError{Type: "invalid_request_error"}, voice.KindBadInput},
		{vendorError{Type: "invalid_request_error", Code: "invalid_api_key"}, voice.KindAuth},
		{vendorError{Type: "gateway_auth_error", Code: "gateway_auth_failed"}, voice.KindAuth},
		{vendorError{Type: "rate_limit_error", Code: "rate_limit_exceeded"}, voice.KindQuota},
		{vendorError{Type: "insufficient_quota"}, voice.KindQuota},
		{vendorError{Code: "model_not_found"}, voice.KindBadInput},
		{vendorError{Type: "BadRequestError", Code: "400"}, voice.KindBadInput},
		{vendorError{Code: "503"}, voice.KindTransient},
		{vendorError{Code: "429"}, voice.KindQuota},
		{vendorError{Type: "timeout"}, voice.KindTimeout},
	}
	for _, tt := range tests {
		if got := tt.e.kind(); got != tt.want {
			t.Errorf("%+v: kind %v, want %v", tt.e, got, tt.want)
		}
	}
}

func TestErrorFromBody(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"error":{"message":"Incorrect API key provided: sk-a****b.","type":"invalid_request_error","code":"invalid_api_key"}}`,
			"Incorrect API key provided: sk-a****b. [invalid_api_key]"},
		{`{"error":"model 'llama9' not found, try pulling it first"}`, "model 'llama9' not found, try pulling it first"},
		{`{"message":"Too many requests"}`, "Too many requests"},
		{"<html>502 Bad Gateway</html>\n", "<html>502 Bad Gateway</html>"},
		{"", "empty error body"},
	}
	for _, tt := range tests {
		if got := errorFromBody([]byte(tt.body)).Error(); got != tt.want {
			t.Errorf("errorFromBody(%q) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

// FuzzParseChunk: any payload parses or fails cleanly; what parses survives the stream.
func FuzzParseChunk(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"error":{"message":"x","type":"server_error","code":503}}`,
		`{"error":"x"}`, `{"choices":[{"index":0,"message":{"content":"whole"}}]}`, `[]`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseChunk(data)
		if err != nil {
			return
		}
		if c.Err != nil {
			if len(c.Err.Message) > maxErrorMessage+len("…") {
				t.Fatalf("error message of %d bytes kept", len(c.Err.Message))
			}
			_ = c.Err.Error()
			_ = c.Err.kind()
		}
		_, _, _ = parseCompletion(data)
		_ = errorFromBody(data).Error()
	})
}
