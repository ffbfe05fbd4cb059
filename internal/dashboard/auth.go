package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/handset-voice/handset/internal/edge"

	"github.com/handset-voice/handset/internal/voice"
)

// Who may see the pages. A browser signs in once with a token on the sign-in form and gets
// a session cookie; a script sends the token as a bearer token on every request. The API
// token signs in as admin (phone numbers shown), HANDSET_DASHBOARD_TOKEN as a viewer
// (callers by caller hash); the tools token, which agent runtimes hold, never signs in.
//
// A session cookie is signed with the token that opened it, so a new token ends every old
// session; it names its role, expiry and a random id, and signing out revokes that id. Its
// CSRF token is derived from it too: nothing is kept per session but the revoked ids.

const (
	sessionCookie = "handset_dashboard"
	// loginCookie holds the sign-in form's own CSRF token (double submit): another site
	// cannot sign a visitor's browser in under a token of its choosing.
	loginCookie = "handset_dashboard_login"
	sessionAge  = 12 * time.Hour
	// maxRevoked bounds the ids of sessions signed out before their expiry.
	maxRevoked = 10000
	// maxForm bounds a POST body: a token, a CSRF token and a path.
	maxForm = 8 << 10
)

// viewer is who a request came from.
type viewer struct {
	admin bool
	csrf  string // the session's CSRF token; empty for a bearer token
}

// role names a viewer for the page header.
func (v viewer) role() string {
	if v.admin {
		return "admin"
	}
	return "viewer"
}

// sessions signs and checks session cookies.
type sessions struct {
	admin, viewer []byte // the tokens; nil signs nobody in
	mu            sync.Mutex
	revoked       map[string]time.Time // session id -> its expiry
}

func newSessions(adminToken, viewerToken string) *sessions {
	s := &sessions{revoked: map[string]time.Time{}}
	if adminToken != "" {
		s.admin = []byte(adminToken)
	}
	if viewerToken != "" && viewerToken != adminToken {
		s.viewer = []byte(viewerToken)
	}
	return s
}

func mac(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("handset dashboard\x00" + strings.Join(parts, "\x00")))
	return m.Sum(nil)
}

// tokenRole says which token presented is: admin, viewer, or neither. Both comparisons are
// made every time, each on a fixed-length digest, so timing tells nothing of either token.
func (s *sessions) tokenRole(presented string) (admin, ok bool) {
	digest := func(t []byte) []byte { return mac(t, "token") }
	got := digest([]byte(presented))
	var isAdmin, isViewer bool
	if s.admin != nil {
		isAdmin = subtle.ConstantTimeCompare(got, digest(s.admin)) == 1
	}
	if s.viewer != nil {
		isViewer = subtle.ConstantTimeCompare(got, digest(s.viewer)) == 1
	}
	return isAdmin, presented != "" && (isAdmin || isViewer)
}

func (s *sessions) key(admin bool) []byte {
	if admin {
		return s.admin
	}
	return s.viewer
}

// issue makes a session cookie's value for a role, expiring at exp.
func (s *sessions) issue(admin bool, exp time.Time) string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	role := "v"
	if admin {
		role = "a"
	}
	fields := []string{role, strconv.FormatInt(exp.Unix(), 10), hex.EncodeToString(id[:])}
	return strings.Join(fields, ".") + "." + hex.EncodeToString(mac(s.key(admin), fields...))
}

// check reads a session cookie's value: the viewer, its session id and expiry.
func (s *sessions) check(value string, now time.Time) (v viewer, id string, exp time.Time, ok bool) {
	f := strings.Split(value, ".")
	if len(value) > 200 || len(f) != 4 || (f[0] != "a" && f[0] != "v") {
		return viewer{}, "", time.Time{}, false
	}
	admin := f[0] == "a"
	key := s.key(admin)
	got, err := hex.DecodeString(f[3])
	if key == nil || err != nil || subtle.ConstantTimeCompare(got, mac(key, f[:3]...)) != 1 {
		return viewer{}, "", time.Time{}, false
	}
	unix, err := strconv.ParseInt(f[1], 10, 64)
	if exp = time.Unix(unix, 0); err != nil || !now.Before(exp) {
		return viewer{}, "", time.Time{}, false
	}
	s.mu.Lock()
	_, gone := s.revoked[f[2]]
	s.mu.Unlock()
	if gone {
		return viewer{}, "", time.Time{}, false
	}
	return viewer{admin: admin, csrf: hex.EncodeToString(mac(key, "csrf", f[2])[:16])}, f[2], exp, true
}

