package mediastream

import (
	"net/http"
	"net/netip"
)

// PublicURL is the URL the carrier used for r (what its signature covers): publicURL plus
// r's path and query, or, when publicURL is empty, r's own scheme and Host, which
// X-Forwarded-Proto and X-Forwarded-Host replace only when r's peer is one of
// trustedProxies. ws turns http(s) into ws(s).
func PublicURL(r *http.Request, publicURL string, trustedProxies []netip.Prefix, ws bool) string {
	panic("not yet")
}
