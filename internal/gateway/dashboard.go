package gateway

import (
	"net/url"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/dashboard"
	"github.com/handset-voice/handset/internal/obs"
	"github.com/handset-voice/handset/internal/recording"
	"github.com/handset-voice/handset/internal/session"
	"github.com/handset-voice/handset/internal/store"
	"github.com/handset-voice/handset/internal/voice"
)

// mountDashboard serves the operator's pages at /dashboard (HANDSET_DASHBOARD), read
// from the store; calls are followed live from their journals.
func (s *server) mountDashboard() {
	if !s.cfg.Dashboard {
		return
	}
	hosts, secure := pageHosts(s.cfg)
	s.dashLive = dashboard.NewLive()
	dashboard.New(dashboard.Options{
		Source: s.st, Live: s.dashLive, Logger: s.log,
		AdminToken: s.sec.apiToken, ViewerToken: s.cfg.DashboardToken.Reveal(),
		CallerHash: func(n string) string { return session.CallerHash(s.sec.callerHash, n) },
		Listen:     s.cfg.Listen, Hosts: hosts, Secure: secure, TrustedProxies: s.proxies,
		Recordings: dashboardRecordings{recording.Recordings{DataDir: s.cfg.DataDir}},
	}).Register(s.mux)
}

// dashboardRecordings plays this node's recordings on the call page.
type dashboardRecordings struct{ recording.Recordings }

func (r dashboardRecordings) Waveform(c store.Call, buckets int) (dashboard.Waveform, error) {
	w, err := r.Recordings.Waveform(c, buckets)
	return dashboard.Waveform(w), err
}

// followOnDashboard tees a call's journal into the dashboard's live pages, when served.
func (s *server) followOnDashboard(j *obs.Journal, id voice.CallID) {
	if s.dashLive != nil {
		j.Tee(s.dashLive.Observe(id))
	}
}

// pageHosts are the host names the browser-facing pages answer to beyond the listener's
// own (HANDSET_BROWSER_HOSTS and the public URL's host), and whether the public URL is
// https (their cookies are then Secure).
func pageHosts(cfg *config.Config) (hosts []string, secure bool) {
	hosts = cfg.BrowserHostList()
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Host != "" {
		hosts = append(hosts, u.Host)
		secure = u.Scheme == "https"
	}
	return hosts, secure
}
