package dashboard

import (
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// someCalls are an inbound call from a known number, an outbound one, and a withheld caller.
func someCalls() *fakeSource {
	at := time.Date(2026, 5, 5, 10, 0, 0, 0, time.UTC)
	return &fakeSource{calls: []store.Call{
		{ID: "c_in", Carrier: "twilio", Direction: voice.Inbound, From: "+15550102000", To: "+15550009999",
			CallerHash: "ch_alice", StartedAt: at, EndedAt: at.Add(90 * time.Second), Outcome: "caller_hangup",
			Summary: store.CallSummary{Turns: 3, Interrupted: 1}},
		{ID: "c_out", Carrier: "twilio", Direction: voice.Outbound, From: "+15550009999", To: "+15550104000",
			CallerHash: "ch_bob", StartedAt: at.Add(time.Minute), EndedAt: at.Add(2 * time.Minute), Outcome: "agent_hangup",
			Summary: store.CallSummary{Turns: 1, Stage: "tts", Problem: "the voice refused the key"}},
		{ID: "c_anon", Carrier: "twilio", Direction: voice.Inbound, From: "Anonymous", To: "+15550009999",
			StartedAt: at.Add(2 * time.Minute)},
	}}
}

func TestSignInWithEachToken(t *testing.T) {
	h := newHarness(t, someCalls())
	for _, tc := range []struct {
		token, role string
		numbers     bool
	}{{adminToken, "admin", true}, {viewerToken, "viewer", false}} {
		c := browser(t)
		_, body := h.get(t, c, "/dashboard/login")
		resp, _ := h.post(t, c, "/dashboard/login", url.Values{"token": {tc.token}, "csrf": {formCSRF(t, body)}, "next": {"/dashboard"}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("%s: sign-in answered %s", tc.role, resp.Status)
		}
		ck := cookieNamed(resp, sessionCookie)
		if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/dashboard" || ck.Secure ||
			ck.MaxAge != int(sessionAge.Seconds()) || len(ck.Value) < 40 {
			t.Fatalf("%s: session cookie %+v", tc.role, ck)
		}
		resp, body = h.get(t, c, "/dashboard")
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Signed in as "+tc.role) {
			t.Fatalf("%s: calls page %s\n%s", tc.role, resp.Status, body)
		}
		for _, n := range []string{"5550102000", "5550104000"} { // html/template writes + as &#43;
			if strings.Contains(body, n) != tc.numbers {
				t.Errorf("%s: number %s shown = %v", tc.role, n, !tc.numbers)
			}
		}
		if !tc.numbers && (!strings.Contains(body, "ch_alice") || !strings.Contains(body, "ch_bob")) {
			t.Errorf("viewer: caller hashes missing")
		}
		if !strings.Contains(body, "withheld") || strings.Contains(body, "Anonymous") {
			t.Errorf("%s: the withheld caller is not shown as withheld", tc.role)
		}
		if strings.Contains(body, "5550009999") {
			t.Errorf("%s: the calls list shows Handset's own line instead of the person", tc.role)
		}
	}
}

func TestSecureCookieBehindHTTPS(t *testing.T) {
	h := newHarness(t, someCalls(), func(o *Options) { o.Secure = true })
	c := browser(t)
	resp, body := h.get(t, c, "/dashboard/login")
	if ck := cookieNamed(resp, loginCookie); ck == nil || !ck.Secure {
		t.Fatalf("login cookie %+v", ck)
	}
	// The jar would not send a Secure cookie over http: send it by hand.
	csrf := formCSRF(t, body)
	resp, _ = h.post(t, browser(t), "/dashboard/login", url.Values{"token": {adminToken}, "csrf": {csrf}}, "Cookie", loginCookie+"="+csrf)
	if ck := cookieNamed(resp, sessionCookie); ck == nil || !ck.Secure {
		t.Fatalf("%s: session cookie %+v", resp.Status, ck)
	}
}

func TestWrongTokensAreRefusedAndLimited(t *testing.T) {
	h := newHarness(t, someCalls())
	c := browser(t)
	try := func(token string) *http.Response {
		_, body := h.get(t, c, "/dashboard/login")
		resp, body := h.post(t, c, "/dashboard/login", url.Values{"token": {token}, "csrf": {formCSRF(t, body)}})
		if strings.Contains(body, token) && token != "" {
			t.Errorf("the answer repeats the token tried")
		}
		return resp
	}
	for _, wrong := range []string{"nope", toolsToken, adminToken + "x", "", strings.ToUpper(adminToken)} {
		if resp := try(wrong); resp.StatusCode != http.StatusUnauthorized || cookieNamed(resp, sessionCookie) != nil {
			t.Fatalf("token %q: %s", wrong, resp.Status)
		}
	}
	// Five wrong tries used up: even the right token waits, and the wait grows.
	resp := try(adminToken)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("after five wrong tokens: %s", resp.Status)
	}
	first, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	h.clock.add(time.Duration(first) * time.Second)
	if resp := try("still wrong"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after the wait: %s", resp.Status)
	}
	resp = try(adminToken)
	second, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || second <= first {
		t.Fatalf("after a sixth wrong token: %s, waits %d then %d s", resp.Status, first, second)
	}
	// Bearer tokens share the count.
	if resp, _ := h.get(t, browser(t), "/dashboard", "Authorization", "Bearer "+adminToken); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("bearer while limited: %s", resp.Status)
	}
	h.clock.add(time.Duration(second) * time.Second)
	if resp := try(adminToken); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the right token after the wait: %s", resp.Status)
	}
}

