package doctor

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// More of what providers' checks share: lists for details, headers, and facts about the
// machine the checks run on.

// FirstFew joins up to n items: "a, b, c and 4 more".
func FirstFew(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// Bearer is the Authorization header carrying key; nil when there is no key.
func Bearer(key string) map[string]string {
	if key == "" {
		return nil
	}
	return map[string]string{"Authorization": "Bearer " + key}
}

// IsLoopback reports whether rawURL points at this machine.
func IsLoopback(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return false
	}
	return IsLoopbackHost(u.Hostname()) || u.Hostname() == "0.0.0.0"
}

// IsLoopbackHost reports whether host names this machine: localhost or a loopback address.
func IsLoopbackHost(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// LookPath finds an executable in the PATH of environ (the command's, not the process's).
func LookPath(environ []string, name string) string {
	path := ""
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == "PATH" {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// FirstLine is the first non-empty line of out, at most 160 characters, for details.
func FirstLine(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 160 {
				l = l[:160] + "…"
			}
			return strings.ToValidUTF8(l, "?")
		}
	}
	return ""
}
