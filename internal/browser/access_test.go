package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/voice"
)

// errRefused is what the tests' Admit answers: the socket was accepted, the call refused,
// so a dial that reaches the close frame proves every check before Admit passed.
var errRefused = errors.New("test: refused after the checks")

// serveChannel serves a Channel made from opts on a listener at listen (127.0.0.1:0 when
// empty); its Admit refuses every call.
func serveChannel(t *testing.T, listen string, opts Options) (*httptest.Server, string) {
	t.Helper()
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Rate == (Rate{}) {
		opts.Rate = Rate{Burst: 1000, Every: time.Millisecond} // these tests dial often; limit_test.go tests the rate
	}
	if opts.Admit == nil {
		opts.Admit = func(voice.Leg) (<-chan struct{}, error) { return nil, errRefused }
	}
	mux := http.NewServeMux()
	New(opts).Register(mux)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return srv, port
}

// get requests path at addr (host:port) with the given Host header.
func get(t *testing.T, client *http.Client, addr, host, path string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// dialSocket opens the media socket at addr with the given Host, Origin and client; it
// returns the HTTP status of a refused handshake, or 101 and the close the server sent.
func dialSocket(t *testing.T, client *http.Client, addr, host, origin, query string) (int, websocket.CloseError) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	h.Set("Host", host)
	conn, resp, err := websocket.Dial(ctx, "ws://"+addr+"/browser/ws"+query, &websocket.DialOptions{HTTPClient: client, HTTPHeader: h, Host: host})
	if err != nil {
		if resp == nil {
			t.Fatalf("dial: %v", err)
		}
		return resp.StatusCode, websocket.CloseError{}
	}
	defer conn.CloseNow()
	_, _, err = conn.Read(ctx)
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("after the handshake: %v, want a close frame", err)
	}
	return http.StatusSwitchingProtocols, ce
}

// TestHostCheck: the page, its files, its icon and its socket answer only to the names
// Handset is reached by: the loopback names on a loopback connection (with its port), the
// public URL's host, HANDSET_BROWSER_HOSTS and the listen address's name. A rebinding
// site's name is refused with 421 and says which setting would accept it.
func TestHostCheck(t *testing.T) {
	opts := Options{
		Listen: "myhost.lan:0",
		Hosts:  []string{"voice.example.com", "voice.lan:9000", "[fd00::1]:8080", "Mixed.Case.Lan."},
	}
	srv, port := serveChannel(t, "", opts)
	addr := srv.Listener.Addr().String()
	other := fmt.Sprint(mustPort(t, port) + 1)
	cases := []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:" + port, true},
		{"localhost:" + port, true},
		{"LocalHost.:" + port, true},
		{"[::1]:" + port, true},
		{"[0:0::1]:" + port, true},
		{"myhost.lan:" + port, true},
		{"voice.example.com", true},
		{"voice.example.com:443", true},
		{"VOICE.example.com:8443", true},
		{"voice.lan:9000", true},
		{"[fd00::1]:8080", true},
		{"[FD00:0::1]:8080", true},
		{"mixed.case.lan:" + port, true},

		{"evil.example:" + port, false}, // DNS rebinding: the attacker's name, our address
		{"evil.example", false},
		{"localhost.evil.example:" + port, false},
		{"localhost:" + other, false}, // another port on this machine
		{"localhost", false},          // port 80, not this one
		{"127.0.0.1", false},
		{"127.0.0.2:" + port, false},
		{"myhost.lan:" + other, false},
		{"voice.lan:9001", false},
		{"voice.lan", false},
		{"[fd00::1]:8081", false},
		{"[fd00::2]:8080", false},
		{"192.0.2.2:" + port, false}, // not the address this connection reached
		{"[::1", false},
	}
	client := &http.Client{}
	for _, tc := range cases {
		for _, path := range []string{"/", "/browser/app.js", "/browser/style.css", "/favicon.ico"} {
			resp, body := get(t, client, addr, tc.host, path)
			switch {
			case tc.ok && resp.StatusCode != http.StatusOK:
				t.Errorf("Host %s %s: %d %s", tc.host, path, resp.StatusCode, body)
			case !tc.ok && resp.StatusCode != http.StatusMisdirectedRequest:
				t.Errorf("Host %s %s: %d, want 421", tc.host, path, resp.StatusCode)
			case !tc.ok && !strings.Contains(body, "HANDSET_BROWSER_HOSTS"):
				t.Errorf("Host %s %s: the refusal does not say what to do: %q", tc.host, path, body)
			}
		}
		origin := "http://" + tc.host
		status, ce := dialSocket(t, client, addr, tc.host, origin, "")
		switch {
		case tc.ok && (status != http.StatusSwitchingProtocols || ce.Reason != errRefused.Error()):
			t.Errorf("socket for Host %s: %d %v", tc.host, status, ce)
		case !tc.ok && status != http.StatusMisdirectedRequest:
			t.Errorf("socket for Host %s: %d, want 421", tc.host, status)
		}
	}
}

