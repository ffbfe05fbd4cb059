package browser

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"github.com/handset-voice/handset/internal/voice"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Who may use the page. A web page on another site can make a visitor's browser send
// requests to Handset on localhost by pointing its own name at 127.0.0.1 (DNS rebinding):
// the browser then thinks the page and Handset are one origin. Such requests carry that
// site's name in Host, so the page, its files and its socket answer only to the names
// Handset is really reached by. Off loopback a secret keeps strangers out as well.

// accessCookie carries proof of the access token; its value is derived from the token, so
// a new token ends every old cookie.
const accessCookie = "handset_access"

// accessCookieAge is how long a browser keeps its access after opening the token link.
const accessCookieAge = 30 * 24 * time.Hour

// hostPort is a host name as matched: lower case, without a trailing dot or brackets, an IP
// in its canonical form; port is "" when none was written.
type hostPort struct{ name, port string }

// parseHost reads a Host header or a configured entry: name, name:port, [v6], [v6]:port,
// or a bare IP.
func parseHost(h string) (hostPort, bool) {
	if ip, err := netip.ParseAddr(h); err == nil {
		return hostPort{name: canonIP(ip)}, ip.Zone() == ""
	}
	name, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return hostPort{}, false
		}
		name, port = h[1:end], h[end+1:]
		if port != "" && port[0] != ':' {
			return hostPort{}, false
		}
		port = strings.TrimPrefix(port, ":")
		ip, err := netip.ParseAddr(name)
		if err != nil || !ip.Is6() || ip.Zone() != "" || (port == "" && strings.HasSuffix(h, ":")) {
			return hostPort{}, false
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		name, port = h[:i], h[i+1:]
		if port == "" {
			return hostPort{}, false
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return hostPort{}, false
		}
		port = strconv.Itoa(n) // "08080" and "8080" are one port
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		return hostPort{name: canonIP(ip), port: port}, ip.Zone() == ""
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" || strings.ContainsAny(name, ":/@[] ") {
		return hostPort{}, false
	}
	return hostPort{name: name, port: port}, true
}

func canonIP(ip netip.Addr) string { return ip.Unmap().WithZone("").String() }

// loopbackNames are what a browser on this machine calls a loopback listener.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// hosts decides which Host names the page answers to.
type hosts struct {
	named  []hostPort // the public URL's host and HANDSET_BROWSER_HOSTS: any port unless one is given
	listen string     // HANDSET_LISTEN's host when it is a name (not an IP), lower case
}

func newHosts(listen string, extra []string) (hosts, []string) {
	var h hosts
	var bad []string
	if name, _, err := net.SplitHostPort(listen); err == nil {
		if _, err := netip.ParseAddr(name); err != nil && name != "" {
			h.listen = strings.ToLower(strings.TrimSuffix(name, "."))
		}
	}
	for _, e := range extra {
		hp, ok := parseHost(strings.TrimSpace(e))
		if !ok {
			bad = append(bad, e)
			continue
		}
		h.named = append(h.named, hp)
	}
	return h, bad
}

// allowed reports whether a request for host h, arriving on local (the address the
// connection reached; invalid when unknown), is for this page.
func (hs hosts) allowed(h hostPort, local netip.AddrPort) bool {
	for _, n := range hs.named {
		if n.name == h.name && (n.port == "" || n.port == h.port || h.port == "" && (n.port == "80" || n.port == "443")) {
			return true
		}
	}
	if !local.IsValid() {
		return false
	}
	// Names of the listener itself, with the port the connection arrived on: its IP (a
	// LAN address, or any address of a 0.0.0.0 listener), the listen address's name, and
	// the loopback names when the connection came over loopback.
	port := strconv.Itoa(int(local.Port()))
	if h.port != port && !(h.port == "" && port == "80") {
		return false
	}
	if h.name == canonIP(local.Addr()) || h.name == hs.listen {
		return true
	}
	if local.Addr().Unmap().IsLoopback() {
		for _, n := range loopbackNames {
			if h.name == n {
				return true
			}
		}
	}
	return false
}

// localAddr is the address the request's connection arrived on.
func localAddr(r *http.Request) netip.AddrPort {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return netip.AddrPort{}
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// requestHost is the request's Host, parsed, and whether it is one the page answers to.
func (c *Channel) requestHost(r *http.Request) (hostPort, bool) {
	h, ok := parseHost(r.Host)
	return h, ok && c.hosts.allowed(h, localAddr(r))
}

// checkHost refuses requests for any other Host than the page's own (421: this server
// does not answer for that name).
func (c *Channel) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := c.requestHost(r); !ok {
			c.log.Info("browser page: refused a request for another host name", "host", voice.Clip(r.Host, 80), "path", r.URL.Path)
			refuse(w, http.StatusMisdirectedRequest, fmt.Sprintf(
				"Handset's call page does not answer to the host name %q. If that name is yours, add it to HANDSET_BROWSER_HOSTS.", voice.Clip(r.Host, 80)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameOrigin: the socket's Origin names this page itself: the request's Host, with the
// same port (a missing port is the scheme's default), and a host the page answers to.
func (c *Channel) sameOrigin(r *http.Request) bool {
	raw := r.Header.Get("Origin")
	u, err := url.Parse(raw)
	if raw == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
		return false
	}
	o, ok := parseHost(u.Host)
	if !ok {
		return false
	}
	if o.port == "" {
		o.port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	h, ok := c.requestHost(r)
	if !ok || o.name != h.name || (h.port != "" && h.port != o.port) || (h.port == "" && o.port != "80" && o.port != "443") {
		return false
	}
	return c.hosts.allowed(o, localAddr(r))
}

// tokenMAC is what the access cookie holds and what a presented token is compared by:
// fixed-length, so the comparison takes the same time whatever is presented.
func tokenMAC(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("handset browser page access"))
	return m.Sum(nil)
}

// tokenOK compares a presented token with the configured one in constant time.
func (c *Channel) tokenOK(presented string) bool {
	return presented != "" && subtle.ConstantTimeCompare(tokenMAC(presented), c.access) == 1
}

// hasAccess: the page and its socket are open when no token is configured, else to a
// browser with the access cookie or a request carrying the token itself.
func (c *Channel) hasAccess(r *http.Request) bool {
	if c.access == nil {
		return true
	}
	if ck, err := r.Cookie(accessCookie); err == nil {
		if got, err := hex.DecodeString(ck.Value); err == nil && subtle.ConstantTimeCompare(got, c.access) == 1 {
			return true
		}
	}
	return c.tokenOK(r.URL.Query().Get("token"))
}

// grantAccess answers the token link: the access cookie, and a page that moves on to the
// clean URL at once. A plain redirect would not do: after a link from another site the
// browser withholds a SameSite=Strict cookie on the redirected request too, and the page
// would refuse it; a navigation started by this page carries it.
func (c *Channel) grantAccess(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: accessCookie, Value: hex.EncodeToString(c.access), Path: "/",
		MaxAge: int(accessCookieAge.Seconds()), HttpOnly: true, Secure: c.opts.SecureCookie,
		SameSite: http.SameSiteStrictMode,
	})
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	_, _ = w.Write([]byte(`<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=/">` +
		`<title>Handset</title><p><a href="/">Continue to the call page</a></p>` + "\n"))
}

// refuse answers with a plain-text reason.
func refuse(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, msg, status)
}
