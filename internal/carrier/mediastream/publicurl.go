package mediastream

import (
	"net/http"
	"net/netip"
	"strings"
)

// PublicURL is the URL the carrier used for r (what its signature covers): publicURL plus
// r's path and query, or, when publicURL is empty, r's own scheme and Host, which
// X-Forwarded-Proto and X-Forwarded-Host replace only when r's peer is one of
// trustedProxies (anyone else could name a host whose signature they hold). ws turns
// http(s) into ws(s).
func PublicURL(r *http.Request, publicURL string, trustedProxies []netip.Prefix, ws bool) string {
	base := strings.TrimSuffix(publicURL, "/")
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		host := r.Host
		if fromTrustedProxy(r, trustedProxies) {
			if p := firstValue(r.Header.Get("X-Forwarded-Proto")); p == "http" || p == "https" {
				scheme = p
			}
			if h := firstValue(r.Header.Get("X-Forwarded-Host")); h != "" {
				host = h
			}
		}
		base = scheme + "://" + host
	}
	if ws {
		base = strings.Replace(strings.Replace(base, "https://", "wss://", 1), "http://", "ws://", 1)
	}
	return base + r.URL.RequestURI()
}

// fromTrustedProxy reports whether r's peer is one of trusted.
func fromTrustedProxy(r *http.Request, trusted []netip.Prefix) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a := ap.Addr().Unmap()
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// firstValue is the first of a header's comma-separated values (the client's, in a chain
// of proxies), trimmed and lower-case.
func firstValue(v string) string {
	first, _, _ := strings.Cut(v, ",")
	return strings.ToLower(strings.TrimSpace(first))
}