func mustPort(t *testing.T, p string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(p, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHostCheckByConnection: what a listener is reached by depends on the connection: on
// [::1] the loopback names; on 0.0.0.0 the loopback names over loopback, and the machine's
// own address, but not "localhost", over the network.
func TestHostCheckByConnection(t *testing.T) {
	client := &http.Client{}
	status := func(addr, host string) int {
		resp, _ := get(t, client, addr, host, "/")
		return resp.StatusCode
	}
	t.Run("ipv6 loopback", func(t *testing.T) {
		if ln, err := net.Listen("tcp", "[::1]:0"); err != nil {
			t.Skip("no IPv6 loopback here:", err) // not a peer: the host's network
		} else {
			ln.Close()
		}
		srv, port := serveChannel(t, "[::1]:0", Options{Listen: "[::1]:0"})
		addr := srv.Listener.Addr().String()
		for _, h := range []string{"[::1]:" + port, "localhost:" + port, "127.0.0.1:" + port} {
			if s := status(addr, h); s != http.StatusOK {
				t.Errorf("Host %s: %d", h, s)
			}
		}
		if s := status(addr, "evil.example:"+port); s != http.StatusMisdirectedRequest {
			t.Errorf("rebinding host: %d", s)
		}
	})
	t.Run("all interfaces", func(t *testing.T) {
		srv, port := serveChannel(t, "0.0.0.0:0", Options{Listen: "0.0.0.0:0"})
		_ = srv
		loop := "127.0.0.1:" + port
		for _, h := range []string{"localhost:" + port, "127.0.0.1:" + port} {
			if s := status(loop, h); s != http.StatusOK {
				t.Errorf("over loopback, Host %s: %d", h, s)
			}
		}
		if s := status(loop, "evil.example:"+port); s != http.StatusMisdirectedRequest {
			t.Errorf("rebinding host: %d", s)
		}
		lan := nonLoopbackIPv4(t)
		if lan == "" {
			t.Skip("no non-loopback IPv4 address here") // not a peer: the host's network
		}
		lanAddr := net.JoinHostPort(lan, port)
		if s := status(lanAddr, lanAddr); s != http.StatusOK {
			t.Errorf("over the network, Host %s: %d", lanAddr, s)
		}
		if s := status(lanAddr, "localhost:"+port); s != http.StatusMisdirectedRequest {
			t.Errorf("over the network, Host localhost: %d, want 421", s)
		}
	})
}

func nonLoopbackIPv4(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// TestSocketOrigin: the socket takes only its own page's origin: an Origin is required,
// names the request's Host with the same port (a missing port is the scheme's default),
// and is itself a host the page answers to.
func TestSocketOrigin(t *testing.T) {
	srv, port := serveChannel(t, "", Options{Hosts: []string{"voice.example.com", "voice.lan:9000"}})
	addr := srv.Listener.Addr().String()
	local := "127.0.0.1:" + port
	cases := []struct {
		host, origin string
		ok           bool
	}{
		{local, "http://" + local, true},
		{"localhost:" + port, "http://localhost:" + port, true},
		{"localhost:" + port, "http://LOCALHOST:" + port, true},
		{"voice.example.com", "https://voice.example.com", true},
		{"voice.example.com", "http://voice.example.com", true},
		{"voice.example.com:443", "https://voice.example.com", true},
		{"voice.lan:9000", "http://voice.lan:9000", true},

		{local, "", false},                            // no Origin: not a browser page
		{local, "null", false},                        // an opaque origin
		{local, "http://evil.example", false},         // another site
		{local, "http://evil.example:" + port, false}, // another site on this port
		{local, "http://localhost:" + port, false},    // another origin, though this machine
		{local, "http://127.0.0.1:" + mustNext(t, port), false},
		{local, "ftp://" + local, false},
		{local, "http://" + local + "/page", false},
		{"voice.example.com", "https://voice.example.com:8443", false},
		{"voice.example.com:8443", "https://voice.example.com", false},
		{"voice.lan:9000", "http://voice.lan", false},
	}
	client := &http.Client{}
	for _, tc := range cases {
		status, ce := dialSocket(t, client, addr, tc.host, tc.origin, "")
		switch {
		case tc.ok && (status != http.StatusSwitchingProtocols || ce.Reason != errRefused.Error()):
			t.Errorf("Host %s Origin %q: %d %v, want accepted", tc.host, tc.origin, status, ce)
		case !tc.ok && status != http.StatusForbidden:
			t.Errorf("Host %s Origin %q: %d, want 403", tc.host, tc.origin, status)
		}
	}
}

func mustNext(t *testing.T, port string) string { return fmt.Sprint(mustPort(t, port) + 1) }

// TestAccessToken: with a token the page and socket refuse a browser without access; the
// token link sets an HttpOnly, SameSite=Strict cookie and moves on to the clean URL; a
// wrong token gets nothing; the socket takes the cookie or the token itself; the files and
// the icon stay open (they are the same for everyone).
func TestAccessToken(t *testing.T) {
	const token = "s3cret-0123456789abcdef"
	srv, port := serveChannel(t, "", Options{Token: token})
	addr := srv.Listener.Addr().String()
	host := "127.0.0.1:" + port
	origin := "http://" + host
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}

	resp, body := get(t, browser, addr, host, "/")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "/?token=") || strings.Contains(body, token) {
		t.Errorf("no access: %d %q", resp.StatusCode, body)
	}
	for _, path := range []string{"/browser/app.js", "/favicon.ico"} {
		if resp, _ := get(t, browser, addr, host, path); resp.StatusCode != http.StatusOK {
			t.Errorf("%s without access: %d", path, resp.StatusCode)
		}
	}
	if status, _ := dialSocket(t, browser, addr, host, origin, ""); status != http.StatusForbidden {
		t.Errorf("socket without access: %d, want 403", status)
	}
	for _, q := range []string{"?token=wrong-0123456789abcdef", "?token=", "?token=" + token[:len(token)-1], "?token=" + token + "x"} {
		if status, _ := dialSocket(t, browser, addr, host, origin, q); status != http.StatusForbidden {
			t.Errorf("socket with %s: %d, want 403", q, status)
		}
		resp, _ := get(t, browser, addr, host, "/"+q)
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("page with %s: %d, cookies %v", q, resp.StatusCode, resp.Cookies())
		}
	}
	forged := &http.Client{Jar: jarWith(t, origin, &http.Cookie{Name: accessCookie, Value: strings.Repeat("ab", 32)})}
	if status, _ := dialSocket(t, forged, addr, host, origin, ""); status != http.StatusForbidden {
		t.Errorf("socket with a forged cookie: %d", status)
	}
	rotated := &http.Client{Jar: jarWith(t, origin, &http.Cookie{Name: accessCookie, Value: fmt.Sprintf("%x", tokenMAC("an-old-token-0123456789"))})}
	if status, _ := dialSocket(t, rotated, addr, host, origin, ""); status != http.StatusForbidden {
		t.Errorf("socket with the cookie of another token: %d", status)
	}
	if status, ce := dialSocket(t, &http.Client{}, addr, host, origin, "?token="+token); status != http.StatusSwitchingProtocols || ce.Reason != errRefused.Error() {
		t.Errorf("socket with the token itself: %d %v", status, ce)
	}

	resp, body = get(t, browser, addr, host, "/?token="+token)
	var access *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == accessCookie {
			access = ck
		}
	}
	switch {
	case resp.StatusCode != http.StatusOK || access == nil:
		t.Fatalf("token link: %d, cookies %v", resp.StatusCode, resp.Cookies())
	case !access.HttpOnly || access.SameSite != http.SameSiteStrictMode || access.Secure || access.Path != "/" || access.MaxAge <= 0:
		t.Errorf("access cookie %+v, want HttpOnly, SameSite=Strict, not Secure over http, path /", access)
	case strings.Contains(access.Value, token):
		t.Error("the cookie holds the token itself")
	case !strings.Contains(body, `http-equiv="refresh" content="0; url=/"`) || strings.Contains(body, token):
		t.Errorf("the token link does not move on to the clean URL: %q", body)
	case resp.Header.Get("Referrer-Policy") != "no-referrer" || resp.Header.Get("Cache-Control") != "no-store":
		t.Errorf("the token link's page may leak or be kept: %v", resp.Header)
	}
	if resp, body := get(t, browser, addr, host, "/"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="call"`) {
		t.Errorf("page with the cookie: %d", resp.StatusCode)
	}
	if status, ce := dialSocket(t, browser, addr, host, origin, ""); status != http.StatusSwitchingProtocols || ce.Reason != errRefused.Error() {
		t.Errorf("socket with the cookie: %d %v", status, ce)
	}
	if status, _ := dialSocket(t, browser, addr, host, "http://evil.example", ""); status != http.StatusForbidden {
		t.Errorf("the cookie let another origin in: %d", status)
	}

	secure, sport := serveChannel(t, "", Options{Token: token, SecureCookie: true})
	resp, _ = get(t, &http.Client{}, secure.Listener.Addr().String(), "127.0.0.1:"+sport, "/?token="+token)
	if cks := resp.Cookies(); len(cks) != 1 || !cks[0].Secure {
		t.Errorf("with an https public URL the cookie is not Secure: %v", cks)
	}
}

func jarWith(t *testing.T, origin string, ck *http.Cookie) http.CookieJar {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	req, _ := http.NewRequest(http.MethodGet, origin, nil)
	jar.SetCookies(req.URL, []*http.Cookie{ck})
	return jar
}

// TestNoTokenNoCheck: without a token the page needs no cookie (the demo on localhost).
func TestNoTokenNoCheck(t *testing.T) {
	srv, port := serveChannel(t, "", Options{})
	host := "127.0.0.1:" + port
	if resp, _ := get(t, &http.Client{}, srv.Listener.Addr().String(), host, "/"); resp.StatusCode != http.StatusOK {
		t.Errorf("page: %d", resp.StatusCode)
	}
	if status, ce := dialSocket(t, &http.Client{}, srv.Listener.Addr().String(), host, "http://"+host, ""); status != http.StatusSwitchingProtocols || ce.Reason != errRefused.Error() {
		t.Errorf("socket: %d %v", status, ce)
	}
}
