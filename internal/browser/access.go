package browser

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/handset-voice/handset/internal/hostcheck"
	"github.com/handset-voice/handset/internal/voice"
)

// Who may use the page. The page, its files and its socket answer only to the names
// Handset is really reached by (internal/hostcheck: DNS rebinding). Off loopback a secret
// keeps strangers out as well.

// accessCookie carries proof of the access token; its value is derived from the token, so
// a new token ends every old cookie.
const accessCookie = "handset_access"

// accessCookieAge is how long a browser keeps its access after opening the token link.
const accessCookieAge = 30 * 24 * time.Hour

// requestHost is the request's Host, parsed, and whether it is one the page answers to.
func (c *Channel) requestHost(r *http.Request) (hostcheck.HostPort, bool) {
	return c.hosts.Request(r)
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

// sameOrigin: the socket's Origin names this page itself.
func (c *Channel) sameOrigin(r *http.Request) bool {
	return c.hosts.SameOrigin(r, r.Header.Get("Origin"))
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