func TestWithoutSessionBrowsersGoToSignInAndScriptsGet401(t *testing.T) {
	h := newHarness(t, someCalls())
	for _, path := range []string{"/dashboard", "/dashboard/", "/dashboard/calls/c_in", "/dashboard/live", "/dashboard/jobs",
		"/dashboard/sessions", "/dashboard/calls/c_in/recording", "/dashboard/calls/c_in/events", "/dashboard/live/events", "/dashboard/nothing"} {
		resp, _ := h.get(t, browser(t), path+"?a=1")
		want := "/dashboard/login?next=" + url.QueryEscape(safeNext(path+"?a=1"))
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Errorf("browser %s: %s to %q, want %q", path, resp.Status, resp.Header.Get("Location"), want)
		}
		resp, body := h.get(t, browser(t), path, "Accept", "*/*")
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") ||
			resp.Header.Get("WWW-Authenticate") == "" || strings.Contains(body, "c_in") {
			t.Errorf("script %s: %s %q", path, resp.Status, body)
		}
	}
	resp, _ := h.post(t, browser(t), "/dashboard/logout", url.Values{})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("logout without a session: %s", resp.Status)
	}
}

func TestSafeNextStaysLocal(t *testing.T) {
	for in, want := range map[string]string{
		"/dashboard/jobs?kind=transfer": "/dashboard/jobs?kind=transfer",
		"/dashboard/calls/c_1":          "/dashboard/calls/c_1",
		"//evil.example/dashboard":      "/dashboard",
		"https://evil.example/":         "/dashboard",
		"/\\evil.example":               "/dashboard",
		"/dashboard/../api/calls":       "/dashboard",
		"/dashboardx":                   "/dashboard",
		"javascript:alert(1)":           "/dashboard",
		"/dashboard/login?next=//evil":  "/dashboard",
		"/dashboard\r\nSet-Cookie: x=1": "/dashboard",
		"":                              "/dashboard",
	} {
		if got := safeNext(in); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", in, got, want)
		}
	}
	// Through the form: a hostile next lands on the calls page.
	h := newHarness(t, someCalls())
	c := browser(t)
	_, body := h.get(t, c, "/dashboard/login?next="+url.QueryEscape("//evil.example/x"))
	if strings.Contains(body, "evil.example") {
		t.Errorf("the sign-in form carries the hostile next")
	}
	resp, _ := h.post(t, c, "/dashboard/login", url.Values{"token": {adminToken}, "csrf": {formCSRF(t, body)}, "next": {"https://evil.example/"}})
	if resp.Header.Get("Location") != "/dashboard" {
		t.Errorf("signed in to %q", resp.Header.Get("Location"))
	}
}

