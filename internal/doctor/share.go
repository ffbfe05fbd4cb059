package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// More of what providers' checks share: one probe read by several checks, the model lists
// OpenAI-style servers answer with, and facts about the machine the checks run on.

// Once computes a value once, for checks that share one probe. The zero value is ready.
type Once[T any] struct {
	init sync.Once
	sem  chan struct{} // size 1: one computation at a time
	done bool
	v    T
	err  error
}

// Get returns the value, computing it with f the first time. A caller waiting for another
// one's computation gives up when its own ctx ends.
func (o *Once[T]) Get(ctx context.Context, f func(context.Context) (T, error)) (T, error) {
	o.init.Do(func() { o.sem = make(chan struct{}, 1) })
	select {
	case o.sem <- struct{}{}:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	defer func() { <-o.sem }()
	if !o.done {
		o.v, o.err = f(ctx)
		o.done = true
	}
	return o.v, o.err
}

// ModelList reads an OpenAI-style model list ({"data":[{"id"}]}).
func ModelList(body []byte) ([]string, bool) {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil || list.Data == nil {
		return nil, false
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids, true
}

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
