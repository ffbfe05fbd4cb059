package dashboard

import (
	"crypto/sha256"
	"encoding/hex"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	adminToken  = "admin-token-0123456789"
	viewerToken = "viewer-token-0123456789"
	toolsToken  = "tools-token-0123456789"
)

// testClock is a clock tests move by hand.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type harness struct {
	srv   *httptest.Server
	src   *fakeSource
	clock *testClock
	dash  *Dashboard
}

// newHarness serves a dashboard over src on a loopback test server.
func newHarness(t *testing.T, src *fakeSource, adjust ...func(*Options)) *harness {
	t.Helper()
	clock := &testClock{t: time.Date(2026, 5, 5, 12, 0, 0, 0, time.UTC)}
	o := Options{Source: src, AdminToken: adminToken, ViewerToken: viewerToken, Now: clock.now,
		CallerHash: fakeHash}
	for _, f := range adjust {
		f(&o)
	}
	d := New(o)
	mux := http.NewServeMux()
	d.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &harness{srv: srv, src: src, clock: clock, dash: d}
}

// browser is a client with a cookie jar that does not follow redirects.
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (h *harness) get(t *testing.T, c *http.Client, path string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, h.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, c, req)
}

func (h *harness) post(t *testing.T, c *http.Client, path string, form url.Values, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", h.srv.URL)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, c, req)
}

func do(t *testing.T, c *http.Client, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := c.Do(req)
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

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// formCSRF is the CSRF token of the page's form.
func formCSRF(t *testing.T, body string) string {
	t.Helper()
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF field in the page:\n%s", body)
	}
	return html.UnescapeString(m[1])
}

// signIn signs a new browser in with token and returns it.
func (h *harness) signIn(t *testing.T, token string) *http.Client {
	t.Helper()
	c := browser(t)
	_, body := h.get(t, c, "/dashboard/login")
	resp, body := h.post(t, c, "/dashboard/login", url.Values{"token": {token}, "csrf": {formCSRF(t, body)}, "next": {"/dashboard/jobs"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/jobs" {
		t.Fatalf("sign-in: %s, Location %q\n%s", resp.Status, resp.Header.Get("Location"), body)
	}
	return c
}

func cookieNamed(resp *http.Response, name string) *http.Cookie {
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// fakeHash stands for the caller hash of a number.
func fakeHash(number string) string {
	sum := sha256.Sum256([]byte(number))
	return "ch_" + hex.EncodeToString(sum[:6])
}
