package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/handset-voice/handset/internal/sim/browsercaller"
)

// closeReason is the close frame a refused browser call got, failing when err is another
// kind of failure.
func closeReason(t *testing.T, err error) websocket.CloseError {
	t.Helper()
	var ce websocket.CloseError
	if !errors.As(err, &ce) {
		t.Fatalf("%v, want a close frame", err)
	}
	return ce
}

// TestBrowserCapLeavesRoomForPhones: browser calls stop at HANDSET_BROWSER_MAX_CALLS, below
// HANDSET_MAX_CALLS, with a close reason the page shows; a phone call is still admitted
// while the browser calls are at their cap.
func TestBrowserCapLeavesRoomForPhones(t *testing.T) {
	r := startServe(t, nil, "HANDSET_BROWSER=true", "HANDSET_MAX_CALLS=3", "HANDSET_BROWSER_MAX_CALLS=2")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var held []*browsercaller.Call
	for i := range 2 {
		c, err := browsercaller.Dial(ctx, r.baseURL(), browsercaller.NewJar())
		if err != nil {
			t.Fatalf("browser call %d: %v\n%s", i+1, err, r.logs.String())
		}
		held = append(held, c)
	}
	_, err := browsercaller.Dial(ctx, r.baseURL(), browsercaller.NewJar())
	if err == nil {
		t.Fatal("a third browser call was admitted over HANDSET_BROWSER_MAX_CALLS=2")
	}
	if ce := closeReason(t, err); ce.Code != websocket.StatusTryAgainLater || ce.Reason != "too many browser calls at once (the limit is 2): try again later" {
		t.Errorf("the refusal: %v", ce)
	}

	phone := r.dial(ctx)
	waitMark(ctx, t, phone, "t0-end") // admitted: its greeting played
	if err := phone.Hangup(); err != nil {
		t.Fatal(err)
	}
	<-phone.Done()
	for _, c := range held {
		_ = c.Hangup()
		<-c.Done()
	}
}

