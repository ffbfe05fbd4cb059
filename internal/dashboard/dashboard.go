// Package dashboard serves the operator's pages at /dashboard: recent and live calls, one
// call with its transcript, latency waterfall, journal, diagnosis and recording, jobs and
// dialer batches, and callers' sessions. Pages are rendered on the server (html/template,
// charts as inline SVG); a small script of its own updates the live views over
// server-sent events. Every page needs a sign-in (auth.go) and answers only to Handset's
// own host names (internal/hostcheck).
package dashboard

import (
	"context"
	"embed"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/hostcheck"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// Source is what the dashboard reads of the store; store.Store satisfies it.
type Source interface {
	Calls(ctx context.Context, f store.ListCalls) ([]store.Call, error)
	Call(ctx context.Context, id voice.CallID) (store.Call, error)
	Transcript(ctx context.Context, id voice.CallID) ([]store.TranscriptLine, error)
	Sessions(ctx context.Context, f store.ListSessions) ([]store.Session, error)
	Jobs(ctx context.Context, f store.ListJobs) ([]store.Job, error)
	Batches(ctx context.Context, limit int) ([]store.Batch, error)
}

// Waveform is a recording drawn small: the loudest sample of each bucket of its duration,
// 0 to 1, for each side of the call.
type Waveform struct {
	Duration      time.Duration
	Caller, Agent []float32
}

// Recordings opens calls' recordings. An error wrapping os.ErrNotExist means the call has
// none.
type Recordings interface {
	Open(call store.Call) (io.ReadSeekCloser, time.Time, error)
	Waveform(call store.Call, buckets int) (Waveform, error)
}

// Options configure the dashboard.
type Options struct {
	Source     Source
	Recordings Recordings // nil: no call has a recording
	Live       *Live      // calls in progress; nil: none are shown
	// AdminToken (HANDSET_API_TOKEN) signs in as admin, who sees phone numbers;
	// ViewerToken (HANDSET_DASHBOARD_TOKEN) as a viewer, who sees callers by caller hash.
	AdminToken, ViewerToken string
	// CallerHash is the caller hash of a number (a viewer's jobs show it instead).
	CallerHash func(number string) string
	// Listen (HANDSET_LISTEN) and Hosts (the public URL's host, HANDSET_BROWSER_HOSTS) are
	// the host names the pages answer to, as for the browser call page.
	Listen string
	Hosts  []string
	// Secure marks the cookies Secure even on plain HTTP requests (HANDSET_PUBLIC_URL is
	// https: a proxy ends TLS).
	Secure bool
	// TrustedProxies (HANDSET_TRUSTED_PROXIES) are the peers whose X-Forwarded-For names
	// the client the sign-in limit counts against.
	TrustedProxies []netip.Prefix
	Logger         *slog.Logger // nil discards
	// Now is the clock of sessions and the sign-in limit; nil is time.Now.
	Now func() time.Time
}

// Dashboard serves the pages.
type Dashboard struct {
	o      Options
	log    *slog.Logger
	hosts  hostcheck.Hosts
	limit  *signInLimit
	sess   *sessions
	pages  map[string]*page
	static http.Handler
}

//go:embed templates static
var files embed.FS

// New returns a Dashboard; an empty AdminToken and ViewerToken let nobody in.
func New(o Options) *Dashboard {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	d := &Dashboard{o: o, log: o.Logger, pages: parsePages()}
	var bad []string
	d.hosts, bad = hostcheck.New(o.Listen, o.Hosts)
	for _, h := range bad {
		d.log.Warn("dashboard: ignored a host name that is not one", "host", h)
	}
	d.limit = newSignInLimit(o.Now)
	d.sess = newSessions(o.AdminToken, o.ViewerToken)
	static, _ := fs.Sub(files, "static")
	d.static = http.StripPrefix("/dashboard/static/", http.FileServerFS(static))
	return d
}

// Register adds the dashboard's routes to mux, each behind the Host check and all but the
// sign-in page and its files behind a sign-in.
func (d *Dashboard) Register(mux *http.ServeMux) {
	open := func(pattern string, h http.HandlerFunc) { mux.Handle(pattern, d.checkHost(h)) }
	signedIn := func(pattern string, h func(http.ResponseWriter, *http.Request, viewer)) {
		mux.Handle(pattern, d.checkHost(d.requireSignIn(h)))
	}
	open("GET /dashboard/login", d.loginPage)
	open("POST /dashboard/login", d.login)
	open("GET /dashboard/static/", d.serveStatic)
	signedIn("POST /dashboard/logout", d.logout)
	signedIn("GET /dashboard", d.callsPage)
	signedIn("GET /dashboard/{$}", d.callsPage)
	signedIn("GET /dashboard/calls/{id}", d.callPage)
	signedIn("GET /dashboard/calls/{id}/recording", d.recording)
	signedIn("GET /dashboard/calls/{id}/events", d.callEvents)
	signedIn("GET /dashboard/live", d.livePage)
	signedIn("GET /dashboard/live/events", d.liveEvents)
	signedIn("GET /dashboard/jobs", d.jobsPage)
	signedIn("GET /dashboard/sessions", d.sessionsPage)
	signedIn("/dashboard/", func(w http.ResponseWriter, r *http.Request, v viewer) {
		d.problem(w, r, v, http.StatusNotFound, "There is no such page.")
	})
}

// checkHost refuses requests for any other Host than Handset's own (421: this server does
// not answer for that name), and sets the headers every answer carries.
func (d *Dashboard) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "+
			"media-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if _, ok := d.hosts.Request(r); !ok {
			d.log.Info("dashboard: refused a request for another host name", "host", voice.Clip(r.Host, 80), "path", voice.Clip(r.URL.Path, 200))
			plain(w, http.StatusMisdirectedRequest, "The dashboard does not answer to the host name "+quote(r.Host)+
				". If that name is yours, add it to HANDSET_BROWSER_HOSTS (or set HANDSET_PUBLIC_URL).")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (d *Dashboard) serveStatic(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/") {
		http.NotFound(w, r) // no listing of the files
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	d.static.ServeHTTP(w, r)
}

// plain answers with a plain-text message.
func plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, msg, status)
}
