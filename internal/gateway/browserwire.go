package gateway

import (
	"log/slog"
	"net"
	"net/url"

	"github.com/handset-voice/handset/internal/browser"
	"github.com/handset-voice/handset/internal/config"
)

// browserRate is the browser page's per-address limit on new calls; tests shorten it.
var browserRate = browser.DefaultRate

// registerBrowser serves the browser call page, guarded as its settings say.
func (s *server) registerBrowser() {
	hosts, secure := pageHosts(s.cfg)
	browser.New(browser.Options{
		Admit: s.admit, Logger: s.log,
		Listen: s.cfg.Listen, Hosts: hosts,
		Token: s.cfg.BrowserToken.Reveal(), SecureCookie: secure,
		MaxCalls: s.cfg.BrowserCallCap(), Rate: browserRate, TrustedProxies: s.proxies,
	}).Register(s.mux)
}

// warnBrowserExposed says, at start, when the browser page can be reached from other
// machines: off loopback (where Validate has made sure a token is set), or through a public
// URL without a token.
func warnBrowserExposed(log *slog.Logger, cfg *config.Config) {
	if !cfg.Browser {
		return
	}
	if !config.LoopbackListen(cfg.Listen) {
		log.Warn("the browser call page is reachable from other machines: only browsers that opened its access link (/?token=<HANDSET_BROWSER_TOKEN>) can call, and browsers give the microphone only to localhost or HTTPS pages",
			"listen", cfg.Listen)
		return
	}
	u, err := url.Parse(cfg.PublicURL)
	if cfg.PublicURL != "" && err == nil && !cfg.BrowserToken.IsSet() && !config.LoopbackListen(net.JoinHostPort(u.Hostname(), "0")) {
		log.Warn("the browser call page has no access token, and HANDSET_PUBLIC_URL names it publicly: if your proxy forwards / and /browser/ws, anyone can talk to your agent",
			"public_url", cfg.PublicURL, "fix", "set HANDSET_BROWSER_TOKEN, or keep the proxy from forwarding the page")
	}
}
