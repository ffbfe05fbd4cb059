package config

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// minBrowserToken is the shortest HANDSET_BROWSER_TOKEN accepted: 16 characters of the
// URL-safe alphabet are at least 96 bits, beyond guessing over the network.
const minBrowserToken = 16

// LoopbackListen reports whether a listen address (host:port) accepts connections only
// from this machine: a loopback IP or the name localhost. An empty host, 0.0.0.0, ::, a
// LAN address and any other name reach beyond it.
func LoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// BrowserHostList is HANDSET_BROWSER_HOSTS split into its entries (name or name:port),
// blanks dropped.
func (c *Config) BrowserHostList() []string {
	var out []string
	for _, h := range strings.Split(c.BrowserHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// BrowserCallCap is how many browser calls may run at once: HANDSET_BROWSER_MAX_CALLS, or
// when it was left at its default, that default or HANDSET_MAX_CALLS if lower (Validate
// refuses an explicit value above HANDSET_MAX_CALLS).
func (c *Config) BrowserCallCap() int {
	if c.info.origin("HANDSET_BROWSER_MAX_CALLS").Kind == FromDefault {
		return min(c.BrowserMaxCalls, c.MaxCalls)
	}
	return c.BrowserMaxCalls
}

type envReason struct{ env, reason string }

// browserChecks are the rules between the browser page's settings and the others.
func (c *Config) browserChecks() []envReason {
	if !c.Browser {
		return nil
	}
	var out []envReason
	if !LoopbackListen(c.Listen) && !c.BrowserToken.IsSet() {
		out = append(out, envReason{"HANDSET_BROWSER_TOKEN", "is required with HANDSET_BROWSER=true when HANDSET_LISTEN (" + c.Listen +
			") reaches beyond this machine, or anyone who can reach it can talk to your agent: set it to a random secret (openssl rand -hex 16) and open the page once as /?token=<secret>, or listen on 127.0.0.1"})
	}
	if c.info.origin("HANDSET_BROWSER_MAX_CALLS").Kind != FromDefault && c.BrowserMaxCalls > c.MaxCalls && c.MaxCalls > 0 {
		out = append(out, envReason{"HANDSET_BROWSER_MAX_CALLS", "is " + strconv.Itoa(c.BrowserMaxCalls) +
			", more than HANDSET_MAX_CALLS (" + strconv.Itoa(c.MaxCalls) + "): browser calls may take at most every call this node handles"})
	}
	return out
}

// checkBrowserToken: long enough, and only characters a URL carries as they are, so the
// link /?token=<secret> works without escaping.
func checkBrowserToken(v string) string {
	for _, r := range v {
		if !urlSafe(r) {
			return "must be letters, digits, -, ., _ or ~ only, so it fits in a link unescaped (openssl rand -hex 16 makes one)"
		}
	}
	if len(v) < minBrowserToken {
		return "is shorter than " + strconv.Itoa(minBrowserToken) + " characters: use a random secret (openssl rand -hex 16 makes one)"
	}
	return ""
}

func urlSafe(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-._~", r)
}

// checkBrowserHosts checks each entry of HANDSET_BROWSER_HOSTS is a host name or IP, with
// an optional port, and nothing else.
func checkBrowserHosts(v string) string {
	entries := strings.Split(v, ",")
	for _, h := range entries {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if reason := checkHostEntry(h); reason != "" {
			if len(entries) > 1 {
				return "has an entry " + strconv.Quote(h) + " that " + reason
			}
			return reason
		}
	}
	return ""
}

func checkHostEntry(h string) string {
	const form = "is not a host name with an optional port, like voice.lan, voice.lan:8080 or [fd00::1]:8080"
	if strings.Contains(h, "://") || strings.ContainsAny(h, "/?#@") {
		return "must be a host name only, without a scheme, a path or a user: " + form
	}
	if strings.Contains(h, "*") {
		return "has a wildcard: list each host name the page is reached by"
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Zone() == "" {
		return "" // an IP address without a port (IPv6 may go without brackets then)
	}
	name, port, hasPort := h, "", false
	if strings.HasPrefix(h, "[") {
		end := strings.Index(h, "]")
		if end < 0 {
			return form
		}
		if ip, err := netip.ParseAddr(h[1:end]); err != nil || !ip.Is6() || ip.Zone() != "" {
			return "has brackets around something that is not an IPv6 address: " + form
		}
		rest := h[end+1:]
		if rest != "" && rest[0] != ':' {
			return form
		}
		name, port, hasPort = "", strings.TrimPrefix(rest, ":"), rest != ""
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 {
		name, port, hasPort = h[:i], h[i+1:], true
	}
	if strings.Contains(name, ":") {
		return form
	}
	if hasPort {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "has a bad port " + strconv.Quote(port) + ": use a number from 1 to 65535"
		}
	}
	if name != "" && !validHostName(strings.TrimSuffix(name, ".")) {
		return form
	}
	return ""
}

// validHostName: dot-separated labels of letters, digits, - and _, none empty, at most 253
// characters.
func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}