// request sends GET path to the server with the given Host header (and Origin, for the
// socket) and returns the status.
func request(t *testing.T, r *rig, host, path, origin string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.baseURL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if origin != "" {
		req.Header.Set("Origin", origin)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close() // an accepted socket: the call ends as the caller goes
	return resp.StatusCode
}

// TestBrowserHostsWholeServer: `handset serve` answers on its page only to the names it is
// reached by: this address and localhost, HANDSET_PUBLIC_URL's host, HANDSET_BROWSER_HOSTS.
// A rebinding site's name is refused on the page, its files, its icon and its socket, and
// the socket refuses another origin; the API and health routes are not the page's.
func TestBrowserHostsWholeServer(t *testing.T) {
	r := startServe(t, nil, "HANDSET_BROWSER=true", "HANDSET_PUBLIC_URL=https://voice.example.com",
		"HANDSET_BROWSER_HOSTS=voice.lan, 192.168.1.20:8080")
	_, port, _ := net.SplitHostPort(r.addr)
	for _, host := range []string{r.addr, "localhost:" + port, "[::1]:" + port, "voice.example.com", "voice.lan:" + port, "192.168.1.20:8080"} {
		for _, path := range []string{"/", "/browser/app.js", "/favicon.ico"} {
			if got := request(t, r, host, path, ""); got != http.StatusOK {
				t.Errorf("Host %s %s: %d", host, path, got)
			}
		}
		origin := "http://" + host
		if host == "voice.example.com" {
			origin = "https://" + host
		}
		if got := request(t, r, host, "/browser/ws", origin); got != http.StatusSwitchingProtocols {
			t.Errorf("socket, Host %s Origin %s: %d", host, origin, got)
		}
	}
	for _, host := range []string{"rebind.evil.example:" + port, "rebind.evil.example", "192.168.1.20:" + port, "localhost:1"} {
		for _, path := range []string{"/", "/browser/app.js", "/favicon.ico"} {
			if got := request(t, r, host, path, ""); got != http.StatusMisdirectedRequest {
				t.Errorf("Host %s %s: %d, want 421", host, path, got)
			}
		}
		if got := request(t, r, host, "/browser/ws", "http://"+host); got != http.StatusMisdirectedRequest {
			t.Errorf("socket, Host %s: %d, want 421", host, got)
		}
	}
	if got := request(t, r, r.addr, "/browser/ws", "http://rebind.evil.example:"+port); got != http.StatusForbidden {
		t.Errorf("socket from another origin: %d, want 403", got)
	}
	if got := request(t, r, "rebind.evil.example", "/healthz", ""); got != http.StatusOK {
		t.Errorf("/healthz is not the page's to guard: %d", got)
	}
}

// TestServeRefusesExposedPageWithoutToken: serve with the page on all interfaces and no
// HANDSET_BROWSER_TOKEN does not start, and says so with the other problems.
func TestServeRefusesExposedPageWithoutToken(t *testing.T) {
	_, env := withFakes(t, nil, "HANDSET_BROWSER=true", "HANDSET_LISTEN=0.0.0.0:0", "HANDSET_MAX_CALLS=many")
	var out syncBuffer
	code := Main(context.Background(), []string{"serve"}, Env{Stdout: &out, Stderr: &out, Environ: env, WorkDir: t.TempDir(),
		Ready: func(string) { t.Error("serve started") }})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"cannot start: 2 settings to fix",
		"HANDSET_MAX_CALLS (max_calls):",
		"HANDSET_BROWSER_TOKEN (browser_token): is required with HANDSET_BROWSER=true when HANDSET_LISTEN (0.0.0.0:0) reaches beyond this machine",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestExposedPageNeedsItsToken: serve on all interfaces with a token starts, warns that the
// page is reachable from other machines, refuses browsers without access, and takes a call
// from a browser that opened the token link.
func TestExposedPageNeedsItsToken(t *testing.T) {
	const token = "0123456789abcdef-access"
	r := startServe(t, nil, "HANDSET_BROWSER=true", "HANDSET_LISTEN=0.0.0.0:0", "HANDSET_BROWSER_TOKEN="+token)
	if !strings.Contains(r.logs.String(), "the browser call page is reachable from other machines") ||
		!strings.Contains(r.logs.String(), "listen=0.0.0.0:0") {
		t.Errorf("no warning at start:\n%s", r.logs.String())
	}
	if strings.Contains(r.logs.String(), token) {
		t.Error("the token reached the logs")
	}
	_, port, _ := net.SplitHostPort(r.addr)
	base := "http://127.0.0.1:" + port
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if _, err := browsercaller.Dial(ctx, base, browsercaller.NewJar()); err == nil || !strings.Contains(err.Error(), "HTTP 403") {
		t.Errorf("a browser without access: %v, want the page refused", err)
	}
	jar := browsercaller.NewJar()
	if err := browsercaller.Login(ctx, base, jar, "wrong-0123456789abcdef"); err == nil {
		t.Error("a wrong token was let in")
	}
	if err := browsercaller.Login(ctx, base, jar, token); err != nil {
		t.Fatal(err)
	}
	c, err := browsercaller.Dial(ctx, base, jar)
	if err != nil {
		t.Fatalf("after the token link: %v\n%s", err, r.logs.String())
	}
	_ = c.Hangup()
	<-c.Done()
}

// TestWarnsOfPublicPageWithoutToken: with the page on loopback behind a public URL (a
// proxy), serve warns when no token guards it, and not when one does.
func TestWarnsOfPublicPageWithoutToken(t *testing.T) {
	const warning = "the browser call page has no access token, and HANDSET_PUBLIC_URL names it publicly"
	for _, tc := range []struct {
		extra []string
		warns bool
	}{
		{[]string{"HANDSET_PUBLIC_URL=https://voice.example.com"}, true},
		{[]string{"HANDSET_PUBLIC_URL=https://voice.example.com", "HANDSET_BROWSER_TOKEN=0123456789abcdef"}, false},
		{[]string{"HANDSET_PUBLIC_URL=http://localhost:8080"}, false},
		{nil, false},
	} {
		t.Run(fmt.Sprint(tc.extra), func(t *testing.T) {
			r := startServe(t, nil, append([]string{"HANDSET_BROWSER=true"}, tc.extra...)...)
			if got := strings.Contains(r.logs.String(), warning); got != tc.warns {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warns, r.logs.String())
			}
			if strings.Contains(r.logs.String(), "reachable from other machines") {
				t.Error("warned of a loopback listen")
			}
		})
	}
}