// revoke ends session id (signed out) until its expiry, forgetting expired ones.
func (s *sessions) revoke(id string, exp, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.revoked {
		if !now.Before(e) {
			delete(s.revoked, k)
		}
	}
	if len(s.revoked) < maxRevoked {
		s.revoked[id] = exp
	}
}

// secure says whether cookies are marked Secure: over TLS, or behind an https public URL.
func (d *Dashboard) secure(r *http.Request) bool { return r.TLS != nil || d.o.Secure }

// requireSignIn admits a signed-in request to h; a browser without a session is sent to
// the sign-in page, anything else gets 401. A POST by cookie needs its CSRF token and this
// site's Origin.
func (d *Dashboard) requireSignIn(h func(http.ResponseWriter, *http.Request, viewer)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := d.o.Now()
		addr := edge.Client(r, d.o.TrustedProxies)
		if auth := r.Header.Get("Authorization"); auth != "" {
			if wait := d.limit.wait(addr); wait > 0 {
				tooMany(w, wait)
				return
			}
			token, isBearer := strings.CutPrefix(auth, "Bearer ")
			admin, ok := d.sess.tokenRole(token)
			if !isBearer || !ok {
				d.limit.failed(addr)
				d.log.Warn("dashboard: refused a wrong bearer token", "addr", addr, "path", voice.Clip(r.URL.Path, 200))
				unauthorized(w, "wrong bearer token: send Authorization: Bearer <HANDSET_API_TOKEN or HANDSET_DASHBOARD_TOKEN>")
				return
			}
			h(w, r, viewer{admin: admin})
			return
		}
		if ck, err := r.Cookie(sessionCookie); err == nil {
			if v, _, _, ok := d.sess.check(ck.Value, now); ok {
				if r.Method == http.MethodPost && !d.postAllowed(w, r, v.csrf) {
					d.log.Info("dashboard: refused a POST without this site's CSRF token or origin", "path", voice.Clip(r.URL.Path, 200))
					plain(w, http.StatusForbidden, "This form did not come from the dashboard itself (its CSRF token or origin is wrong): reload the page and try again.")
					return
				}
				h(w, r, v)
				return
			}
		}
		if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, "/dashboard/login?next="+url.QueryEscape(safeNext(r.URL.RequestURI())), http.StatusSeeOther)
			return
		}
		unauthorized(w, "sign in at /dashboard/login, or send Authorization: Bearer <HANDSET_API_TOKEN or HANDSET_DASHBOARD_TOKEN>")
	})
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="handset dashboard"`)
	plain(w, http.StatusUnauthorized, msg)
}

func tooMany(w http.ResponseWriter, wait time.Duration) {
	secs := int(wait.Round(time.Second) / time.Second)
	w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	plain(w, http.StatusTooManyRequests, fmt.Sprintf("Too many wrong tokens from your address: try again in %d s.", max(secs, 1)))
}

// postAllowed: a form posted by the dashboard itself carries csrf and comes from this site.
func (d *Dashboard) postAllowed(w http.ResponseWriter, r *http.Request, csrf string) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		return false
	}
	got := r.PostForm.Get("csrf")
	return csrf != "" && subtle.ConstantTimeCompare([]byte(got), []byte(csrf)) == 1 && d.sameSite(r)
}

// sameSite: the request came from this site's own pages. Its Origin says so; but under the
// pages' no-referrer policy a browser sends "Origin: null" (and no Referer) with a form,
// and then its Sec-Fetch-Site, which no page can forge, must say same-origin. A client
// that sends neither may name the page in its Referer.
func (d *Dashboard) sameSite(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		return d.hosts.SameOrigin(r, o)
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin"
	}
	if r.Header.Get("Origin") == "null" {
		return false
	}
	ref, err := url.Parse(r.Header.Get("Referer"))
	if err != nil || ref.Host == "" {
		return false
	}
	return d.hosts.SameOrigin(r, ref.Scheme+"://"+ref.Host)
}

// safeNext is where to go after signing in: a path of the dashboard's own, or the calls
// page. Anything else (another site, a scheme, "//host", backslashes) is refused.
func safeNext(next string) string {
	const home = "/dashboard"
	if next == "" || len(next) > 1024 || strings.ContainsAny(next, "\\\x00\r\n\t") || strings.HasPrefix(next, "//") {
		return home
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") {
		return home
	}
	clean := path.Clean(u.Path)
	if clean != home && !strings.HasPrefix(clean, home+"/") || strings.HasPrefix(clean, "/dashboard/login") {
		return home
	}
	if u.RawQuery != "" {
		return clean + "?" + u.Query().Encode()
	}
	return clean
}

// loginPage shows the sign-in form, with a fresh CSRF cookie for it.
func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if _, _, _, ok := d.sess.check(ck.Value, d.o.Now()); ok {
			w.Header().Set("Cache-Control", "no-store")
			http.Redirect(w, r, next, http.StatusSeeOther)
			return
		}
	}
	d.showLogin(w, r, http.StatusOK, next, "")
}

func (d *Dashboard) showLogin(w http.ResponseWriter, r *http.Request, status int, next, problem string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	csrf := hex.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: csrf, Path: "/dashboard/login", MaxAge: 3600,
		HttpOnly: true, Secure: d.secure(r), SameSite: http.SameSiteStrictMode})
	d.render(w, r, status, "login", viewer{}, map[string]any{"Next": next, "CSRF": csrf, "Problem": problem, "Title": "Sign in"})
}

// login checks the sign-in form: its CSRF cookie and origin, the address's allowance of
// tries, then the token.
func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	addr := edge.Client(r, d.o.TrustedProxies)
	if wait := d.limit.wait(addr); wait > 0 {
		d.log.Warn("dashboard: sign-in refused, too many wrong tokens", "addr", addr)
		tooMany(w, wait)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		plain(w, http.StatusBadRequest, "The sign-in form could not be read.")
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	ck, err := r.Cookie(loginCookie)
	if err != nil || ck.Value == "" || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(r.PostForm.Get("csrf"))) != 1 || !d.sameSite(r) {
		d.log.Info("dashboard: refused a sign-in form that the sign-in page did not send", "addr", addr)
		d.showLogin(w, r, http.StatusForbidden, next, "The form was stale or came from another site. Enter the token again.")
		return
	}
	admin, ok := d.sess.tokenRole(r.PostForm.Get("token"))
	if !ok {
		d.limit.failed(addr)
		d.log.Warn("dashboard: sign-in refused, wrong token", "addr", addr)
		d.showLogin(w, r, http.StatusUnauthorized, next, "That token is not right. Use HANDSET_API_TOKEN (admin) or HANDSET_DASHBOARD_TOKEN (viewer).")
		return
	}
	d.limit.succeeded(addr)
	now := d.o.Now()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: d.sess.issue(admin, now.Add(sessionAge)), Path: "/dashboard",
		MaxAge: int(sessionAge.Seconds()), HttpOnly: true, Secure: d.secure(r), SameSite: http.SameSiteStrictMode})
	http.SetCookie(w, &http.Cookie{Name: loginCookie, Value: "", Path: "/dashboard/login", MaxAge: -1,
		HttpOnly: true, Secure: d.secure(r), SameSite: http.SameSiteStrictMode})
	d.log.Info("dashboard: signed in", "addr", addr, "role", viewer{admin: admin}.role())
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session: its id is revoked here, and the browser drops the cookie.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request, _ viewer) {
	if ck, err := r.Cookie(sessionCookie); err == nil {
		if _, id, exp, ok := d.sess.check(ck.Value, d.o.Now()); ok {
			d.sess.revoke(id, exp, d.o.Now())
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/dashboard", MaxAge: -1,
		HttpOnly: true, Secure: d.secure(r), SameSite: http.SameSiteStrictMode})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, "/dashboard/login", http.StatusSeeOther)
}