func TestSignInFormNeedsItsOwnCSRFCookieAndOrigin(t *testing.T) {
	h := newHarness(t, someCalls())
	c := browser(t)
	_, body := h.get(t, c, "/dashboard/login")
	csrf := formCSRF(t, body)
	// Another site's form: no cookie of ours (a fresh browser), or a foreign Origin.
	if resp, _ := h.post(t, browser(t), "/dashboard/login", url.Values{"token": {adminToken}, "csrf": {csrf}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the CSRF cookie: %s", resp.Status)
	}
	wrong := "0" + csrf[1:]
	if csrf[0] == '0' { // the token's own first character: it would not be wrong
		wrong = "1" + csrf[1:]
	}
	if resp, _ := h.post(t, c, "/dashboard/login", url.Values{"token": {adminToken}, "csrf": {wrong}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("with a wrong CSRF token: %s", resp.Status)
	}
	// A browser under the no-referrer policy sends Origin: null, and says where the form
	// came from in Sec-Fetch-Site.
	for _, tc := range []struct {
		header []string
		ok     bool
	}{
		{[]string{"Origin", "http://evil.example"}, false},
		{[]string{"Origin", "null"}, false},
		{[]string{"Origin", "null", "Sec-Fetch-Site", "cross-site"}, false},
		{[]string{"Origin", "null", "Sec-Fetch-Site", "same-site"}, false},
		{[]string{"Origin", "", "Referer", "http://evil.example/dashboard/login"}, false},
		{[]string{"Origin", "null", "Sec-Fetch-Site", "same-origin"}, true},
	} {
		_, body = h.get(t, c, "/dashboard/login")
		resp, _ := h.post(t, c, "/dashboard/login", url.Values{"token": {adminToken}, "csrf": {formCSRF(t, body)}}, tc.header...)
		if signedIn := cookieNamed(resp, sessionCookie) != nil; signedIn != tc.ok || (!tc.ok && resp.StatusCode != http.StatusForbidden) {
			t.Errorf("sign-in with %q: %s", tc.header, resp.Status)
		}
	}
}

func TestSignOutNeedsCSRFAndEndsTheSession(t *testing.T) {
	h := newHarness(t, someCalls())
	c := h.signIn(t, adminToken)
	u, _ := url.Parse(h.srv.URL + "/dashboard")
	session := c.Jar.Cookies(u)
	_, body := h.get(t, c, "/dashboard")
	csrf := formCSRF(t, body)
	if resp, _ := h.post(t, c, "/dashboard/logout", url.Values{"csrf": {"wrong"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("logout with a wrong CSRF token: %s", resp.Status)
	}
	if resp, _ := h.post(t, c, "/dashboard/logout", url.Values{"csrf": {csrf}}, "Origin", "http://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("logout from another origin: %s", resp.Status)
	}
	if resp, _ := h.get(t, c, "/dashboard"); resp.StatusCode != http.StatusOK {
		t.Fatalf("refused logouts ended the session: %s", resp.Status)
	}
	resp, _ := h.post(t, c, "/dashboard/logout", url.Values{"csrf": {csrf}}, "Origin", "", "Referer", h.srv.URL+"/dashboard")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout: %s", resp.Status)
	}
	// The old cookie, replayed, is refused: the session ended on the server.
	replay := browser(t)
	replay.Jar.SetCookies(u, session)
	if resp, _ := h.get(t, replay, "/dashboard"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the signed-out session still works: %s", resp.Status)
	}
}

func TestSessionsExpireAndEndWithANewToken(t *testing.T) {
	h := newHarness(t, someCalls())
	c := h.signIn(t, viewerToken)
	u, _ := url.Parse(h.srv.URL + "/dashboard")
	cookies := c.Jar.Cookies(u)
	// Another server with a new viewer token refuses the old session.
	other := newHarness(t, someCalls(), func(o *Options) { o.ViewerToken = "a-new-viewer-token-000" })
	moved := browser(t)
	ou, _ := url.Parse(other.srv.URL + "/dashboard")
	moved.Jar.SetCookies(ou, cookies)
	if resp, _ := other.get(t, moved, "/dashboard"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a session of the old token: %s", resp.Status)
	}
	h.clock.add(sessionAge - time.Minute)
	if resp, _ := h.get(t, c, "/dashboard"); resp.StatusCode != http.StatusOK {
		t.Fatalf("before expiry: %s", resp.Status)
	}
	h.clock.add(2 * time.Minute)
	if resp, _ := h.get(t, c, "/dashboard"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after expiry: %s", resp.Status)
	}
}

func TestBearerTokens(t *testing.T) {
	h := newHarness(t, someCalls())
	for token, want := range map[string]int{adminToken: 200, viewerToken: 200, toolsToken: 401, "": 401} {
		resp, body := h.get(t, browser(t), "/dashboard", "Authorization", "Bearer "+token)
		if resp.StatusCode != want {
			t.Errorf("bearer %q: %s", token, resp.Status)
		}
		if token == viewerToken && strings.Contains(body, "5550102000") {
			t.Errorf("a viewer's bearer token sees numbers")
		}
	}
	if resp, _ := h.get(t, browser(t), "/dashboard", "Authorization", "Basic "+adminToken); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token without Bearer: %s", resp.Status)
	}
}

func TestForeignHostIsMisdirected(t *testing.T) {
	h := newHarness(t, someCalls())
	c := h.signIn(t, adminToken)
	for _, path := range []string{"/dashboard/login", "/dashboard", "/dashboard/static/dashboard.css"} {
		req, _ := http.NewRequest(http.MethodGet, h.srv.URL+path, nil)
		req.Host = "rebound.example:" + strings.Split(h.srv.Listener.Addr().String(), ":")[1]
		resp, body := do(t, c, req)
		if resp.StatusCode != http.StatusMisdirectedRequest || strings.Contains(body, "c_in") {
			t.Errorf("%s for a foreign host: %s", path, resp.Status)
		}
	}
}

func TestStaticFilesAreNotListed(t *testing.T) {
	h := newHarness(t, someCalls())
	if resp, body := h.get(t, browser(t), "/dashboard/static/"); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "dashboard.js") {
		t.Errorf("the static folder: %s", resp.Status)
	}
	resp, body := h.get(t, browser(t), "/dashboard/static/dashboard.css")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/css") || !strings.Contains(body, "prefers-color-scheme: dark") {
		t.Errorf("the style sheet: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}

func TestHeaders(t *testing.T) {
	h := newHarness(t, someCalls())
	c := h.signIn(t, adminToken)
	for _, path := range []string{"/dashboard/login", "/dashboard", "/dashboard/jobs", "/dashboard/static/dashboard.js"} {
		client := c
		if path == "/dashboard/login" {
			client = browser(t) // a signed-in browser is sent on
		}
		resp, _ := h.get(t, client, path)
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			strings.Contains(csp, "unsafe-inline") || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			resp.Header.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: %s, headers %v", path, resp.Status, resp.Header)
		}
		if !strings.Contains(path, "static") && resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: Cache-Control %q", path, resp.Header.Get("Cache-Control"))
		}
	}
}

// Behind a trusted proxy each client has its own allowance of wrong tokens: one client
// guessing does not lock everyone behind the proxy out.
func TestSignInLimitIsPerClientBehindAProxy(t *testing.T) {
	h := newHarness(t, someCalls(), func(o *Options) {
		o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	})
	guesser, other := "198.51.100.1", "198.51.100.2"
	for i := range 5 {
		resp, _ := h.get(t, browser(t), "/dashboard", "Authorization", "Bearer wrong-"+strconv.Itoa(i), "X-Forwarded-For", guesser)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %s", i+1, resp.Status)
		}
	}
	if resp, _ := h.get(t, browser(t), "/dashboard", "Authorization", "Bearer "+adminToken, "X-Forwarded-For", guesser); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the guesser after five wrong tokens: %s", resp.Status)
	}
	if resp, _ := h.get(t, browser(t), "/dashboard", "Authorization", "Bearer "+adminToken, "X-Forwarded-For", other); resp.StatusCode != http.StatusOK {
		t.Errorf("another client behind the same proxy: %s", resp.Status)
	}
}
