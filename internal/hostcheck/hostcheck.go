// Package hostcheck decides which Host names Handset's browser-facing pages (the call page,
// the dashboard) answer to. A web page on another site can make a visitor's browser send
// requests to Handset on localhost by pointing its own name at 127.0.0.1 (DNS rebinding):
// the browser then thinks the page and Handset are one origin. Such requests carry that
// site's name in Host, so the pages answer only to the names Handset is really reached by.
package hostcheck

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// HostPort is a host name as matched: lower case, without a trailing dot or brackets, an
// IP in its canonical form; Port is "" when none was written.
type HostPort struct{ Name, Port string }

// Parse reads a Host header or a configured entry: name, name:port, [v6], [v6]:port, or a
// bare IP.
func Parse(h string) (HostPort, bool) {
	if ip, err := netip.ParseAddr(h); err == nil {
		return HostPort{Name: canonIP(ip)}, ip.Zone() == ""
	}
	name, port := h, ""
	if strings.HasPrefix(h, "[") {
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return HostPort{}, false
		}
		name, port = h[1:end], h[end+1:]
		if port != "" && port[0] != ':' {
			return HostPort{}, false
		}
		port = strings.TrimPrefix(port, ":")
		ip, err := netip.ParseAddr(name)
		if err != nil || !ip.Is6() || ip.Zone() != "" || (port == "" && strings.HasSuffix(h, ":")) {
			return HostPort{}, false
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		name, port = h[:i], h[i+1:]
		if port == "" {
			return HostPort{}, false
		}
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return HostPort{}, false
		}
		port = strconv.Itoa(n) // "08080" and "8080" are one port
	}
	if ip, err := netip.ParseAddr(name); err == nil {
		return HostPort{Name: canonIP(ip), Port: port}, ip.Zone() == ""
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if name == "" || strings.ContainsAny(name, ":/@[] ") {
		return HostPort{}, false
	}
	return HostPort{Name: name, Port: port}, true
}

func canonIP(ip netip.Addr) string { return ip.Unmap().WithZone("").String() }

// loopbackNames are what a browser on this machine calls a loopback listener.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// Hosts decides which Host names a page answers to.
type Hosts struct {
	named  []HostPort // the public URL's host and configured names: any port unless one is given
	listen string     // the listen address's host when it is a name (not an IP), lower case
}

// New builds the Hosts for a listen address (HANDSET_LISTEN) and further names ("name" for
// any port, "name:port"); it also returns the entries that are not host names.
func New(listen string, extra []string) (Hosts, []string) {
	var h Hosts
	var bad []string
	if name, _, err := net.SplitHostPort(listen); err == nil {
		if _, err := netip.ParseAddr(name); err != nil && name != "" {
			h.listen = strings.ToLower(strings.TrimSuffix(name, "."))
		}
	}
	for _, e := range extra {
		hp, ok := Parse(strings.TrimSpace(e))
		if !ok {
			bad = append(bad, e)
			continue
		}
		h.named = append(h.named, hp)
	}
	return h, bad
}

// Allowed reports whether a request for host h, arriving on local (the address the
// connection reached; invalid when unknown), is for this page.
func (hs Hosts) Allowed(h HostPort, local netip.AddrPort) bool {
	for _, n := range hs.named {
		if n.Name == h.Name && (n.Port == "" || n.Port == h.Port || h.Port == "" && (n.Port == "80" || n.Port == "443")) {
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
	if h.Port != port && !(h.Port == "" && port == "80") {
		return false
	}
	if h.Name == canonIP(local.Addr()) || h.Name == hs.listen {
		return true
	}
	if local.Addr().Unmap().IsLoopback() {
		for _, n := range loopbackNames {
			if h.Name == n {
				return true
			}
		}
	}
	return false
}

// LocalAddr is the address the request's connection arrived on.
func LocalAddr(r *http.Request) netip.AddrPort {
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

// Request is r's Host, parsed, and whether it is one the page answers to.
func (hs Hosts) Request(r *http.Request) (HostPort, bool) {
	h, ok := Parse(r.Host)
	return h, ok && hs.Allowed(h, LocalAddr(r))
}

// SameOrigin reports whether origin (an Origin header, or a Referer reduced to its scheme
// and host) names the page r asks for: the request's Host, with the same port (a missing
// port is the scheme's default), and a host the page answers to.
func (hs Hosts) SameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if origin == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
		return false
	}
	o, ok := Parse(u.Host)
	if !ok {
		return false
	}
	if o.Port == "" {
		o.Port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	h, ok := hs.Request(r)
	if !ok || o.Name != h.Name || (h.Port != "" && h.Port != o.Port) || (h.Port == "" && o.Port != "80" && o.Port != "443") {
		return false
	}
	return hs.Allowed(o, LocalAddr(r))
}
