package httpagent

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/handset-voice/handset/internal/voice"
)

// MaxErrorBody is how much of an error answer's body is read for its message.
const MaxErrorBody = 64 << 10

// Describe turns an error answer's status and first bytes of body into the error's cause
// (a runtime knows its vendor's error shape).
type Describe func(status int, body []byte) error

// Send sends req under w's context and returns a 2xx response, with the silence clock
// restarted for the body. A transport failure is classified by Aborted; any other status
// is an error of voice.KindFromStatus carrying describe's reading of the body and the
// Retry-After the runtime asked for. On error the response is closed; stopping w is the
// caller's.
func Send(o Origin, client *http.Client, w *Watch, req *http.Request, describe Describe) (*http.Response, error) {
	resp, err := client.Do(req.WithContext(w.ctx))
	if err != nil {
		return nil, Aborted(o, w, false, err, "waiting for response headers")
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		_ = resp.Body.Close()
		cause := describe(resp.StatusCode, body)
		if ra := retryAfter(resp.Header.Get("Retry-After")); ra != "" {
			cause = fmt.Errorf("%w (retry after %s)", cause, ra)
		}
		return nil, o.Fail(voice.KindFromStatus(resp.StatusCode), resp.StatusCode, cause)
	}
	w.Touch()
	return resp, nil
}

// retryAfter renders a Retry-After value for an error: seconds as "N s", a date as
// given, bounded and on one line; "" when absent or unreadable.
func retryAfter(v string) string {
	v = strings.TrimSpace(v)
	if v == "" || strings.ContainsAny(v, "\r\n\x00") {
		return ""
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return ""
		}
		return strconv.Itoa(n) + " s"
	}
	if _, err := http.ParseTime(v); err != nil {
		return ""
	}
	return v
}

// MediaType returns the lower-case media type of a Content-Type ("" when absent). A value
// with broken parameters still gives what precedes them, so "text/plain; charset" reads.
func MediaType(contentType string) string {
	if strings.TrimSpace(contentType) == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	return mt
}

// CheckHeader rejects header names that are not HTTP tokens and values that would split
// the header block.
func CheckHeader(name, value string) error {
	if name == "" {
		return fmt.Errorf("empty header name")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return fmt.Errorf("header name %q is not a token", name)
		}
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("header %s: value contains a line break or NUL", name)
	}
	return nil
}

// CheckKey rejects a bearer key that would split the Authorization header.
func CheckKey(key string) error {
	if strings.ContainsAny(key, "\r\n\x00") {
		return fmt.Errorf("key contains a line break or NUL")
	}
	return nil
}

// Headers checks operator-given headers and returns them as an http.Header.
func Headers(given map[string]string) (http.Header, error) {
	h := http.Header{}
	for k, v := range given {
		if err := CheckHeader(k, v); err != nil {
			return nil, fmt.Errorf("header: %w", err)
		}
		h.Set(k, v)
	}
	return h, nil
}
