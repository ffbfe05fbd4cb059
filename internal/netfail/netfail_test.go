package netfail

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// get fetches url with a short overall limit, returning the client's error.
func get(t *testing.T, url string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("GET %s answered %d, want a failure", url, resp.StatusCode)
	}
	return err
}

func TestDescribe(t *testing.T) {
	// A port nothing listens on: take one, then close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	if got := Describe(get(t, closed)); got != "connection refused: nothing listens there" {
		t.Errorf("refused: %q", got)
	}

	// A server whose certificate this client does not trust.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	untrusted := get(t, srv.URL)
	if got := Describe(untrusted); !strings.HasPrefix(got, "its TLS certificate is not valid: ") || strings.Contains(got, srv.URL) {
		t.Errorf("untrusted certificate: %q, want the cause without the URL", got)
	}
	if !IsCertificate(untrusted) || IsCertificate(get(t, closed)) {
		t.Errorf("IsCertificate: %v for the untrusted certificate, %v for a refusal", IsCertificate(untrusted), IsCertificate(get(t, closed)))
	}

	if got := Describe(&net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}); got != "the host name does not resolve (nowhere.invalid)" {
		t.Errorf("unknown host: %q", got)
	}
	if got := Describe(context.DeadlineExceeded); got != "no answer in time" {
		t.Errorf("timeout: %q", got)
	}
	if got := Describe(errors.New("something else")); got != "something else" {
		t.Errorf("another failure: %q", got)
	}
}
